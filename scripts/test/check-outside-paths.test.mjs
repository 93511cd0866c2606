// scripts/check-outside-paths.mjs, run as `pnpm check` runs it, against small repositories built
// in a temporary folder: one clean file set, then one planted file per row. Each repository has
// a `shared/` folder beside it, as CI and this machine lay one next to the checkout, so a reach
// into it would work here and fail in a clone. In the planted texts `{up}` stands for a parent
// step (dot, dot, slash) and `{beside}` for that shared/ folder, so that this file does not
// itself reach outside (the check reads it too).
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { findOutsidePaths } from '../check-outside-paths.mjs';

const SCRIPT = resolve(import.meta.dirname, '..', 'check-outside-paths.mjs');
const REPO = resolve(import.meta.dirname, '..', '..');
const folders = [];

afterEach(() => {
  for (const folder of folders.splice(0)) rmSync(folder, { recursive: true, force: true });
});

/** A repository (with `shared/` beside it) holding `files`; returns its root. */
function repository(files, { git = false, beside = true } = {}) {
  const outer = mkdtempSync(join(tmpdir(), 'toolfence-outside-'));
  folders.push(outer);
  const root = join(outer, 'repo');
  const all = {
    'package.json': '{ "name": "fixture", "private": true }\n',
    'packages/a/package.json': '{ "name": "a" }\n',
    'packages/a/src/a.ts': 'export const a = 1;\n',
    'packages/a/test/clean.test.ts': "import { a } from '{up}src/a.js';\nexport const b = a;\n",
    ...files,
  };
  for (const [path, text] of Object.entries(all)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), plant(text, root));
  }
  if (beside) {
    mkdirSync(join(outer, 'shared', 'testing'), { recursive: true });
    writeFileSync(join(outer, 'shared', 'x.mjs'), 'export const x = 1;\n');
    writeFileSync(join(outer, 'shared', 'testing', 'loopback-listen.mjs'), '\n');
  }
  if (git) {
    const env = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', HOME: outer };
    execFileSync('git', ['init', '-q'], { cwd: root, env });
    execFileSync('git', ['add', '-A'], { cwd: root, env });
  }
  return root;
}

/** The planted text, with `{up}`, `{beside}` and `{root}` spelled out for `root`. */
function plant(text, root) {
  return text
    .replaceAll('{up}', `..${'/'}`)
    .replaceAll('{beside}', join(dirname(root), 'shared'))
    .replaceAll('{root}', root);
}

