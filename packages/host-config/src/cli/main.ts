#!/usr/bin/env node
// The `toolfence-host-config` command. All logic lives in run-cli.ts; this file only wires the
// process's streams, arguments and environment to it.
import { homedir } from 'node:os';
import { runCli } from './run-cli.js';

const codexHome = process.env.CODEX_HOME;
// os.homedir() throws for some broken values of HOME (one longer than the OS allows); the
// installer then gets HOME as it is and refuses it with a usage error, never a stack trace.
let home: string;
try {
  home = homedir();
} catch {
  home = process.env.HOME ?? '';
}
process.exitCode = runCli(
  process.argv.slice(2),
  {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
  },
  {
    home,
    cwd: process.cwd(),
    ...(codexHome === undefined || codexHome === '' ? {} : { codexHome }),
  },
);
