// A `node --import` preload for servers started by the tests: `server.listen(port)` and
// `server.listen(port, callback)`, which Node binds on every interface, bind 127.0.0.1 instead.
// @modelcontextprotocol/server-everything's Streamable HTTP entry calls `app.listen(PORT)`; with
// this preload it listens on loopback only (tests never bind or reach any other address).
// A listen() that names a host, a path or an options object is left as it is.
import net from 'node:net';

const listen = net.Server.prototype.listen;

/** A port given alone: a number or a string of digits. */
function isBarePort(value) {
  return typeof value === 'number' || (typeof value === 'string' && /^\d+$/.test(value));
}

net.Server.prototype.listen = function listenOnLoopback(...args) {
  if (isBarePort(args[0]) && (args.length === 1 || typeof args[1] === 'function')) {
    args.splice(1, 0, '127.0.0.1');
  }
  return listen.apply(this, args);
};
