#!/usr/bin/env node
// The `toolfence-mcp` command. All logic lives in run-cli.ts; this file only wires the process's
// streams, arguments, environment and working directory to it.
import { runCli } from './run-cli.js';

// A closed pipe (`toolfence-mcp inspect ... | head`) ends the output, not the process with a trace.
process.stdout.on('error', () => undefined);

// The first SIGINT or SIGTERM stops `serve` cleanly (upstreams ended, stores closed); once the
// command has returned, the listeners go, so a signal always has its default effect then.
let stop: () => void = () => undefined;
const stopped = new Promise<void>((resolve) => {
  stop = resolve;
});
const onSignal = (): void => stop();
process.once('SIGINT', onSignal);
process.once('SIGTERM', onSignal);

// `serve` takes SIGHUP as "reload" from its first moment: one that comes while it starts, before
// its reload listener exists, is kept and delivered once the listener subscribes, instead of
// ending the gateway (Node's default for SIGHUP with no listener). Other commands keep the default.
const serving = process.argv[2] === 'serve';
let reloadListener: (() => void) | undefined;
let reloadPending = false;
const onHangup = (): void => {
  if (reloadListener !== undefined) reloadListener();
  else reloadPending = true;
};
if (serving) process.on('SIGHUP', onHangup);

void runCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
  stdio: { stdin: process.stdin, stdout: process.stdout },
  reloads: (listener) => {
    if (!serving) {
      process.on('SIGHUP', listener);
      return () => process.off('SIGHUP', listener);
    }
    reloadListener = listener;
    if (reloadPending) {
      reloadPending = false;
      listener();
    }
    return () => {
      if (reloadListener === listener) reloadListener = undefined;
    };
  },
  stopped,
}).then((code) => {
  process.exitCode = code;
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  process.off('SIGHUP', onHangup);
});
