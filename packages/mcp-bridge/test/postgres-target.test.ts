// Where `pg` connects, and so whether the PostgreSQL stores use TLS, for a table of URLs: the
// decision must follow the host `pg` actually dials (a `?host=` parameter, PGHOST, a socket), not
// the URL's authority. Each accepted row is checked against pg's own reading of the URL
// (ConnectionParameters). No traffic leaves 127.0.0.1: the end-to-end rows connect to a loopback
// listener that records whether the first bytes are an SSLRequest.
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { type AddressInfo, createServer, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { PostgresPinStore } from '../src/gateway/postgres-pin-store.js';
import { PostgresConnectionStore } from '../src/store/postgres-connection-store.js';
import {
  isPostgresTargetProblem,
  type PostgresTarget,
  postgresConnectionConfig,
  postgresTargetOf,
  postgresTlsModeOf,
} from '../src/store/postgres-target.js';

const require = createRequire(import.meta.url);
const ConnectionParameters = require('pg/lib/connection-parameters') as new (
  config: unknown,
) => { host: string; port: number; user: string; database: string; password: string | null };

/** Runs `body` with `PGHOST`/`PGPORT` set as given (pg reads process.env). */
function withEnv<T>(env: Record<string, string>, body: () => T): T {
  const saved = { PGHOST: process.env.PGHOST, PGPORT: process.env.PGPORT };
  delete process.env.PGHOST;
  delete process.env.PGPORT;
  Object.assign(process.env, env);
  try {
    return body();
  } finally {
    for (const [name, value] of Object.entries(saved)) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  }
}

describe('postgresTargetOf: the TLS default follows the host pg dials', () => {
  // [name, URL, environment, host pg dials, port, TLS by default]
  it.each([
    ['loopback IPv4', 'postgres://u:pw@127.0.0.1/db', {}, '127.0.0.1', 5432, 'disable'],
    ['loopback 127/8', 'postgres://u:pw@127.8.9.10:6000/db', {}, '127.8.9.10', 6000, 'disable'],
    ['localhost', 'postgres://u:pw@localhost/db', {}, 'localhost', 5432, 'disable'],
    ['[::1]', 'postgres://u:pw@[::1]:5433/db', {}, '::1', 5433, 'disable'],
    ['a remote name', 'postgres://u:pw@db.example/db', {}, 'db.example', 5432, 'verify-full'],
    ['a remote address', 'postgres://u:pw@10.9.9.9/db', {}, '10.9.9.9', 5432, 'verify-full'],
    [
      'loopback URL host, ?host= remote (the reported leak)',
      'postgres://u:pw@127.0.0.1/db?host=10.9.9.9',
      {},
      '10.9.9.9',
      5432,
      'verify-full',
    ],
    [
      'localhost URL host, ?host= a remote name',
      'postgresql://u:pw@localhost:5432/db?host=db.example&port=6543',
      {},
      'db.example',
      6543,
      'verify-full',
    ],
    [
      'remote URL host, ?host= loopback',
      'postgres://u:pw@10.9.9.9/db?host=127.0.0.1',
      {},
      '127.0.0.1',
      5432,
      'disable',
    ],
    [
      'remote URL host, ?host= a Unix socket',
      'postgres://u:pw@10.9.9.9/db?host=/var/run/postgresql',
      {},
      '/var/run/postgresql',
      5432,
      'disable',
    ],
    [
      'a percent-encoded socket folder as the host',
      'postgres://u:pw@%2Fvar%2Frun%2Fpostgresql/db',
      {},
      '/var/run/postgresql',
      5432,
      'disable',
    ],
    [
      'a percent-encoded remote address as the host',
      'postgres://u:pw@%31%30.9.9.9/db',
      {},
      '10.9.9.9',
      5432,
      'verify-full',
    ],
    [
      'no host, PGHOST remote',
      'postgres:///db',
      { PGHOST: '10.9.9.9' },
      '10.9.9.9',
      5432,
      'verify-full',
    ],
    ['no host, PGHOST a socket', 'postgres:///db', { PGHOST: '/tmp' }, '/tmp', 5432, 'disable'],
    ['no host, no PGHOST', 'postgres:///db', {}, 'localhost', 5432, 'disable'],
    [
      'credentials without a host, ?host= remote',
      'postgres://u:pw@/db?host=10.9.9.9',
      {},
      '10.9.9.9',
      5432,
      'verify-full',
    ],
    ['PGPORT', 'postgres://u:pw@127.0.0.1/db', { PGPORT: '6000' }, '127.0.0.1', 6000, 'disable'],
    [
      '127.1 (resolves to loopback, but is no literal loopback address)',
      'postgres://u:pw@127.0.0.1/db?host=127.1',
      {},
      '127.1',
      5432,
      'verify-full',
    ],
    [
      'IPv4-mapped loopback',
      'postgres://u:pw@[::ffff:127.0.0.1]/db',
      {},
      '::ffff:7f00:1',
      5432,
      'verify-full',
    ],
    [
      'a name that starts like loopback',
      'postgres://u:pw@127.0.0.1.evil.example/db',
      {},
      '127.0.0.1.evil.example',
      5432,
      'verify-full',
    ],
  ])('%s', (_name, url, env, host, port, tls) => {
    const target = postgresTargetOf(url, env) as PostgresTarget;
    expect(isPostgresTargetProblem(target)).toBe(false);
    expect({ host: target.host, port: target.port }).toEqual({ host, port });
    expect(postgresTlsModeOf(target, undefined)).toBe(tls);
    // pg's own reading of the same URL and environment dials the same host and port.
    const pg = withEnv(env, () => new ConnectionParameters({ connectionString: url }));
    expect({ host: pg.host, port: pg.port }).toEqual({ host, port });
    // What the stores hand pg: these fields and the TLS, never the URL.
    const config = postgresConnectionConfig(
      target,
      postgresTlsModeOf(target, undefined),
      undefined,
    );
    expect(config).not.toHaveProperty('connectionString');
    const handed = withEnv({}, () => new ConnectionParameters(config));
    expect({ host: handed.host, port: handed.port }).toEqual({ host, port });
    expect(config.ssl).toEqual(tls === 'disable' ? false : { rejectUnauthorized: true });
  });

  it('keeps the user, password and database pg would use', () => {
    const url = 'postgres://al%40ice:p%3Aw@127.0.0.1:5433/my%20db?application_name=x';
    const target = postgresTargetOf(url, {}) as PostgresTarget;
    const pg = new ConnectionParameters({ connectionString: url });
    expect([target.user, target.password, target.database]).toEqual([
      pg.user,
      pg.password,
      pg.database,
    ]);
    expect(target.parameters).toEqual({ application_name: 'x' });
  });

  it('an explicit sslMode wins over the default', () => {
    const target = postgresTargetOf('postgres://u@10.9.9.9/db', {}) as PostgresTarget;
    expect(postgresTlsModeOf(target, 'require')).toBe('require');
    expect(postgresConnectionConfig(target, 'require', 'PEM').ssl).toEqual({
      rejectUnauthorized: false,
      ca: 'PEM',
    });
  });

  it.each<[string, string, string, Record<string, string>?]>([
    ['another scheme', 'mysql://u@127.0.0.1/db', 'connectionString'],
    ['sslmode', 'postgres://u@127.0.0.1/db?sslmode=disable', 'sslmode'],
    ['ssl=0', 'postgres://u@127.0.0.1/db?ssl=0', 'ssl'],
    ['sslnegotiation', 'postgres://u@127.0.0.1/db?sslnegotiation=direct', 'sslnegotiation'],
    ['hostaddr', 'postgres://u@127.0.0.1/db?hostaddr=10.9.9.9', 'hostaddr'],
    ['a host list', 'postgres://u@127.0.0.1/db?host=127.0.0.1,10.9.9.9', 'host'],
    ['a host list in PGHOST', 'postgres:///db', 'host', { PGHOST: '/tmp,10.9.9.9' }],
    ['an unknown parameter', 'postgres://u@127.0.0.1/db?stream=x', 'stream'],
    ['a port that is not a number', 'postgres://u@127.0.0.1/db?port=5432x', 'port'],
    ['port 0', 'postgres://u@127.0.0.1/db?port=0', 'port'],
  ])('refuses %s', (_name, url, parameter, env = {}) => {
    const problem = postgresTargetOf(url, env);
    expect(isPostgresTargetProblem(problem)).toBe(true);
    expect(problem).toMatchObject({ parameter });
    expect(JSON.stringify(problem)).not.toContain('10.9.9.9');
  });
});

/** A loopback listener that records the first 8 bytes of each connection and answers 'N'. */
async function recorder(): Promise<{
  port: number;
  first: () => Promise<Buffer>;
  close: () => Promise<void>;
}> {
  const sockets = new Set<Socket>();
  let resolveFirst: (bytes: Buffer) => void = () => undefined;
  const first = new Promise<Buffer>((resolve) => {
    resolveFirst = resolve;
  });
  const server = createServer((socket) => {
    sockets.add(socket);
    let buffered = Buffer.alloc(0);
    socket.on('error', () => undefined);
    socket.on('data', (chunk) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length >= 8) {
        resolveFirst(buffered.subarray(0, 8));
        // "No TLS here": a client that needs TLS gives up; nothing else is read.
        socket.end('N');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    first: () => first,
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** PostgreSQL's SSLRequest: length 8, code 80877103. */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

describe('the stores ask for TLS before anything else when pg dials a non-loopback name', () => {
  const closers: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  // `127.1` reaches the loopback listener but is no literal loopback address: it stands for a
  // remote host without sending anything off this machine.
  const url = (port: number): string => `postgres://u:hunter2@127.0.0.1:${port}/db?host=127.1`;

  it.each([
    [
      'PostgresConnectionStore',
      (port: number) =>
        PostgresConnectionStore.open({
          connectionString: url(port),
          key: randomBytes(32),
          connectTimeoutMs: 5_000,
        }),
    ],
    [
      'PostgresPinStore',
      (port: number) =>
        PostgresPinStore.open({ connectionString: url(port), connectTimeoutMs: 5_000 }),
    ],
  ])('%s: the first bytes are an SSLRequest, and the open fails', async (_name, open) => {
    const listener = await recorder();
    closers.push(listener.close);
    const outcome = await open(listener.port).then(
      async (store) => {
        await store.close();
        return 'opened';
      },
      (error: unknown) => error,
    );
    expect(await listener.first()).toEqual(SSL_REQUEST);
    expect(outcome).not.toBe('opened');
    expect(JSON.stringify(outcome)).not.toContain('hunter2');
  });
});
