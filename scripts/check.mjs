#!/usr/bin/env node
// `pnpm check`: lint, typecheck, build, package checks, release rehearsal, then the tests.
// Stops at the first failing step; the tests run last so vitest's summary closes the output.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const pnpm = ['npx', '-y', 'pnpm@12.4.2'];
const summaryFile = join(tmpdir(), `toolfence-vitest-${process.pid}.json`);
const steps = [
  ['lint', ['npx', 'biome', 'ci', '.']],
  // Each generated WebAssembly module is what its text source compiles to.
  ['wasm', ['node', 'scripts/build-wasm.mjs', '--check']],
  ['build', [...pnpm, 'exec', 'turbo', 'run', 'build']],
  ['typecheck', [...pnpm, 'exec', 'turbo', 'run', 'typecheck']],
  ['dependency rules', ['node', 'scripts/check-dependencies.mjs']],
  ['room rules', ['node', 'scripts/check-rooms.mjs']],
  ['error codes', ['node', 'scripts/check-error-codes.mjs']],
  ['package checks', ['node', 'scripts/check-packages.mjs']],
  // Publishes to a local registry on 127.0.0.1 and installs from it (VERSIONING.md).
  ['release rehearsal', ['node', 'scripts/check-release.mjs']],
  // Clones HEAD, installs offline from the local store, builds, and runs one package's README
  // example from its tarball alone in a fresh project (scripts/newcomer.mjs).
  ['newcomer', ['node', 'scripts/newcomer.mjs']],
  // API reference: fails on any undocumented export or member (warnings are errors).
  ['api docs', ['npx', 'typedoc', '--logLevel', 'Warn']],
  // Every benchmark runs a few rounds and must print its ratios (no timing is asserted).
  ['bench quick', ['node', 'scripts/bench.mjs', '--quick', '--no-build']],
  [
    'tests',
    [
      ...pnpm,
      'exec',
      'vitest',
      'run',
      '--reporter=default',
      '--reporter=json',
      `--outputFile.json=${summaryFile}`,
    ],
  ],
];

const only = process.argv.slice(2);
for (const [name, command] of steps) {
  if (only.length > 0 && !only.includes(name)) continue;
  if (command[0] === 'node' && !existsSync(command[1])) continue;
  console.log(`\n== ${name}: ${command.join(' ')}`);
  const result = spawnSync(command[0], command.slice(1), { stdio: 'inherit' });
  if (name === 'tests' && existsSync(summaryFile)) {
    // vitest's summary is above; this plain line is the one CI reads.
    const report = JSON.parse(readFileSync(summaryFile, 'utf8'));
    rmSync(summaryFile, { force: true });
    const skipped = report.numPendingTests + report.numTodoTests;
    console.log(
      `\ntests: ${report.numPassedTests} passed, ${report.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`,
    );
  }
  if (result.status !== 0) {
    console.error(`\n== ${name} failed (exit ${result.status ?? result.signal})`);
    process.exit(result.status ?? 1);
  }
}
