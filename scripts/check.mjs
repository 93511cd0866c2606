#!/usr/bin/env node
// `pnpm check`: the README's test command. First the system programs the tests run (installed
// with apt-get where the machine allows it, else one line naming what to install, and nothing
// runs); then every step, each one even when an earlier one failed; then one table of the steps
// (pass/fail, time) and the test totals. Exits 1 if any step failed. The last line is the plain
// `tests: N passed, N failed` line CI reads.
//
// `pnpm check NAME...` runs only the named steps. With TOOLFENCE_CHECK_SCOPE=clone (set by the
// newcomer step for the check it runs in a fresh clone of HEAD, scripts/newcomer.mjs), only the
// steps that can differ between this working tree and a clone run: the outside-path check, the
// build, and the test files that depend on repository-local test support (CLONE_TESTS).
//
// Those clone test files run once per check, not twice: when the newcomer step's clone ran them
// on the very commit this working tree holds, and the tree is clean (`git status --porcelain`
// empty, so tracked and untracked files alike are byte for byte the clone's, HEAD unchanged
// before that step and at the tests step), the tests step leaves them out here and counts the
// clone's results instead (cloneRun below). Otherwise, a dirty tree, another HEAD, no newcomer
// step, or no result from the clone, they run here as well.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { ensureSystemPrograms } from './system-programs.mjs';

const pnpm = ['npx', '-y', 'pnpm@12.4.2'];
const summaryFile = join(tmpdir(), `toolfence-vitest-${process.pid}.json`);
/** Where the newcomer step's clone writes the results of its CLONE_TESTS run (see cloneRun). */
const cloneResultFile = join(tmpdir(), `toolfence-clone-tests-${process.pid}.json`);

/**
 * The test files a check in a clone runs: those that start servers or suites through the
 * repository's own test support (once they used files beside the repository), and the tests of
 * the outside-path check. Everything else in a clone is byte for byte what the outer check tested.
 */
const CLONE_TESTS = Object.freeze([
  'packages/mcp-bridge/test/conformance.test.ts',
  'packages/mcp-bridge/test/conformance-alpha.test.ts',
  'packages/mcp-bridge/test/http-everything.test.ts',
  'packages/mcp-bridge/test/shared-signal.test.ts',
  'packages/mcp-bridge/test/protocol-negotiation.test.ts',
  'packages/mcp-bridge/test/test-support.test.ts',
  'scripts/test/check-outside-paths.test.mjs',
]);

const vitest = [
  ...pnpm,
  'exec',
  'vitest',
  'run',
  '--reporter=default',
  '--reporter=json',
  `--outputFile.json=${summaryFile}`,
];

/** Every step: name, command, and whether a check in a clone runs it (and how). */
const steps = [
  { name: 'lint', command: ['npx', 'biome', 'ci', '.'] },
  // Each generated WebAssembly module is what its text source compiles to.
  { name: 'wasm', command: ['node', 'scripts/build-wasm.mjs', '--check'] },
  // Nothing reads or imports a path outside the repository (a clone has only what is committed).
  { name: 'outside paths', command: ['node', 'scripts/check-outside-paths.mjs'], clone: true },
  { name: 'build', command: [...pnpm, 'exec', 'turbo', 'run', 'build'], clone: true },
  { name: 'typecheck', command: [...pnpm, 'exec', 'turbo', 'run', 'typecheck'] },
  { name: 'dependency rules', command: ['node', 'scripts/check-dependencies.mjs'] },
  { name: 'room rules', command: ['node', 'scripts/check-rooms.mjs'] },
  { name: 'error codes', command: ['node', 'scripts/check-error-codes.mjs'] },
  // publint, attw, the LICENSE in every tarball, smoke consumers (scripts/check-packages.mjs).
  { name: 'package checks', command: ['node', 'scripts/check-packages.mjs'] },
  // Publishes to a local registry on 127.0.0.1 and installs from it (VERSIONING.md).
  { name: 'release rehearsal', command: ['node', 'scripts/check-release.mjs'] },
  // Clones HEAD into an empty temporary folder (nothing beside it), runs the README's install
  // command offline and its test command (the clone scope above), builds, and runs one
  // package's README example from its tarball alone in a fresh project (scripts/newcomer.mjs).
  { name: 'newcomer', command: ['node', 'scripts/newcomer.mjs'] },
  // API reference: fails on any undocumented export or member (warnings are errors).
  { name: 'api docs', command: ['npx', 'typedoc', '--logLevel', 'Warn'] },
  // Every benchmark runs a few rounds and must print its ratios (no timing is asserted).
  {
    name: 'bench quick',
    command: ['node', 'scripts/bench.mjs', '--quick', '--no-build'],
    system: true,
  },
  {
    name: 'tests',
    command: vitest,
    clone: [...vitest, ...CLONE_TESTS],
    system: true,
  },
];

// biome-ignore lint/suspicious/noUndeclaredEnvVars: set by scripts/newcomer.mjs for the check in its clone; no turbo task reads it
const inClone = process.env.TOOLFENCE_CHECK_SCOPE === 'clone';
const only = process.argv.slice(2);
const unknown = only.filter((name) => !steps.some((step) => step.name === name));
if (unknown.length > 0) {
  console.error(
    `check: no step ${unknown.join(', ')} (steps: ${steps.map((s) => s.name).join(', ')})`,
  );
  process.exit(2);
}
const chosen = steps
  .filter((step) => only.length === 0 || only.includes(step.name))
  .filter((step) => !inClone || step.clone)
  .map((step) => ({
    ...step,
    command: inClone && Array.isArray(step.clone) ? step.clone : step.command,
  }));

