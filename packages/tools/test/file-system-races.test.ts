import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FileSystemTool } from '../src/builtin/file-system-tool.js';
import type { JsonObject, ToolResult } from '../src/registry/tool.js';
import { createToolContext } from '../src/registry/tool-context.js';
import { startExchange } from './swap-race.js';

// Each case swaps a folder and a link to an outside folder with an atomic rename exchange, in a
// second process, for this long while the tool is called in a loop. Every call is checked.
const SWAP_MILLISECONDS = 3_000;
const WORKERS = 2;
const NAMES = 200;
const MARKER = 'OUTSIDE-SECRET';
const OUTSIDE_CONTENT = `${MARKER}-${'s'.repeat(700)}`;
const EXPECTED_CODES = new Set([
  'ok',
  'FS_SYMLINK_REFUSED',
  'FS_CHANGED_DURING_ACCESS',
  'FS_NOT_FOUND',
  'FS_ALREADY_EXISTS',
  'FS_ROOT_CHANGED',
]);

const context = createToolContext({ runId: 'fs-races' });
const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function codeOf(result: ToolResult): string {
  return result.isError === true ? String(result.metadata?.code) : 'ok';
}

/** Every entry under `folder`: relative path -> type, size, inode, modification time, content. */
function snapshot(folder: string, prefix = ''): Map<string, string> {
  const entries = new Map<string, string>();
  for (const name of readdirSync(folder)) {
    const path = join(folder, name);
    const relative = `${prefix}${name}`;
    const stat = lstatSync(path);
    const content = stat.isFile() ? readFileSync(path, 'utf8') : '';
    entries.set(relative, `${stat.mode}:${stat.size}:${stat.ino}:${stat.mtimeMs}:${content}`);
    if (stat.isDirectory()) {
      for (const [inner, value] of snapshot(path, `${relative}/`)) entries.set(inner, value);
    }
  }
  return entries;
}

function difference(before: Map<string, string>, after: Map<string, string>) {
  let created = 0;
  let removed = 0;
  let changed = 0;
  for (const [name, value] of after) {
    if (!before.has(name)) created += 1;
    else if (before.get(name) !== value) changed += 1;
  }
  for (const name of before.keys()) if (!after.has(name)) removed += 1;
  return { created, removed, changed };
}

interface RaceFixture {
  readonly base: string;
  readonly root: string;
  readonly outside: string;
  /** Path prefix of the raced folder inside the root: `a/` (depth 1) or `a/b/` (depth 2). */
  readonly prefix: string;
}

/**
 * root/a is a real folder; root/a.lnk links to an outside folder with the same layout. At depth 2
 * the raced folder is root/a/b, reached through the swapped a.
 */
function fixture(depth: 1 | 2): RaceFixture {
  const base = mkdtempSync(join(tmpdir(), 'toolfence-fs-race-'));
  cleanups.push(() => rmSync(base, { recursive: true, force: true }));
  const root = join(base, 'root');
  const outside = join(base, 'outside');
  const inner = depth === 1 ? join(root, 'a') : join(root, 'a', 'b');
  const outer = depth === 1 ? outside : join(outside, 'b');
  for (const [folder, content] of [
    [inner, 'INSIDE'],
    [outer, OUTSIDE_CONTENT],
  ] as const) {
    mkdirSync(folder, { recursive: true });
    writeFileSync(join(folder, 'file.txt'), content);
    for (let index = 0; index < NAMES; index += 1) {
      writeFileSync(join(folder, `del-${index}`), content);
      writeFileSync(join(folder, `mv-${index}`), content);
    }
  }
  writeFileSync(join(outer, 'outside-only.txt'), OUTSIDE_CONTENT);
  symlinkSync(outside, join(root, 'a.lnk'));
  return { base, root, outside, prefix: depth === 1 ? 'a/' : 'a/b/' };
}

interface RaceOutcome {
  readonly swaps: number;
  readonly calls: number;
  readonly codes: Readonly<Record<string, number>>;
}

