import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileSystemTool } from '../src/builtin/file-system-tool.js';
import type { JsonObject, ToolResult } from '../src/registry/tool.js';
import { createToolContext } from '../src/registry/tool-context.js';

const context = createToolContext({ runId: 'fs-symlinks' });
let base: string;
let root: string;
let outside: string;
let follow: FileSystemTool;
let followWriter: FileSystemTool;
let refuse: FileSystemTool;

function structured(result: ToolResult): Record<string, unknown> {
  expect(result.isError, JSON.stringify(result)).not.toBe(true);
  return result.structuredContent as Record<string, unknown>;
}

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'toolfence-fs-links-'));
  root = join(base, 'root');
  outside = join(base, 'outside');
  mkdirSync(join(root, 'real', 'sub'), { recursive: true });
  mkdirSync(outside);
  mkdirSync(join(base, 'root-evil'));
  writeFileSync(join(outside, 'secret.txt'), 'OUTSIDE');
  writeFileSync(join(base, 'root-evil', 'secret.txt'), 'OUTSIDE');
  writeFileSync(join(root, 'a.txt'), 'top');
  writeFileSync(join(root, 'real', 'inner.txt'), 'inner');
  writeFileSync(join(root, 'real', 'sub', 'deep.txt'), 'deep');
  // A pnpm-style layout: node_modules/pkg links into .pnpm, .bin links through that link.
  const store = join(root, 'node_modules', '.pnpm', 'pkg@1.0.0', 'node_modules', 'pkg');
  mkdirSync(store, { recursive: true });
  mkdirSync(join(root, 'node_modules', '.bin'));
  writeFileSync(join(store, 'index.js'), 'pkg');
  symlinkSync('.pnpm/pkg@1.0.0/node_modules/pkg', join(root, 'node_modules', 'pkg'));
  symlinkSync('../pkg/index.js', join(root, 'node_modules', '.bin', 'pkg'));
  symlinkSync('real', join(root, 'link-rel'));
  symlinkSync(join(root, 'real'), join(root, 'link-abs'));
  symlinkSync('real/inner.txt', join(root, 'file-link'));
  symlinkSync('..', join(root, 'real', 'up'));
  symlinkSync('missing.txt', join(root, 'dangling-in'));
  symlinkSync('../outside', join(root, 'rel-out'));
  symlinkSync(outside, join(root, 'abs-out'));
  symlinkSync('real/up/../outside', join(root, 'hop-out'));
  symlinkSync('real/up/rel-out', join(root, 'chain-out'));
  symlinkSync('/proc/self/root', join(root, 'proc-root'));
  symlinkSync(`${root}-evil`, join(root, 'prefix-sibling'));
  symlinkSync('../outside/new.txt', join(root, 'dangling-out'));
  symlinkSync('loop', join(root, 'loop'));
  // c0 -> c1 -> ... -> c8 -> real/inner.txt: c0 takes 9 links, c1 takes 8.
  for (let index = 0; index < 9; index += 1) {
    symlinkSync(index === 8 ? 'real/inner.txt' : `c${index + 1}`, join(root, `c${index}`));
  }
  follow = new FileSystemTool({ root, symlinks: 'follow-inside' });
  followWriter = new FileSystemTool({ root, symlinks: 'follow-inside', allowWrite: true });
  refuse = new FileSystemTool({ root, allowWrite: true });
});

afterAll(async () => {
  for (const tool of [follow, followWriter, refuse]) await tool.close();
  rmSync(base, { recursive: true, force: true });
});

