import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FileSystemTool } from '../src/builtin/file-system-tool.js';
import { FileSystemToolOptionsError } from '../src/builtin/file-system-tool-options-error.js';
import type { JsonObject, ToolResult } from '../src/registry/tool.js';
import { createToolContext } from '../src/registry/tool-context.js';
import { type Exchanger, startExchange } from './swap-race.js';

const context = createToolContext({ runId: 'fs-glob' });
let base: string;
const tools: FileSystemTool[] = [];

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'toolfence-fs-glob-'));
});

afterAll(async () => {
  for (const tool of tools) await tool.close();
  rmSync(base, { recursive: true, force: true });
});

function tool(root: string, options: Record<string, unknown> = {}): FileSystemTool {
  const made = new FileSystemTool({ root, ...options });
  tools.push(made);
  return made;
}

function structured(result: ToolResult): { matches: string[]; truncated: boolean } {
  expect(result.isError, JSON.stringify(result)).not.toBe(true);
  return result.structuredContent as { matches: string[]; truncated: boolean };
}

async function glob(
  on: FileSystemTool,
  args: JsonObject,
): Promise<{ matches: string[]; truncated: boolean }> {
  return structured(await on.invoke({ operation: 'glob', ...args }, context));
}

/** A chain of `depth` folders named `d` under `root`; returns the deepest. */
function chain(root: string, depth: number): string {
  const deepest = join(root, ...Array.from({ length: depth }, () => 'd'));
  mkdirSync(deepest, { recursive: true });
  return deepest;
}

describe('FileSystemTool glob: maxGlobDepth', () => {
  let root: string;
  beforeAll(() => {
    root = join(base, 'depth');
    mkdirSync(join(root, 'a', 'b', 'c', 'd'), { recursive: true });
    writeFileSync(join(root, 'a', 'b', 'c', 'd', 'e.txt'), 'e');
    writeFileSync(join(root, 'top.txt'), 't');
  });

  it('does not descend below maxGlobDepth levels and flags truncated', async () => {
    expect(await glob(tool(root, { maxGlobDepth: 2 }), { pattern: '**' })).toEqual(
      expect.objectContaining({ matches: ['a', 'a/b', 'top.txt'], truncated: true }),
    );
    expect(await glob(tool(root, { maxGlobDepth: 1 }), { pattern: '*' })).toEqual(
      expect.objectContaining({ matches: ['a', 'top.txt'], truncated: true }),
    );
  });

  it('walks everything when the tree fits', async () => {
    expect(await glob(tool(root, { maxGlobDepth: 5 }), { pattern: '**/*.txt' })).toEqual(
      expect.objectContaining({ matches: ['a/b/c/d/e.txt', 'top.txt'], truncated: false }),
    );
  });

  it('counts levels from the folder the glob starts in', async () => {
    expect(await glob(tool(root, { maxGlobDepth: 3 }), { path: 'a/b', pattern: '**' })).toEqual(
      expect.objectContaining({ matches: ['c', 'c/d', 'c/d/e.txt'], truncated: false }),
    );
  });

  it('defaults to 64 levels', async () => {
    const deep = join(base, 'default-depth');
    chain(deep, 70);
    const result = await glob(tool(deep), { pattern: '**' });
    expect(result.truncated).toBe(true);
    expect(result.matches).toHaveLength(64);
    expect(Math.max(...result.matches.map((match) => match.split('/').length))).toBe(64);
  });

  it.each([0, -1, 1.5, '64', Number.POSITIVE_INFINITY])('refuses maxGlobDepth %s', (value) => {
    expect(() => new FileSystemTool({ root, maxGlobDepth: value } as never)).toThrow(
      FileSystemToolOptionsError,
    );
  });
});

