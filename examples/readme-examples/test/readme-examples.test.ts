/**
 * The first ```ts block of every package README is its example. This test writes each one to
 * `generated/<package>.mts` inside this example package (so it resolves the packages as a user's
 * project would), type-checks them all with the repository's strict settings, and runs the
 * self-contained ones. A README example that stops compiling or running fails here.
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

/** Packages whose example runs to completion on its own (others start a server and wait). */
const RUNNABLE = new Set(['tool-contract', 'tools', 'mcp-bridge']);
const PACKAGES = ['tool-contract', 'host-config', 'tools', 'mcp-bridge'] as const;

function firstTypeScriptBlock(markdown: string): string | undefined {
  const match = /^```ts\n([\s\S]*?)^```$/m.exec(markdown);
  return match?.[1];
}

const examples = new Map<string, string>();
let typecheck: { status: number | null; output: string };

beforeAll(() => {
  rmSync(generated, { recursive: true, force: true });
  mkdirSync(generated);
  for (const name of PACKAGES) {
    const code = firstTypeScriptBlock(
      readFileSync(join(repo, 'packages', name, 'README.md'), 'utf8'),
    );
    if (code === undefined) continue;
    // `export {}` keeps each file a module, so top-level await and names stay per file.
    writeFileSync(join(generated, `${name}.mts`), `${code}\nexport {};\n`);
    examples.set(name, code);
  }
  const tsc = require.resolve('typescript/bin/tsc');
  const result = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.readme.json')], {
    cwd: root,
    encoding: 'utf8',
  });
  typecheck = { status: result.status, output: `${result.stdout}${result.stderr}` };
});

describe('package README examples', () => {
  it.each(PACKAGES)('%s has an example', (name) => {
    expect(examples.has(name)).toBe(true);
  });

  it('all compile against the built packages with strict settings', () => {
    expect(typecheck.output).toBe('');
    expect(typecheck.status).toBe(0);
  });

  it.each([...RUNNABLE])('the %s example runs to completion', (name) => {
    const tsx = require.resolve('tsx/cli');
    const result = spawnSync(process.execPath, [tsx, join(generated, `${name}.mts`)], {
      cwd: root,
      encoding: 'utf8',
      timeout: 50_000,
    });
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
  });
});