describe("FileSystemTool symlinks: 'follow-inside' follows links that stay inside", () => {
  it.each([
    ['a relative folder link', 'link-rel/inner.txt', 'inner', 'real/inner.txt'],
    [
      'an absolute folder link inside the root',
      'link-abs/sub/deep.txt',
      'deep',
      'real/sub/deep.txt',
    ],
    ['a file link', 'file-link', 'inner', 'real/inner.txt'],
    [
      'a pnpm package link',
      'node_modules/pkg/index.js',
      'pkg',
      'node_modules/.pnpm/pkg@1.0.0/node_modules/pkg/index.js',
    ],
    [
      'a .bin link through a package link (2 hops)',
      'node_modules/.bin/pkg',
      'pkg',
      'node_modules/.pnpm/pkg@1.0.0/node_modules/pkg/index.js',
    ],
    ['a link to its own parent', 'real/up/a.txt', 'top', 'a.txt'],
    ['8 links (the default limit)', 'c1', 'inner', 'real/inner.txt'],
    [
      '.. resolved against the real parent of a link',
      'node_modules/pkg/../../../pkg@1.0.0/node_modules/pkg/index.js',
      'pkg',
      'node_modules/.pnpm/pkg@1.0.0/node_modules/pkg/index.js',
    ],
  ])('reads through %s', async (_label, path, content, real) => {
    expect(structured(await follow.invoke({ operation: 'read', path }, context))).toMatchObject({
      content,
      path: real,
    });
  });

  it('lists, stats and checks through links', async () => {
    const listing = structured(
      await follow.invoke({ operation: 'list', path: 'link-rel' }, context),
    );
    expect((listing.entries as { name: string }[]).map((entry) => entry.name)).toContain(
      'inner.txt',
    );
    expect(
      structured(await follow.invoke({ operation: 'stat', path: 'file-link' }, context)),
    ).toMatchObject({ type: 'file', size: 5 });
    expect(
      structured(await follow.invoke({ operation: 'exists', path: 'dangling-in' }, context)),
    ).toMatchObject({ exists: false });
  });

  it('never enters links while globbing', async () => {
    const matches = structured(
      await follow.invoke({ operation: 'glob', pattern: '**/*.txt' }, context),
    ).matches as string[];
    expect(matches).toContain('real/inner.txt');
    expect(matches.some((match) => match.startsWith('link-'))).toBe(false);
  });

  it('writes to the target of a file link, and deletes or moves the link itself', async () => {
    structured(
      await followWriter.invoke(
        { operation: 'write', path: 'file-link', content: 'rewritten' },
        context,
      ),
    );
    expect(readFileSync(join(root, 'real', 'inner.txt'), 'utf8')).toBe('rewritten');
    expect(lstatSync(join(root, 'file-link')).isSymbolicLink()).toBe(true);
    writeFileSync(join(root, 'real', 'inner.txt'), 'inner');
    symlinkSync('a.txt', join(root, 'throwaway'));
    structured(
      await followWriter.invoke(
        { operation: 'move', path: 'throwaway', destination: 'moved-link' },
        context,
      ),
    );
    expect(lstatSync(join(root, 'moved-link')).isSymbolicLink()).toBe(true);
    structured(await followWriter.invoke({ operation: 'delete', path: 'moved-link' }, context));
    expect(existsSync(join(root, 'moved-link'))).toBe(false);
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('top');
  });
});

type Refused = readonly [label: string, args: JsonObject, code: string, message: RegExp];

const refused: readonly Refused[] = [
  [
    'a relative link out of the root',
    { operation: 'read', path: 'rel-out/secret.txt' },
    'FS_SYMLINK_REFUSED',
    /"rel-out" points outside the workspace root/,
  ],
  [
    'an absolute link out of the root',
    { operation: 'read', path: 'abs-out/secret.txt' },
    'FS_SYMLINK_REFUSED',
    /points outside the workspace root/,
  ],
  [
    'a link that leaves through a parent link',
    { operation: 'read', path: 'hop-out/secret.txt' },
    'FS_SYMLINK_REFUSED',
    /"hop-out" points outside/,
  ],
  [
    'a chain whose last hop leaves',
    { operation: 'read', path: 'chain-out/secret.txt' },
    'FS_SYMLINK_REFUSED',
    /"rel-out" points outside/,
  ],
  [
    'the /proc/self/root magic link',
    { operation: 'read', path: 'proc-root/etc/passwd' },
    'FS_SYMLINK_REFUSED',
    /points outside/,
  ],
  [
    'an absolute link to a prefix sibling',
    { operation: 'read', path: 'prefix-sibling/secret.txt' },
    'FS_SYMLINK_REFUSED',
    /points outside/,
  ],
  [
    'a self loop',
    { operation: 'read', path: 'loop' },
    'FS_SYMLINK_REFUSED',
    /more than 8 symbolic links \(maxSymlinkHops\)/,
  ],
  ['9 links', { operation: 'read', path: 'c0' }, 'FS_SYMLINK_REFUSED', /maxSymlinkHops/],
  [
    'a user .. above the root',
    { operation: 'read', path: 'real/../../outside/secret.txt' },
    'FS_PATH_INVALID',
    /leaves the workspace root/,
  ],
  [
    'a user .. above the root after a link',
    { operation: 'read', path: 'link-rel/../../outside/secret.txt' },
    'FS_PATH_INVALID',
    /leaves/,
  ],
  [
    'listing an outside link',
    { operation: 'list', path: 'abs-out' },
    'FS_SYMLINK_REFUSED',
    /points outside/,
  ],
  [
    'stat through an outside link',
    { operation: 'stat', path: 'rel-out/secret.txt' },
    'FS_SYMLINK_REFUSED',
    /points outside/,
  ],
  [
    'glob from an outside link',
    { operation: 'glob', path: 'abs-out', pattern: '*' },
    'FS_SYMLINK_REFUSED',
    /points outside/,
  ],
];