/** Runs `call` in WORKERS loops while a second process exchanges `left` and `right`. */
async function race(
  left: string,
  right: string,
  call: (index: number) => Promise<ToolResult>,
  check: (result: ToolResult) => void,
): Promise<RaceOutcome> {
  const exchanger = await startExchange(left, right);
  cleanups.push(() => exchanger.kill());
  // A deadline, not a timer: a call that never reaches the event loop cannot starve it.
  const deadline = performance.now() + SWAP_MILLISECONDS;
  const codes: Record<string, number> = {};
  let calls = 0;
  let swaps = 0;
  const worker = async (offset: number): Promise<void> => {
    for (let index = offset; performance.now() < deadline; index += WORKERS) {
      const result = await call(index);
      calls += 1;
      const code = codeOf(result);
      codes[code] = (codes[code] ?? 0) + 1;
      check(result);
    }
  };
  try {
    await Promise.all(Array.from({ length: WORKERS }, (_, offset) => worker(offset)));
  } finally {
    swaps = await exchanger.stop();
  }
  return { swaps, calls, codes };
}

function expectLiveRace(outcome: RaceOutcome): void {
  // The race really ran: many swaps, many calls, and the walk saw the link at least once.
  expect(outcome.swaps).toBeGreaterThan(1_000);
  expect(outcome.calls).toBeGreaterThan(50);
  expect(
    (outcome.codes.FS_SYMLINK_REFUSED ?? 0) + (outcome.codes.FS_CHANGED_DURING_ACCESS ?? 0),
  ).toBeGreaterThan(0);
  for (const code of Object.keys(outcome.codes)) expect(EXPECTED_CODES).toContain(code);
}

function report(label: string, outcome: RaceOutcome, escapes: Record<string, number>): void {
  console.info(
    `race ${label}: ${outcome.calls} calls, ${outcome.swaps} swaps, codes ${JSON.stringify(
      outcome.codes,
    )}, escapes ${JSON.stringify(escapes)}`,
  );
}

function tools(
  root: string,
  symlinks: 'refuse' | 'follow-inside' = 'refuse',
): { reader: FileSystemTool; writer: FileSystemTool } {
  const reader = new FileSystemTool({ root, symlinks });
  const writer = new FileSystemTool({ root, allowWrite: true, symlinks });
  cleanups.push(async () => {
    await reader.close();
    await writer.close();
  });
  return { reader, writer };
}

type Operation = 'read' | 'list' | 'stat' | 'write' | 'mkdir' | 'delete' | 'move';

const cases: readonly (readonly [Operation, 1 | 2, 'refuse' | 'follow-inside'])[] = [
  ...(['read', 'list', 'stat', 'write', 'mkdir', 'delete', 'move'] as const).flatMap(
    (operation) => [[operation, 1, 'refuse'] as const, [operation, 2, 'refuse'] as const],
  ),
  // With follow-inside the walk follows links, so the outside link must be refused as it is met.
  ['read', 1, 'follow-inside'],
  ['list', 2, 'follow-inside'],
  ['write', 2, 'follow-inside'],
  ['delete', 1, 'follow-inside'],
];

function argsFor(operation: Operation, prefix: string, index: number, root: string): JsonObject {
  const slot = index % NAMES;
  switch (operation) {
    case 'read':
      return { operation, path: `${prefix}file.txt` };
    case 'list':
      return { operation, path: prefix.slice(0, -1) };
    case 'stat':
      return {
        operation,
        path: index % 2 === 0 ? `${prefix}file.txt` : `${prefix}outside-only.txt`,
      };
    case 'write':
      return { operation, path: `${prefix}w-${index}.txt`, content: 'written' };
    case 'mkdir':
      return { operation, path: `${prefix}m-${index}` };
    case 'delete':
      return { operation, path: `${prefix}del-${slot}` };
    case 'move': {
      const kind = index % 3;
      if (kind === 0)
        return { operation, path: `${prefix}mv-${slot}`, destination: `${prefix}mvd-${index}` };
      if (kind === 1) {
        // A file at the top of the root (never raced) moved into the raced folder.
        writeFileSync(join(root, `src-${index}`), 'top');
        return { operation, path: `src-${index}`, destination: `${prefix}in-${index}` };
      }
      return { operation, path: `${prefix}mv-${slot}`, destination: `top-${index}` };
    }
  }
}

