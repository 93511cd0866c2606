// scripts/check.mjs (`pnpm check`), run for real in a temporary folder whose scripts/ holds
// stand-ins for the steps' scripts, so that a step can fail at once.
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const CHECK = resolve(import.meta.dirname, '..', 'check.mjs');
const folders = [];

afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** A folder with scripts/<name>.mjs printing `<name> ran` and exiting with `codes[name]`. */
function project(codes) {
  const root = mkdtempSync(join(tmpdir(), 'toolfence-check-'));
  folders.push(root);
  mkdirSync(join(root, 'scripts'));
  for (const [name, code] of Object.entries(codes)) {
    writeFileSync(
      join(root, 'scripts', `${name}.mjs`),
      `console.log('${name} ran');\nprocess.exit(${code});\n`,
    );
  }
  return root;
}

function check(root, steps, env = process.env) {
  const result = spawnSync(process.execPath, [CHECK, ...steps], {
    cwd: root,
    env,
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('pnpm check', () => {
  it('runs every step when an earlier one fails, prints one table, and exits 1', () => {
    const root = project({ 'check-dependencies': 3, 'check-rooms': 0, 'check-error-codes': 0 });
    const result = check(root, ['dependency rules', 'room rules', 'error codes']);
    expect(result.status).toBe(1);
    for (const name of ['check-dependencies', 'check-rooms', 'check-error-codes']) {
      expect(result.stdout).toContain(`${name} ran`);
    }
    const table = result.stdout.slice(result.stdout.indexOf('== summary'));
    expect(table).toMatch(/^dependency rules {2}FAIL +\d+\.\d s {2}\(exit 3\)$/m);
    expect(table).toMatch(/^room rules +pass +\d+\.\d s$/m);
    expect(table).toMatch(/^error codes +pass +\d+\.\d s$/m);
    expect(table).toMatch(/^all +FAIL +\d+\.\d s {2}\(2 of 3 steps passed\)$/m);
  });

  it('exits 0 with every step passed', () => {
    const root = project({ 'check-rooms': 0, 'check-error-codes': 0 });
    const result = check(root, ['room rules', 'error codes']);
    expect(result.stdout).toMatch(/^all +pass +\d+\.\d s {2}\(2 of 2 steps passed\)$/m);
    expect(result.status).toBe(0);
  });

  it('ends with the test totals line after the table, also when the tests fail to run', () => {
    // No package.json and no test file here: vitest fails (with or without a summary).
    const root = project({ 'check-rooms': 1 });
    const result = check(root, ['room rules', 'tests']);
    expect(result.status).toBe(1);
    const lines = result.stdout.trim().split('\n');
    expect(lines.at(-1)).toMatch(/^tests: 0 passed, 0 failed( \(vitest wrote no summary\))?$/);
    expect(result.stdout.indexOf('== summary')).toBeLessThan(result.stdout.lastIndexOf('tests:'));
    expect(result.stdout).toMatch(/^tests +FAIL/m);
  });

  it("counts the newcomer clone's run of the clone test files instead of running them again, only on a clean tree at the same HEAD", () => {
    const root = project({});
    // A stand-in newcomer step: its "clone" reports the results of the clone test files on HEAD.
    writeFileSync(
      join(root, 'scripts', 'newcomer.mjs'),
      [
        "import { execFileSync } from 'node:child_process';",
        "import { writeFileSync } from 'node:fs';",
        "const head = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();",
        'const result = { head, passed: 7, failed: 0, skipped: 0 };',
        'writeFileSync(process.env.TOOLFENCE_CLONE_RESULT, JSON.stringify(result));',
        '',
      ].join('\n'),
    );
    const git = (...args) =>
      spawnSync('git', ['-c', 'user.name=check', '-c', 'user.email=check@127.0.0.1', ...args], {
        cwd: root,
        encoding: 'utf8',
      });
    git('init', '--quiet');
    git('add', '.');
    expect(git('commit', '--quiet', '-m', 'stand-ins').status).toBe(0);
    const excluded = /--exclude \S+conformance\.test\.ts/;

    const clean = check(root, ['newcomer', 'tests']);
    expect(clean.stdout).toMatch(/^newcomer +pass/m);
    expect(clean.stdout).toMatch(
      /clone test files ran in the newcomer's clone of this commit \(7 passed, 0 failed\)/,
    );
    expect(clean.stdout).toMatch(excluded);

    // Without the newcomer step, or with anything uncommitted (here an untracked file), the
    // clone test files run here as well.
    expect(check(root, ['tests']).stdout).not.toMatch(excluded);
    writeFileSync(join(root, 'untracked.txt'), 'not in the clone\n');
    const dirty = check(root, ['newcomer', 'tests']);
    expect(dirty.stdout).toMatch(/^newcomer +pass/m);
    expect(dirty.stdout).not.toMatch(excluded);
    expect(dirty.stdout).not.toContain("newcomer's clone of this commit");
  });

  it('refuses an unknown step name', () => {
    const result = check(project({}), ['lnit']);
    expect(result.status).toBe(2);
    expect(result.stderr).toMatch(/no step lnit/);
  });

  it('prints one line naming what to install, and runs no step, when the programs are missing and cannot be installed', () => {
    // A PATH with node alone: no bwrap, no redis-server, no apt-get, no sudo.
    const root = project({ 'check-rooms': 0 });
    const bin = join(root, 'bin');
    mkdirSync(bin);
    symlinkSync(process.execPath, join(bin, 'node'));
    const result = check(root, [], { PATH: bin, HOME: root });
    expect(result.status).toBe(1);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^check: bwrap, redis-server(, initdb\/postgres)?(, chromium)?(, prlimit)? not found/,
    );
    expect(lines[0]).toMatch(/apt-get install bubblewrap redis-server/);
    expect(lines[0]).toMatch(/brew install bubblewrap redis/);
    expect(result.stdout).not.toContain('check-rooms ran');
    expect(dirname(bin)).toBe(root);
  });
});