describe("FileSystemTool symlinks: 'follow-inside' refuses every step outside", () => {
  it.for(refused)('refuses %s', async ([, args, code, message]) => {
    const result = await follow.invoke(args, context);
    expect(result.metadata?.code, JSON.stringify(result)).toBe(code);
    expect((result.content[0] as { text: string }).text).toMatch(message);
    expect(JSON.stringify(result)).not.toContain('OUTSIDE');
    expect(JSON.stringify(result)).not.toContain('root:');
  });

  it.each([
    [
      'write through a dangling outside link',
      { operation: 'write', path: 'dangling-out', content: 'x' },
    ],
    [
      'write under an outside folder link',
      { operation: 'write', path: 'abs-out/new.txt', content: 'x' },
    ],
    ['mkdir under an outside link', { operation: 'mkdir', path: 'rel-out/made' }],
    ['delete through an outside link', { operation: 'delete', path: 'abs-out/secret.txt' }],
    [
      'move into an outside link',
      { operation: 'move', path: 'a.txt', destination: 'abs-out/a.txt' },
    ],
  ])('refuses to %s and changes nothing outside', async (_label, args) => {
    const result = await followWriter.invoke(args as JsonObject, context);
    expect(result.isError).toBe(true);
    expect(readFileSync(join(outside, 'secret.txt'), 'utf8')).toBe('OUTSIDE');
    expect(existsSync(join(outside, 'new.txt'))).toBe(false);
    expect(existsSync(join(outside, 'made'))).toBe(false);
    expect(existsSync(join(outside, 'a.txt'))).toBe(false);
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('top');
  });

  it('enforces maxSymlinkHops', async () => {
    const strict = new FileSystemTool({ root, symlinks: 'follow-inside', maxSymlinkHops: 1 });
    const generous = new FileSystemTool({ root, symlinks: 'follow-inside', maxSymlinkHops: 9 });
    try {
      expect(
        structured(await strict.invoke({ operation: 'read', path: 'file-link' }, context)),
      ).toMatchObject({ content: 'inner' });
      const twoHops = await strict.invoke(
        { operation: 'read', path: 'node_modules/.bin/pkg' },
        context,
      );
      expect(twoHops.metadata?.code).toBe('FS_SYMLINK_REFUSED');
      expect((twoHops.content[0] as { text: string }).text).toMatch(/more than 1 symbolic links/);
      expect(
        structured(await generous.invoke({ operation: 'read', path: 'c0' }, context)),
      ).toMatchObject({ content: 'inner' });
    } finally {
      await strict.close();
      await generous.close();
    }
  });
});

describe('FileSystemTool symlinks: the default refuses every link and names the option', () => {
  it.each([
    ['read', { operation: 'read', path: 'link-rel/inner.txt' }, 'link-rel'],
    ['read a file link', { operation: 'read', path: 'file-link' }, 'file-link'],
    ['list', { operation: 'list', path: 'node_modules/pkg' }, 'node_modules/pkg'],
    ['stat', { operation: 'stat', path: 'node_modules/.bin/pkg' }, 'node_modules/.bin/pkg'],
    ['write', { operation: 'write', path: 'file-link', content: 'x' }, 'file-link'],
    ['delete', { operation: 'delete', path: 'file-link' }, 'file-link'],
  ])('refuses %s', async (_label, args, component) => {
    const result = await refuse.invoke(args as JsonObject, context);
    expect(result.metadata?.code).toBe('FS_SYMLINK_REFUSED');
    const text = (result.content[0] as { text: string }).text;
    expect(text).toContain(`"${component}" is a symbolic link`);
    expect(text).toContain("symlinks: 'follow-inside'");
    expect(lstatSync(join(root, 'file-link')).isSymbolicLink()).toBe(true);
    expect(readFileSync(join(root, 'real', 'inner.txt'), 'utf8')).toBe('inner');
  });
});