/** The script as `pnpm check` runs it. */
function cli(root) {
  const result = spawnSync(process.execPath, [SCRIPT, '--root', root], { encoding: 'utf8' });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** The same scan in this process (the rows below), reported the way the script prints it. */
function check(root) {
  const findings = findOutsidePaths(root);
  const output = findings.map(({ file, line, message }) => `${file}:${line}: ${message}`);
  return {
    status: findings.length > 0 ? 1 : 0,
    output: output.join('\n') || 'outside paths: nothing reaches outside the repository',
  };
}

describe('the outside-path check', () => {
  it('passes a repository that keeps to itself', () => {
    const result = cli(repository({}));
    expect(result.output).toMatch(/nothing reaches outside/);
    expect(result.status).toBe(0);
  });

  it('passes this repository', () => {
    const result = cli(REPO);
    expect(result.output).toMatch(/nothing reaches outside/);
    expect(result.status).toBe(0);
  });

  it.each([
    [
      "a test importing '{up}shared/x.mjs'",
      'packages/a/test/planted.test.ts',
      "import { x } from '{up}shared/x.mjs';\nexport const y = x;\n",
    ],
    [
      "a test importing '{up}shared/x.mjs' at the root",
      'planted.test.ts',
      "import '{up}shared/x.mjs';\n",
    ],
    [
      'an import that climbs out of the repository',
      'packages/a/test/planted.test.ts',
      "import { x } from '{up}{up}{up}{up}shared/x.mjs';\n",
    ],
    [
      'an absolute import',
      'packages/a/test/planted.test.ts',
      "import { x } from '{beside}/x.mjs';\n",
    ],
    [
      'a dynamic import',
      'packages/a/test/planted.test.ts',
      "await import('{up}{up}{up}{up}shared/x.mjs');\n",
    ],
    ['a require', 'packages/a/test/planted.cjs', "require('{up}{up}{up}{up}shared/x.mjs');\n"],
    [
      'a vi.mock of a path outside',
      'packages/a/test/planted.test.ts',
      "import { vi } from 'vitest';\nvi.mock('{up}{up}{up}{up}shared/x.mjs');\n",
    ],
    [
      'a path joined from the repository root to a sibling folder',
      'packages/a/test/helpers.ts',
      "import { join } from 'node:path';\nimport { fileURLToPath } from 'node:url';\nconst ROOT = fileURLToPath(new URL('{up}{up}{up}', import.meta.url));\nexport const SHARED = join(ROOT, '..', 'shared');\n",
    ],
    [
      'a URL built from import.meta.url that climbs out',
      'packages/a/conformance/run.mjs',
      "import { fileURLToPath } from 'node:url';\nexport const shim = fileURLToPath(new URL('{up}{up}{up}{up}shared/x.mjs', import.meta.url));\n",
    ],
    [
      'a URL built from import.meta.url into a folder only found beside the repository',
      'packages/a/test/helpers.ts',
      "export const shim = new URL('{up}shared/x.mjs', import.meta.url);\n",
    ],
    [
      'a template string from import.meta.dirname',
      'packages/a/test/helpers.ts',
      'export const shim = `$' + '{import.meta.dirname}/{up}{up}{up}{up}shared/x.mjs`;\n',
    ],
    [
      'a concatenation onto __dirname',
      'packages/a/test/helpers.cjs',
      "exports.shim = __dirname + '/{up}{up}{up}{up}shared/x.mjs';\n",
    ],
    [
      'a command argument that climbs out of the package',
      'packages/a/test/planted.test.ts',
      "import { spawn } from 'node:child_process';\nspawn(process.execPath, ['--import', '{up}{up}{up}shared/testing/loopback-listen.mjs']);\n",
    ],
    [
      'a relative path into a folder only found beside the repository',
      'packages/a/test/planted.test.ts',
      "export const run = '{up}shared/x.mjs';\n",
    ],
    [
      'an absolute path beside the repository',
      'packages/a/test/planted.test.ts',
      "import { readFileSync } from 'node:fs';\nreadFileSync('{beside}/x.mjs');\n",
    ],
    [
      "the checkout's own absolute location",
      'packages/a/test/planted.test.ts',
      "export const here = '{root}/packages/a';\n",
    ],
    [
      'a package.json script',
      'packages/a/package.json',
      '{ "name": "a", "scripts": { "test": "node --import {up}{up}{up}shared/testing/loopback-listen.mjs x.mjs" } }\n',
    ],
    [
      'a tsconfig that extends a file outside',
      'packages/a/tsconfig.json',
      '{ "extends": "{up}{up}{up}tsconfig.json" }\n',
    ],
    ['a workspace glob outside', 'pnpm-workspace.yaml', "packages:\n  - '{up}shared/*'\n"],
    [
      'a shell script',
      '.ci/run',
      '#!/usr/bin/env bash\nnode {up}shared/conformance/run.mjs list\n',
    ],
    [
      "a README's command",
      'packages/a/README.md',
      '# a\n\n```sh\nnode {up}{up}{up}shared/conformance/run.mjs list\n```\n',
    ],
  ])('fails on %s', (_name, path, text) => {
    const root = repository({});
    const planted = plant(text, root);
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), planted);
    const result = check(root);
    expect(result.status, result.output).toBe(1);
    expect(result.output).toContain(`${path}:`);
  });

  it("exits 1 on a test importing '{up}shared/x.mjs' and names the file and line", () => {
    const root = repository({
      'packages/a/test/planted.test.ts':
        "import { a } from '{up}src/a.js';\nimport '{up}shared/x.mjs';\n",
    });
    const result = cli(root);
    expect(result.status, result.output).toBe(1);
    expect(result.output).toMatch(
      /^packages\/a\/test\/planted\.test\.ts:2: imports "\.\.\/shared\/x\.mjs"/m,
    );
  });

  it('fails on a symbolic link to a folder outside', () => {
    const root = repository({});
    symlinkSync(join(dirname(root), 'shared'), join(root, 'packages', 'a', 'shared'));
    const result = check(root);
    expect(result.status, result.output).toBe(1);
    expect(result.output).toContain('packages/a/shared:1: is a symbolic link');
  });

  it('reads the files git tracks or would track, not the ones it ignores', () => {
    const root = repository(
      {
        '.gitignore': 'ignored/\n',
        'ignored/planted.test.ts': "import '{up}{up}shared/x.mjs';\n",
        'packages/a/test/planted.test.ts': "import '{up}{up}{up}{up}shared/x.mjs';\n",
      },
      { git: true },
    );
    const result = check(root);
    expect(result.status, result.output).toBe(1);
    expect(result.output).toContain('packages/a/test/planted.test.ts:1:');
    expect(result.output).not.toContain('ignored/');
  });

  it('fails on an import of a file git ignores (a clone would not have it)', () => {
    const root = repository(
      {
        '.gitignore': 'local/\n',
        'local/helper.ts': 'export const h = 1;\n',
        'packages/a/test/planted.test.ts': "import { h } from '{up}{up}{up}local/helper.js';\n",
      },
      { git: true },
    );
    const result = check(root);
    expect(result.status, result.output).toBe(1);
    expect(result.output).toContain(
      `packages/a/test/planted.test.ts:1: imports "${plant('{up}{up}{up}', root)}local/helper.js", which git ignores`,
    );
  });

  it.each([
    [
      'an SDK subpath with shared/ in it',
      "import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';\n",
    ],
    ['a comment naming a folder', '// {up}shared/conformance and shared/research/hooks.md\n'],
    [
      'test data: a home folder and a project that do not exist',
      "export const p = ['/home/u', '/work/p', '/srv/agent/workspace'];\n",
    ],
    ['a file: URL of test data', "export const u = 'file:///home/u/spec.pdf';\n"],
    ['a system path', "export const initdb = '/usr/lib/postgresql/17/bin/initdb';\n"],
    ['a symlink target inside a temporary tree', "export const target = '{up}{up}outside';\n"],
    [
      'a sibling of a temporary folder',
      "import { join } from 'node:path';\nexport const f = (root: string) => join(root, '..', 'link-root');\n",
    ],
    ['a build output', "export const built = new URL('{up}dist/cli/main.js', import.meta.url);\n"],
    ['a web address', "export const docs = 'https://example.com/shared/docs';\n"],
    [
      'a dot-dot segment test',
      "export const bad = (s: string) => s === '..' || s.startsWith('{up}');\n",
    ],
  ])('passes %s', (_name, text) => {
    const root = repository({ 'packages/a/test/words.test.ts': text });
    const result = check(root);
    expect(result.output).toMatch(/nothing reaches outside/);
    expect(result.status).toBe(0);
  });
});
