#!/usr/bin/env node
// Runs the MCP conformance suite 0.2.0-alpha (installed as `conformance-alpha`, the suite for
// MCP 2026-07-28) with all arguments passed through, on Node 20 through the shared loader shim
// (../shared/conformance: the suite imports `globSync` from 'fs', which Node 20 lacks).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const cli = require
  .resolve('conformance-alpha/package.json')
  .replace(/package\.json$/, 'dist/index.js');
const major = Number(process.versions.node.split('.')[0]);
const shim = fileURLToPath(new URL('../../../../shared/conformance/register.mjs', import.meta.url));
const preload = major < 22 ? ['--import', shim] : [];
const result = spawnSync(process.execPath, [...preload, cli, ...process.argv.slice(2)], {
  stdio: 'inherit',
});
process.exit(result.status ?? 1);