describe('FileSystemTool glob: descriptors held at once', () => {
  it('holds a bounded number of folders open however deep the tree', async () => {
    const root = join(base, 'fds');
    chain(root, 60);
    // Siblings at every level, so the walk comes back up through folders it had closed.
    let folder = root;
    for (let level = 0; level < 60; level += 1) {
      mkdirSync(join(folder, 'side'));
      writeFileSync(join(folder, 'side', 'x.txt'), 'x');
      folder = join(folder, 'd');
    }
    const count = (): number => readdirSync('/proc/self/fd').length;
    const on = tool(root);
    const before = count();
    let most = before;
    let done = false;
    const sampler = (async () => {
      while (!done) {
        most = Math.max(most, count());
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    try {
      for (let round = 0; round < 3; round += 1) {
        const result = await glob(on, { pattern: '**/x.txt' });
        expect(result).toEqual(expect.objectContaining({ truncated: false }));
        expect(result.matches).toHaveLength(60);
      }
    } finally {
      done = true;
      await sampler;
    }
    console.info(`glob over 60 levels: at most ${most - before} more descriptors open`);
    // 8 held folders (the start is the root, held anyway), a parent reopened before the folder
    // it was reopened from closes, the listing being read, and one spare.
    expect(most - before).toBeLessThanOrEqual(11);
    expect(count()).toBe(before);
  });
});

describe('FileSystemTool glob: deep trees in both confinement modes', () => {
  it.each(['descriptor', 'by-path'] as const)(
    'finds every match below the folders it closed and reopened (%s)',
    async (confinement) => {
      const root = join(base, `both-${confinement}`);
      chain(root, 20);
      let folder = root;
      for (let level = 0; level < 20; level += 1) {
        writeFileSync(join(folder, `f${level}.txt`), 'x');
        mkdirSync(join(folder, 'z-after'));
        writeFileSync(join(folder, 'z-after', 'x.txt'), 'x');
        folder = join(folder, 'd');
      }
      const result = await glob(tool(root, { confinement }), { pattern: '**/*.txt' });
      expect(result.truncated).toBe(false);
      // Each level's z-after comes after its d in name order: reached only on the way back up.
      expect(result.matches.filter((match) => match.endsWith('z-after/x.txt'))).toHaveLength(20);
      expect(result.matches).toHaveLength(40);
    },
  );
});

describe('FileSystemTool glob: a deep folder swapped for an outside link', () => {
  let exchanger: Exchanger | undefined;
  afterEach(async () => {
    await exchanger?.kill();
    exchanger = undefined;
  });

  it('never lists outside entries while a folder above the held ones flips', {
    timeout: 60_000,
  }, async () => {
    const root = join(base, 'race-root');
    const outside = join(base, 'race-outside');
    const ROUNDS = 150;
    // root/race/a/d/d/... 14 levels; the outside copy holds outside-only files at every level.
    for (const [top, marker] of [
      [join(root, 'race', 'a'), 'inside.txt'],
      [outside, 'outside-only.txt'],
    ] as const) {
      let folder = top;
      mkdirSync(folder, { recursive: true });
      for (let level = 0; level < 14; level += 1) {
        writeFileSync(join(folder, marker), marker);
        mkdirSync(join(folder, 'side'));
        folder = join(folder, 'd');
        mkdirSync(folder);
      }
    }
    symlinkSync(outside, join(root, 'race', 'a.lnk'));
    const on = tool(root);
    exchanger = await startExchange(join(root, 'race', 'a'), join(root, 'race', 'a.lnk'));
    let escapes = 0;
    let swaps = 0;
    const codes: Record<string, number> = {};
    try {
      for (let round = 0; round < ROUNDS; round += 1) {
        const result = await on.invoke({ operation: 'glob', path: 'race', pattern: '**' }, context);
        const code = result.isError === true ? String(result.metadata?.code) : 'ok';
        codes[code] = (codes[code] ?? 0) + 1;
        if (JSON.stringify(result).includes('outside-only')) escapes += 1;
      }
    } finally {
      swaps = await exchanger.stop();
      exchanger = undefined;
    }
    console.info(
      `glob deep race: ${ROUNDS} globs, ${swaps} swaps, codes ${JSON.stringify(codes)}, escapes ${escapes}`,
    );
    expect(escapes).toBe(0);
    expect(swaps).toBeGreaterThan(1_000);
    for (const code of Object.keys(codes)) {
      expect(['ok', 'FS_CHANGED_DURING_ACCESS', 'FS_SYMLINK_REFUSED']).toContain(code);
    }
  });
});
