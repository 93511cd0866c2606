#!/usr/bin/env node
// The `toolfence-host-config` command. All logic lives in run-cli.ts; this file only wires the
// process's streams, arguments and environment to it.
import { homedir } from 'node:os';
import { runCli } from './run-cli.js';

const codexHome = process.env.CODEX_HOME;
process.exitCode = runCli(
  process.argv.slice(2),
  {
    out: (text) => process.stdout.write(text),
    err: (text) => process.stderr.write(text),
  },
  {
    home: homedir(),
    cwd: process.cwd(),
    ...(codexHome === undefined || codexHome === '' ? {} : { codexHome }),
  },
);
