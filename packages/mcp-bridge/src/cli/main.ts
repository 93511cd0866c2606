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

void runCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
  stdio: { stdin: process.stdin, stdout: process.stdout },
  reloads: (listener) => {
    process.on('SIGHUP', listener);
    return () => process.off('SIGHUP', listener);
  },
  stopped,
}).then((code) => {
  process.exitCode = code;
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
});