// The system programs, before any step: installed where the machine allows it, else one line.
if (chosen.some((step) => step.system)) {
  const programs = ensureSystemPrograms();
  if (!programs.ok) {
    console.error(programs.line);
    process.exit(1);
  }
}

/** HEAD and whether the working tree is clean (nothing modified, staged or untracked). */
function treeState() {
  try {
    const git = (args) => execFileSync('git', args, { encoding: 'utf8', stdio: 'pipe' }).trim();
    return { head: git(['rev-parse', 'HEAD']), clean: git(['status', '--porcelain']) === '' };
  } catch {
    return { head: undefined, clean: false };
  }
}

/**
 * The clone's CLONE_TESTS results, when they stand for this working tree: the newcomer step's
 * clone ran them on this HEAD, and the tree was clean before that step and is clean now (the
 * clone is then byte for byte this tree, this script and its CLONE_TESTS included, apart from
 * what git ignores: installs and builds, which the clone made itself). `undefined` otherwise:
 * the files run here too.
 */
function cloneRun(before) {
  if (!existsSync(cloneResultFile)) return undefined;
  const clone = JSON.parse(readFileSync(cloneResultFile, 'utf8'));
  rmSync(cloneResultFile, { force: true });
  const now = treeState();
  const same =
    before?.clean === true &&
    now.clean &&
    before.head === now.head &&
    clone.head === now.head &&
    clone.missing !== true &&
    Number.isInteger(clone.passed) &&
    Number.isInteger(clone.failed);
  return same ? clone : undefined;
}

const results = [];
let totals;
/** The tree before the newcomer step ran (see cloneRun). */
let beforeNewcomer;
/** The clone's results that replace this check's run of CLONE_TESTS. */
let cloned;
if (inClone && chosen.some((step) => step.name === 'tests')) {
  // vitest runs the filters that match and says nothing of one that matches no file.
  const absent = CLONE_TESTS.filter((file) => !existsSync(file));
  if (absent.length > 0) {
    console.error(`check: the clone's test files are gone: ${absent.join(', ')} (CLONE_TESTS)`);
    results.push({ name: 'clone tests listed', ok: false, status: 1, seconds: 0 });
  }
}
for (const step of chosen) {
  const { name } = step;
  let { command } = step;
  let env = process.env;
  if (name === 'newcomer') {
    beforeNewcomer = treeState();
    rmSync(cloneResultFile, { force: true });
    env = { ...process.env, TOOLFENCE_CLONE_RESULT: cloneResultFile };
  }
  if (name === 'tests' && !inClone) {
    cloned = cloneRun(beforeNewcomer);
    if (cloned !== undefined) {
      console.log(
        `\n== tests: the ${CLONE_TESTS.length} clone test files ran in the newcomer's clone of this commit (${cloned.passed} passed, ${cloned.failed} failed); the tree is clean, so they are not run again here`,
      );
      command = [...command, ...CLONE_TESTS.flatMap((file) => ['--exclude', resolve(file)])];
    }
  }
  console.log(`\n== ${name}: ${command.join(' ')}`);
  const started = process.hrtime.bigint();
  const result = spawnSync(command[0], command.slice(1), { stdio: 'inherit', env });
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  const status = result.status ?? result.signal ?? result.error?.code;
  if (name === 'tests') {
    if (existsSync(summaryFile)) {
      const report = JSON.parse(readFileSync(summaryFile, 'utf8'));
      rmSync(summaryFile, { force: true });
      totals = {
        passed: report.numPassedTests + (cloned?.passed ?? 0),
        failed: report.numFailedTests + (cloned?.failed ?? 0),
        skipped: report.numPendingTests + report.numTodoTests + (cloned?.skipped ?? 0),
      };
    } else {
      totals = { passed: 0, failed: 0, skipped: 0, missing: true };
    }
    // biome-ignore lint/suspicious/noUndeclaredEnvVars: set by this script for the newcomer step, whose clone's check writes it; no turbo task reads it
    const resultFile = process.env.TOOLFENCE_CLONE_RESULT;
    if (inClone && resultFile) {
      // For the check that runs the newcomer step: what ran here, on which commit (cloneRun).
      writeFileSync(resultFile, JSON.stringify({ head: treeState().head, ...totals }));
    }
  }
  results.push({ name, ok: result.status === 0, status, seconds });
  if (result.status !== 0) console.error(`\n== ${name} failed (exit ${status})`);
}

// One table of every step, then the test totals (the last line, which CI reads).
const width = Math.max(...results.map((r) => r.name.length), 'step'.length);
const total = results.reduce((sum, r) => sum + r.seconds, 0);
const failed = results.filter((r) => !r.ok);
console.log(`\n== summary${inClone ? ' (clone scope)' : ''}`);
console.log(`${'step'.padEnd(width)}  result  time`);
for (const r of results) {
  const note = r.ok ? '' : `  (exit ${r.status})`;
  console.log(
    `${r.name.padEnd(width)}  ${(r.ok ? 'pass' : 'FAIL').padEnd(6)}  ${r.seconds.toFixed(1).padStart(6)} s${note}`,
  );
}
console.log(
  `${'all'.padEnd(width)}  ${(failed.length === 0 ? 'pass' : 'FAIL').padEnd(6)}  ${total.toFixed(1).padStart(6)} s  (${results.length - failed.length} of ${results.length} steps passed)`,
);
if (totals) {
  const skipped = totals.skipped ? `, ${totals.skipped} skipped` : '';
  const missing = totals.missing ? ' (vitest wrote no summary)' : '';
  console.log(`\ntests: ${totals.passed} passed, ${totals.failed} failed${skipped}${missing}`);
}
process.exit(failed.length === 0 ? 0 : 1);