describe('FileSystemTool: a folder swapped for an outside link (rename exchange)', () => {
  it.for(cases)(
    '%s at depth %i (symlinks: %s) returns, shows, creates, changes and removes nothing outside',
    { timeout: 60_000 },
    async ([operation, depth, symlinks]) => {
      const { root, outside, prefix } = fixture(depth);
      const { reader, writer } = tools(root, symlinks);
      const tool = ['read', 'list', 'stat'].includes(operation) ? reader : writer;
      const before = snapshot(outside);
      const escapes = { bytes: 0, entries: 0, stats: 0 };
      const outcome = await race(
        join(root, 'a'),
        join(root, 'a.lnk'),
        (index) => tool.invoke(argsFor(operation, prefix, index, root), context),
        (result) => {
          const text = JSON.stringify(result);
          if (text.includes(MARKER)) escapes.bytes += 1;
          if (text.includes('outside-only.txt') && result.isError !== true) escapes.entries += 1;
          const size = (result.structuredContent as { size?: unknown } | undefined)?.size;
          if (operation === 'stat' && size === OUTSIDE_CONTENT.length) escapes.stats += 1;
        },
      );
      const changes = difference(before, snapshot(outside));
      report(`${operation} depth ${depth} ${symlinks}`, outcome, { ...escapes, ...changes });
      expect({ ...escapes, ...changes }).toEqual({
        bytes: 0,
        entries: 0,
        stats: 0,
        created: 0,
        removed: 0,
        changed: 0,
      });
      expectLiveRace(outcome);
      expect(outcome.codes.ok ?? 0).toBeGreaterThan(0);
    },
  );
});

describe('FileSystemTool: the root replaced after construction', () => {
  it('refuses every operation once the root is moved and replaced by a link to /', async () => {
    const base = mkdtempSync(join(tmpdir(), 'toolfence-fs-root-'));
    cleanups.push(() => rmSync(base, { recursive: true, force: true }));
    const root = join(base, 'root');
    mkdirSync(root);
    writeFileSync(join(root, 'inside.txt'), 'INSIDE');
    const { reader, writer } = tools(root);
    renameSync(root, join(base, 'root.moved'));
    symlinkSync('/', root);
    const passwd = readFileSync('/etc/passwd', 'utf8').split('\n')[0] as string;
    const calls: readonly [FileSystemTool, JsonObject][] = [
      [reader, { operation: 'read', path: 'etc/passwd' }],
      [reader, { operation: 'stat', path: 'etc/passwd' }],
      [reader, { operation: 'exists', path: 'etc/passwd' }],
      [reader, { operation: 'list', path: 'etc' }],
      [reader, { operation: 'glob', path: 'etc', pattern: 'pass*' }],
      [reader, { operation: 'read', path: `${root}/etc/passwd` }],
      [writer, { operation: 'write', path: 'toolfence-root-test.txt', content: 'x' }],
      [writer, { operation: 'mkdir', path: 'toolfence-root-test' }],
      [writer, { operation: 'delete', path: 'inside.txt' }],
      [writer, { operation: 'move', path: 'inside.txt', destination: 'moved.txt' }],
    ];
    for (const [tool, args] of calls) {
      const result = await tool.invoke(args, context);
      expect(codeOf(result), JSON.stringify(args)).toBe('FS_ROOT_CHANGED');
      expect(JSON.stringify(result)).not.toContain(passwd);
      expect(JSON.stringify(result)).not.toContain('passwd');
    }
    expect(readdirSync(join(base, 'root.moved'))).toEqual(['inside.txt']);
    expect(() => lstatSync('/toolfence-root-test.txt')).toThrow(/ENOENT/);
  });

  it('refuses every call once the configured path (a link) names another folder', async () => {
    const base = mkdtempSync(join(tmpdir(), 'toolfence-fs-relink-'));
    cleanups.push(() => rmSync(base, { recursive: true, force: true }));
    mkdirSync(join(base, 'v1'));
    mkdirSync(join(base, 'v2'));
    writeFileSync(join(base, 'v1', 'file.txt'), 'V1');
    writeFileSync(join(base, 'v2', 'file.txt'), 'V2');
    const current = join(base, 'current');
    symlinkSync(join(base, 'v1'), current);
    const { reader } = tools(current);
    expect(reader.root).toBe(join(base, 'v1'));
    expect(
      (await reader.invoke({ operation: 'read', path: `${current}/file.txt` }, context))
        .structuredContent,
    ).toMatchObject({ content: 'V1' });
    // The link now names v2: a policy that judged "<current>/file.txt" judged v2's file, so the
    // tool, which holds v1, refuses rather than act on another folder than the path names.
    rmSync(current);
    symlinkSync(join(base, 'v2'), current);
    for (const path of ['file.txt', `${current}/file.txt`]) {
      const result = await reader.invoke({ operation: 'read', path }, context);
      expect(codeOf(result)).toBe('FS_ROOT_CHANGED');
    }
  });

  it('never reads outside while the root flips between itself and an outside link', {
    timeout: 60_000,
  }, async () => {
    const { base, root, outside } = fixture(1);
    writeFileSync(join(root, 'file.txt'), 'INSIDE');
    writeFileSync(join(outside, 'file.txt'), OUTSIDE_CONTENT);
    symlinkSync(outside, join(base, 'root.lnk'));
    const { reader, writer } = tools(root);
    const before = snapshot(outside);
    const escapes = { bytes: 0, entries: 0 };
    const outcome = await race(
      root,
      join(base, 'root.lnk'),
      (index) =>
        index % 3 === 0
          ? reader.invoke({ operation: 'read', path: 'file.txt' }, context)
          : index % 3 === 1
            ? reader.invoke({ operation: 'list', path: '.' }, context)
            : writer.invoke({ operation: 'write', path: `r-${index}.txt`, content: 'x' }, context),
      (result) => {
        const text = JSON.stringify(result);
        if (text.includes(MARKER)) escapes.bytes += 1;
        if (text.includes('outside-only') || text.includes('"mv-0"')) escapes.entries += 1;
      },
    );
    const changes = difference(before, snapshot(outside));
    report('replaced root', outcome, { ...escapes, ...changes });
    expect({ ...escapes, ...changes }).toEqual({
      bytes: 0,
      entries: 0,
      created: 0,
      removed: 0,
      changed: 0,
    });
    expect(outcome.swaps).toBeGreaterThan(1_000);
    expect(outcome.codes.FS_ROOT_CHANGED ?? 0).toBeGreaterThan(0);
    for (const code of Object.keys(outcome.codes)) expect(EXPECTED_CODES).toContain(code);
  });
});

