import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { format } from 'node:util';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { HEURISTIC_RISK_RULES, HEURISTIC_TRUST_RULES } from '../src/index.js';

const packageDir = fileURLToPath(new URL('..', import.meta.url));
const readme = await readFile(join(packageDir, 'README.md'), 'utf8');
const temporary: string[] = [];

afterAll(async () => {
  for (const dir of temporary) await rm(dir, { recursive: true, force: true });
});

function section(title: string): string {
  const start = readme.indexOf(`\n## ${title}\n`);
  expect(start, title).toBeGreaterThan(0);
  const end = readme.indexOf('\n## ', start + 1);
  return readme.slice(start, end < 0 ? undefined : end);
}

/** A table row without the padding a formatter adds. */
function row(text: string): string {
  return text.replace(/[ \t]*\|[ \t]*/g, '|');
}

describe('README', () => {
  it('has an example that runs and prints what it says', async () => {
    const block = /```ts\n([\s\S]*?)```/.exec(section('Example'))?.[1];
    expect(block).toBeDefined();
    const code = (block as string).replaceAll(
      "'@toolfence/tool-contract'",
      JSON.stringify(pathToFileURL(join(packageDir, 'src/index.ts')).href),
    );
    // Inside the package, so the example's bare imports resolve to its dev dependencies.
    await mkdir(join(packageDir, '.tmp'), { recursive: true });
    const dir = await mkdtemp(join(packageDir, '.tmp', 'readme-'));
    temporary.push(dir);
    const file = join(dir, 'example.ts');
    await writeFile(file, code);
    const printed: string[] = [];
    const spy = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
      printed.push(format(...args));
    });
    try {
      await import(pathToFileURL(file).href);
    } finally {
      spy.mockRestore();
    }
    const expected = [...(block as string).matchAll(/^\/\/ → (.*)$/gm)].map((match) => match[1]);
    expect(expected.length).toBeGreaterThan(0);
    expect(printed).toEqual(expected);
  });

  it('documents every heuristic word exactly as the tables hold them', () => {
    const words = (list: readonly string[]): string =>
      list.length === 0
        ? '(none: never from a description)'
        : list.map((word) => `\`${word}\``).join(' ');
    const text = section('Heuristics for undeclared tools');
    for (const rule of HEURISTIC_RISK_RULES) {
      expect(row(text)).toContain(
        row(`| \`${rule.risk}\` | ${words(rule.nameWords)} | ${words(rule.descriptionWords)} |`),
      );
    }
    for (const rule of HEURISTIC_TRUST_RULES) {
      expect(row(text)).toContain(
        row(
          `| \`${rule.contentTrust}\` | ${words(rule.nameWords)} | ${words(rule.descriptionWords)} |`,
        ),
      );
    }
  });

  it('lists every error and problem code the source can produce', async () => {
    const sourceDir = join(packageDir, 'src');
    const files = (await readdir(sourceDir, { recursive: true })).filter(
      (name) => name.endsWith('.ts') && !name.endsWith('.test.ts'),
    );
    const codes = new Set<string>();
    for (const name of files) {
      const text = await readFile(join(sourceDir, name), 'utf8');
      for (const match of text.matchAll(/'((?:TOOL_)?CONTRACT_[A-Z_]+)'/g))
        codes.add(match[1] as string);
    }
    expect(codes.size).toBeGreaterThan(20);
    const errors = row(section('Errors'));
    for (const code of codes) expect(errors, code).toContain(`|\`${code}\`|`);
  });
});
