/**
 * Every ```ts block of every README (the root one and each package's) is an example. This test
 * writes each one to `generated/<readme>-<n>.mts` inside this example package (so it resolves the
 * packages as a user's project would), type-checks them all with the repository's strict
 * settings, and runs them. A README example that stops compiling or running fails here.
 *
 * Two HTML comments, invisible on the rendered page, may stand right before a block:
 * - `<!-- example-setup ... -->`: code prepended to the block (the names a fragment assumes,
 *   such as `server` or `registry`), so a short fragment still compiles against the real API;
 * - `<!-- example: compile-only (reason) -->`: the block needs what a test machine has not (a
 *   public URL, a user's folder); it is type-checked, not run, and the reason is stated.
 *
 * A block that runs and has `// → text` lines must print exactly those lines, in order (what a
 * reader is shown as the output is what the code prints).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const repo = join(root, '..', '..');
const generated = join(root, 'generated');
const require = createRequire(import.meta.url);

const READMES: readonly (readonly [string, string])[] = [
  ['root', 'README.md'],
  ['tool-contract', 'packages/tool-contract/README.md'],
  ['host-config', 'packages/host-config/README.md'],
  ['tools', 'packages/tools/README.md'],
  ['mcp-bridge', 'packages/mcp-bridge/README.md'],
];

interface Example {
  readonly id: string;
  readonly code: string;
  readonly compileOnly: string | undefined;
}

/** Every ```ts block with the setup and compile-only comments directly above it. */
function extractExamples(name: string, markdown: string): Example[] {
  const examples: Example[] = [];
  const block = /^```ts\n([\s\S]*?)^```$/gm;
  for (const match of markdown.matchAll(block)) {
    const before = markdown.slice(0, match.index);
    let setup = '';
    let compileOnly: string | undefined;
    // Walk back over the HTML comments that sit right above the fence.
    let rest = before.trimEnd();
    for (;;) {
      if (!rest.endsWith('-->')) break;
      const start = rest.lastIndexOf('<!--');
      if (start === -1) break;
      const text = rest.slice(start + 4, -3).trim();
      if (text.startsWith('example-setup'))
        setup = `${text.slice('example-setup'.length).trim()}\n`;
      else if (text.startsWith('example: compile-only')) {
        compileOnly = text.slice('example: compile-only'.length).trim() || 'compile-only';
      } else break;
      rest = rest.slice(0, start).trimEnd();
    }
    examples.push({
      id: `${name}-${examples.length + 1}`,
      code: `${setup}${match[1] as string}`,
      compileOnly,
    });
  }
  return examples;
}

const examples: Example[] = [];
let typecheck: { status: number | null; output: string };

beforeAll(() => {
  rmSync(generated, { recursive: true, force: true });
  mkdirSync(generated);
  for (const [name, path] of READMES) {
    for (const example of extractExamples(name, readFileSync(join(repo, path), 'utf8'))) {
      // `export {}` keeps each file a module, so top-level await and names stay per file.
      writeFileSync(join(generated, `${example.id}.mts`), `${example.code}\nexport {};\n`);
      examples.push(example);
    }
  }
  const tsc = require.resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.readme.json')], {
    cwd: root,
    encoding: 'utf8',
  });
  typecheck = { status: result.status, output: `${result.stdout}${result.stderr}` };
}, 120_000);

describe('README examples', () => {
  it.each(READMES.map(([name]) => name))('%s has at least one example', (name) => {
    expect(examples.some((example) => example.id.startsWith(`${name}-`))).toBe(true);
  });

  it('all compile against the built packages with strict settings', () => {
    expect(typecheck.output).toBe('');
    expect(typecheck.status).toBe(0);
  });

  it('every block that is not marked compile-only runs to completion', () => {
    const tsx = require.resolve('tsx/cli');
    const runnable = examples.filter((example) => example.compileOnly === undefined);
    expect(runnable.length).toBeGreaterThan(0);
    for (const example of runnable) {
      const result = spawnSync(process.execPath, [tsx, join(generated, `${example.id}.mts`)], {
        cwd: root,
        encoding: 'utf8',
        timeout: 50_000,
      });
      const shown = [...example.code.matchAll(/^\/\/ → (.*)$/gm)].map((match) => match[1]);
      const printed = result.stdout.split('\n').filter((line) => line !== '');
      expect({
        id: example.id,
        stderr: result.stderr,
        status: result.status,
        printed: shown.length === 0 ? [] : printed,
      }).toEqual({
        id: example.id,
        stderr: '',
        status: 0,
        printed: shown,
      });
    }
  }, 600_000);

  it('states a reason for every compile-only block', () => {
    for (const example of examples) {
      if (example.compileOnly !== undefined) expect(example.compileOnly).toMatch(/\(.{8,}\)/);
    }
  });
});