describe('FileSystemTool: the root swapped while the tool is being created', () => {
  it('never names one folder as its root while it works in another', {
    timeout: 60_000,
  }, async () => {
    // base/p/proj is the root; base/plink links to base/outside, which holds an outside proj.
    // A second process exchanges p and plink while tools are created one after another.
    const base = mkdtempSync(join(tmpdir(), 'toolfence-fs-ctor-'));
    cleanups.push(() => rmSync(base, { recursive: true, force: true }));
    const parent = join(base, 'p');
    const link = join(base, 'plink');
    const root = join(parent, 'proj');
    mkdirSync(root, { recursive: true });
    writeFileSync(join(root, 'secret'), 'INSIDE');
    mkdirSync(join(base, 'outside', 'proj'), { recursive: true });
    writeFileSync(join(base, 'outside', 'proj', 'secret'), OUTSIDE_CONTENT);
    symlinkSync(join(base, 'outside'), link);
    const ROUNDS = 3000;
    const created: FileSystemTool[] = [];
    cleanups.push(async () => {
      for (const tool of created) await tool.close();
    });
    let refused = 0;
    const exchanger = await startExchange(parent, link);
    cleanups.push(() => exchanger.kill());
    try {
      for (let round = 0; round < ROUNDS; round += 1) {
        try {
          created.push(new FileSystemTool({ root }));
        } catch (error) {
          expect((error as { code?: unknown }).code).toBe('FS_INVALID_OPTIONS');
          refused += 1;
        }
        // Let the exchanger run between two constructions.
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      await exchanger.stop();
    }
    // Leave p as the link to the outside (the attacker's last move), so a path that goes
    // through p resolves outside.
    renameSync(parent, join(base, 'p.real'));
    renameSync(link, parent);
    let escapes = 0;
    let named = 0;
    for (const tool of created) {
      // The root a tool reports is the real path of the folder it opened.
      if (tool.root === root) named += 1;
      const result = await tool.invoke({ operation: 'read', path: 'secret' }, context);
      if (tool.root === root && JSON.stringify(result).includes(MARKER)) escapes += 1;
    }
    console.info(
      `constructor race: ${created.length} created, ${refused} refused, ${named} named the root, ${escapes} escapes`,
    );
    expect(created.length + refused).toBe(ROUNDS);
    expect(escapes).toBe(0);
  });
});
