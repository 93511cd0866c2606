import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileSystemTool } from '../src/builtin/file-system-tool.js';
import { FileSystemToolOptionsError } from '../src/builtin/file-system-tool-options-error.js';
import type { JsonObject, ToolResult } from '../src/registry/tool.js';
import { createToolContext } from '../src/registry/tool-context.js';
import { killAndWait } from './swap-race.js';

const context = createToolContext({ runId: 'fs-test' });
let base: string;
let root: string;
let outside: string;
let sibling: string;
let socketServer: Server;
let readTool: FileSystemTool;
let writeTool: FileSystemTool;

function outsideSecret(): string {
  return readFileSync(join(outside, 'secret.txt'), 'utf8');
}

async function call(tool: FileSystemTool, args: JsonObject): Promise<ToolResult> {
  return tool.invoke(args, context);
}

function codeOf(result: ToolResult): string | undefined {
  return result.isError === true ? (result.metadata?.code as string) : undefined;
}

function structured(result: ToolResult): Record<string, unknown> {
  expect(result.isError, JSON.stringify(result)).not.toBe(true);
  return result.structuredContent as Record<string, unknown>;
}

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'toolfence-fs-'));
  root = join(base, 'root');
  outside = join(base, 'outside');
  sibling = join(base, 'root-evil');
  for (const folder of [root, outside, sibling, join(root, 'dir', 'sub')]) {
    mkdirSync(folder, { recursive: true });
  }
  writeFileSync(join(outside, 'secret.txt'), 'OUTSIDE');
  writeFileSync(join(sibling, 'secret.txt'), 'OUTSIDE');
  writeFileSync(join(root, 'a.txt'), 'hello');
  writeFileSync(join(root, 'dir', 'b.txt'), 'bee');
  writeFileSync(join(root, 'dir', 'sub', 'c.txt'), 'sea');
  symlinkSync('../outside/secret.txt', join(root, 'link-out'));
  symlinkSync('a.txt', join(root, 'link-in'));
  symlinkSync('../outside', join(root, 'dirlink-out'));
  symlinkSync('dir', join(root, 'dirlink-in'));
  symlinkSync('../outside/new.txt', join(root, 'dangling'));
  symlinkSync('nothing-here', join(root, 'dangling-in'));
  symlinkSync('../../outside', join(root, 'dir', 'up'));
  symlinkSync(join(outside, 'secret.txt'), join(root, 'abs-link'));
  symlinkSync('loop', join(root, 'loop'));
  symlinkSync('/proc/self/root', join(root, 'proc-root'));
  symlinkSync('../root-evil', join(root, 'sibling-link'));
  linkSync(join(outside, 'secret.txt'), join(root, 'hard'));
  execFileSync('mkfifo', [join(root, 'fifo')]);
  try {
    execFileSync('mknod', [join(root, 'zero'), 'c', '1', '5'], { stdio: 'ignore' });
  } catch {
    // Without CAP_MKNOD, a unix socket stands in for a device node.
  }
  socketServer = createServer();
  await new Promise<void>((resolve) => socketServer.listen(join(root, 'sock'), resolve));
  if (!existsSync(join(root, 'zero'))) symlinkSync('sock', join(root, 'zero-fallback'));
  readTool = new FileSystemTool({ root });
  writeTool = new FileSystemTool({ root, allowWrite: true, name: 'fs_rw' });
});

afterAll(async () => {
  await new Promise<void>((resolve) => socketServer.close(() => resolve()));
  rmSync(base, { recursive: true, force: true });
});

type Row = readonly [name: string, args: JsonObject, code: string];

const readRows: readonly Row[] = [
  ['symlink to an outside file', { operation: 'read', path: 'link-out' }, 'FS_SYMLINK_REFUSED'],
  ['symlink that stays inside', { operation: 'read', path: 'link-in' }, 'FS_SYMLINK_REFUSED'],
  [
    'file under an outside folder link',
    { operation: 'read', path: 'dirlink-out/secret.txt' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'file under an inside folder link',
    { operation: 'read', path: 'dirlink-in/b.txt' },
    'FS_SYMLINK_REFUSED',
  ],
  ['dangling link to outside', { operation: 'read', path: 'dangling' }, 'FS_SYMLINK_REFUSED'],
  ['dangling link inside', { operation: 'read', path: 'dangling-in' }, 'FS_SYMLINK_REFUSED'],
  [
    'link in a middle folder',
    { operation: 'read', path: 'dir/up/secret.txt' },
    'FS_SYMLINK_REFUSED',
  ],
  ['absolute link target', { operation: 'read', path: 'abs-link' }, 'FS_SYMLINK_REFUSED'],
  ['self-referencing link', { operation: 'read', path: 'loop' }, 'FS_SYMLINK_REFUSED'],
  [
    'magic /proc/self/root link',
    { operation: 'read', path: 'proc-root/etc/passwd' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'link to a prefix sibling',
    { operation: 'read', path: 'sibling-link/secret.txt' },
    'FS_SYMLINK_REFUSED',
  ],
  ['hard link to an outside file', { operation: 'read', path: 'hard' }, 'FS_HARD_LINK_REFUSED'],
  ['FIFO (would block)', { operation: 'read', path: 'fifo' }, 'FS_NOT_A_FILE'],
  ['unix socket', { operation: 'read', path: 'sock' }, 'FS_NOT_A_FILE'],
  ['a folder', { operation: 'read', path: 'dir' }, 'FS_NOT_A_FILE'],
  ['the root', { operation: 'read', path: '.' }, 'FS_NOT_A_FILE'],
  [
    'prefix sibling by ..',
    { operation: 'read', path: '../root-evil/secret.txt' },
    'FS_PATH_INVALID',
  ],
  ['parent escape', { operation: 'read', path: '../outside/secret.txt' }, 'FS_PATH_INVALID'],
  [
    '.. that leaves from a deeper folder',
    { operation: 'read', path: 'dir/../../outside/secret.txt' },
    'FS_PATH_INVALID',
  ],
  [
    '.. that leaves after an inner folder',
    { operation: 'read', path: 'dir/sub/../../../root-evil/secret.txt' },
    'FS_PATH_INVALID',
  ],
  ['bare ..', { operation: 'read', path: '..' }, 'FS_PATH_INVALID'],
  ['absolute path', { operation: 'read', path: '/etc/passwd' }, 'FS_PATH_INVALID'],
  [
    'absolute path to the root itself',
    { operation: 'read', path: `${'/'}a.txt` },
    'FS_PATH_INVALID',
  ],
  ['home tilde', { operation: 'read', path: '~/.ssh/id_rsa' }, 'FS_PATH_INVALID'],
  ['empty path', { operation: 'read', path: '' }, 'FS_PATH_INVALID'],
  ['NUL byte', { operation: 'read', path: 'a.txt\u0000.png' }, 'FS_PATH_INVALID'],
  ['backslash separator', { operation: 'read', path: 'dir\\b.txt' }, 'FS_PATH_INVALID'],
  ['drive letter', { operation: 'read', path: 'C:/Windows/win.ini' }, 'FS_PATH_INVALID'],
  ['file URL', { operation: 'read', path: 'file:///etc/passwd' }, 'FS_PATH_INVALID'],
  [
    'alternate data stream is only a name on Linux',
    { operation: 'read', path: 'a.txt::$DATA' },
    'FS_NOT_FOUND',
  ],
  [
    'trailing slash on a link is still the link',
    { operation: 'read', path: 'link-in/' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'trailing slash on an outside folder link',
    { operation: 'list', path: 'dirlink-out/' },
    'FS_SYMLINK_REFUSED',
  ],
  ['over-long segment', { operation: 'read', path: 'x'.repeat(300) }, 'FS_PATH_INVALID'],
  [
    'over-long path',
    { operation: 'read', path: Array(1000).fill('abcd').join('/') },
    'FS_PATH_INVALID',
  ],
  ['newline', { operation: 'read', path: 'a\nb' }, 'FS_PATH_INVALID'],
  ['escape character', { operation: 'read', path: 'a\u001b[2Jb' }, 'FS_PATH_INVALID'],
  ['C1 control', { operation: 'read', path: 'a\u0085b' }, 'FS_PATH_INVALID'],
  [
    'a Windows device name is an ordinary (missing) name',
    { operation: 'read', path: 'nul.txt' },
    'FS_NOT_FOUND',
  ],
  ['trailing dot is not trimmed', { operation: 'read', path: 'a.txt.' }, 'FS_NOT_FOUND'],
  ['trailing space is not trimmed', { operation: 'read', path: 'a.txt ' }, 'FS_NOT_FOUND'],
  [
    'percent-encoded dots are not decoded',
    { operation: 'read', path: '%2e%2e/outside/secret.txt' },
    'FS_NOT_FOUND',
  ],
  [
    'full-width slash is not normalised',
    { operation: 'read', path: '..／outside' },
    'FS_NOT_FOUND',
  ],
  ['missing file', { operation: 'read', path: 'missing.txt' }, 'FS_NOT_FOUND'],
  ['file used as a folder', { operation: 'read', path: 'a.txt/x' }, 'FS_NOT_A_DIRECTORY'],
  ['path that is not a string', { operation: 'read', path: 42 }, 'FS_INVALID_ARGUMENTS'],
  [
    'unknown encoding',
    { operation: 'read', path: 'a.txt', encoding: 'latin1' },
    'FS_INVALID_ARGUMENTS',
  ],
  ['unknown operation', { operation: 'chmod', path: 'a.txt' }, 'FS_INVALID_ARGUMENTS'],
  [
    'list through an outside folder link',
    { operation: 'list', path: 'dirlink-out' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'list through an inside folder link',
    { operation: 'list', path: 'dirlink-in' },
    'FS_SYMLINK_REFUSED',
  ],
  ['list a link in a middle folder', { operation: 'list', path: 'dir/up' }, 'FS_SYMLINK_REFUSED'],
  ['list a file', { operation: 'list', path: 'a.txt' }, 'FS_NOT_A_DIRECTORY'],
  ['list a prefix sibling', { operation: 'list', path: '../root-evil' }, 'FS_PATH_INVALID'],
  [
    'exists through a link reveals nothing',
    { operation: 'exists', path: 'dirlink-out/secret.txt' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'stat through a link',
    { operation: 'stat', path: 'dirlink-out/secret.txt' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'glob from a folder link',
    { operation: 'glob', path: 'dirlink-out', pattern: '*' },
    'FS_SYMLINK_REFUSED',
  ],
  ['glob pattern with ..', { operation: 'glob', pattern: '../*' }, 'FS_INVALID_ARGUMENTS'],
  ['glob absolute pattern', { operation: 'glob', pattern: '/etc/*' }, 'FS_INVALID_ARGUMENTS'],
  [
    'write on a read-only tool',
    { operation: 'write', path: 'x.txt', content: 'x' },
    'FS_WRITE_DISABLED',
  ],
  ['delete on a read-only tool', { operation: 'delete', path: 'a.txt' }, 'FS_WRITE_DISABLED'],
];

describe('FileSystemTool: reading is confined', () => {
  it.for(readRows)('refuses %s', async ([, args, code]) => {
    const result = await call(readTool, args);
    expect(codeOf(result), JSON.stringify(result)).toBe(code);
    expect(JSON.stringify(result)).not.toContain('OUTSIDE');
  });

  it('refuses a device node', async () => {
    const path = existsSync(join(root, 'zero')) ? 'zero' : 'zero-fallback';
    const result = await call(readTool, { operation: 'read', path });
    expect(['FS_NOT_A_FILE', 'FS_SYMLINK_REFUSED']).toContain(codeOf(result));
  });

  it('reads a file inside the root', async () => {
    const content = structured(await call(readTool, { operation: 'read', path: 'dir/sub/c.txt' }));
    expect(content).toMatchObject({
      path: 'dir/sub/c.txt',
      content: 'sea',
      bytes: 3,
      truncated: false,
    });
  });

  it('reads binary content as base64', async () => {
    writeFileSync(join(root, 'bin.dat'), Buffer.from([0, 255, 1, 254]));
    const content = structured(
      await call(readTool, { operation: 'read', path: 'bin.dat', encoding: 'base64' }),
    );
    expect(Buffer.from(content.content as string, 'base64')).toEqual(Buffer.from([0, 255, 1, 254]));
  });

  it('stops reading at maxReadBytes and flags truncation', async () => {
    writeFileSync(join(root, 'big.txt'), 'z'.repeat(5000));
    const tool = new FileSystemTool({ root, maxReadBytes: 100 });
    const content = structured(await call(tool, { operation: 'read', path: 'big.txt' }));
    expect(content).toMatchObject({ bytes: 100, truncated: true });
    expect((content.content as string).length).toBe(100);
  });

  it('reads a file exactly at the limit without truncation', async () => {
    const tool = new FileSystemTool({ root, maxReadBytes: 5000 });
    expect(structured(await call(tool, { operation: 'read', path: 'big.txt' }))).toMatchObject({
      bytes: 5000,
      truncated: false,
    });
  });

  it('reads hard-linked files only when allowHardLinks is set', async () => {
    const tool = new FileSystemTool({ root, allowHardLinks: true });
    expect(structured(await call(tool, { operation: 'read', path: 'hard' })).content).toBe(
      'OUTSIDE',
    );
  });

  it('lists a folder without following links, sorted, with types', async () => {
    const content = structured(await call(readTool, { operation: 'list', path: '.' }));
    const entries = content.entries as { name: string; type: string }[];
    expect(entries.find((entry) => entry.name === 'link-out')?.type).toBe('symlink');
    expect(entries.find((entry) => entry.name === 'dir')?.type).toBe('directory');
    expect(entries.map((entry) => entry.name)).toEqual(
      [...entries.map((entry) => entry.name)].sort(),
    );
    expect(content.truncated).toBe(false);
  });

  it('truncates a list at maxListEntries', async () => {
    const tool = new FileSystemTool({ root, maxListEntries: 3 });
    const content = structured(await call(tool, { operation: 'list', path: '.' }));
    expect((content.entries as unknown[]).length).toBe(3);
    expect(content.truncated).toBe(true);
  });

  it('answers exists and stat for real paths', async () => {
    expect(
      structured(await call(readTool, { operation: 'exists', path: 'missing/deeper/file' })),
    ).toMatchObject({ exists: false });
    expect(
      structured(await call(readTool, { operation: 'exists', path: 'missing' })),
    ).toMatchObject({ exists: false });
    expect(structured(await call(readTool, { operation: 'exists', path: 'dir' }))).toMatchObject({
      exists: true,
      type: 'directory',
    });
    expect(structured(await call(readTool, { operation: 'stat', path: 'a.txt' }))).toMatchObject({
      type: 'file',
      size: 5,
    });
  });

  it('globs without entering links and caps the results', async () => {
    const content = structured(await call(readTool, { operation: 'glob', pattern: '**/*.txt' }));
    const matches = content.matches as string[];
    expect(matches).toContain('dir/sub/c.txt');
    expect(matches.some((match) => match.includes('link') || match.includes('up/'))).toBe(false);
    const capped = new FileSystemTool({ root, maxGlobResults: 2 });
    expect(structured(await call(capped, { operation: 'glob', pattern: '**' }))).toMatchObject({
      truncated: true,
    });
    const visited = new FileSystemTool({ root, maxGlobVisited: 2 });
    expect(structured(await call(visited, { operation: 'glob', pattern: '**' }))).toMatchObject({
      truncated: true,
    });
  });
});

const writeRows: readonly Row[] = [
  [
    'write through a dangling outside link',
    { operation: 'write', path: 'dangling', content: 'x' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'write over a link to an outside file',
    { operation: 'write', path: 'link-out', content: 'x' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'write under an outside folder link',
    { operation: 'write', path: 'dirlink-out/secret.txt', content: 'x' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'write new file under an outside folder link',
    { operation: 'write', path: 'dirlink-out/new.txt', content: 'x' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'write under a middle link',
    { operation: 'write', path: 'dir/up/new.txt', content: 'x' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'write into a prefix sibling',
    { operation: 'write', path: '../root-evil/secret.txt', content: 'x' },
    'FS_PATH_INVALID',
  ],
  ['write to a FIFO', { operation: 'write', path: 'fifo', content: 'x' }, 'FS_NOT_A_FILE'],
  ['write to a folder', { operation: 'write', path: 'dir', content: 'x' }, 'FS_NOT_A_FILE'],
  ['write to the root', { operation: 'write', path: '.', content: 'x' }, 'FS_NOT_A_FILE'],
  [
    'write under a missing folder',
    { operation: 'write', path: 'nope/x.txt', content: 'x' },
    'FS_NOT_FOUND',
  ],
  [
    'write invalid base64',
    { operation: 'write', path: 'b.bin', content: '***', encoding: 'base64' },
    'FS_INVALID_ARGUMENTS',
  ],
  ['write without content', { operation: 'write', path: 'b.bin' }, 'FS_INVALID_ARGUMENTS'],
  [
    'mkdir under an outside link',
    { operation: 'mkdir', path: 'dirlink-out/made' },
    'FS_SYMLINK_REFUSED',
  ],
  ['mkdir over an existing file', { operation: 'mkdir', path: 'a.txt' }, 'FS_ALREADY_EXISTS'],
  [
    'delete a link to an outside file',
    { operation: 'delete', path: 'link-out' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'delete through an outside link',
    { operation: 'delete', path: 'dirlink-out/secret.txt' },
    'FS_SYMLINK_REFUSED',
  ],
  ['delete a non-empty folder', { operation: 'delete', path: 'dir' }, 'FS_NOT_EMPTY'],
  ['delete the root', { operation: 'delete', path: '.' }, 'FS_PATH_INVALID'],
  [
    'move into an outside link',
    { operation: 'move', path: 'a.txt', destination: 'dirlink-out/a.txt' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'move a link',
    { operation: 'move', path: 'link-out', destination: 'moved' },
    'FS_SYMLINK_REFUSED',
  ],
  [
    'move out by ..',
    { operation: 'move', path: 'a.txt', destination: '../outside/a.txt' },
    'FS_PATH_INVALID',
  ],
  [
    'move over an existing file without overwrite',
    { operation: 'move', path: 'a.txt', destination: 'dir/b.txt' },
    'FS_ALREADY_EXISTS',
  ],
  [
    'move a folder into itself',
    { operation: 'move', path: 'dir', destination: 'dir/sub/inner' },
    'FS_INVALID_ARGUMENTS',
  ],
];

describe('FileSystemTool: writing is confined and atomic', () => {
  it.for(writeRows)('refuses %s and changes nothing outside', async ([, args, code]) => {
    const result = await call(writeTool, args);
    expect(codeOf(result), JSON.stringify(result)).toBe(code);
    expect(outsideSecret()).toBe('OUTSIDE');
    expect(readFileSync(join(sibling, 'secret.txt'), 'utf8')).toBe('OUTSIDE');
    expect(existsSync(join(outside, 'new.txt'))).toBe(false);
    expect(existsSync(join(outside, 'made'))).toBe(false);
    expect(existsSync(join(outside, 'a.txt'))).toBe(false);
    expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('hello');
  });

  it('writes a new file atomically with mode 0644 and leaves no temp file', async () => {
    const content = structured(
      await call(writeTool, { operation: 'write', path: 'dir/new.txt', content: 'fresh' }),
    );
    expect(content).toMatchObject({ bytes: 5, created: true });
    expect(readFileSync(join(root, 'dir', 'new.txt'), 'utf8')).toBe('fresh');
    expect(statSync(join(root, 'dir', 'new.txt')).mode & 0o777).toBe(0o644);
    expect(execFileSync('ls', ['-a', join(root, 'dir')], { encoding: 'utf8' })).not.toMatch(
      /\.tmp/,
    );
  });

  it('keeps the mode of a replaced file', async () => {
    writeFileSync(join(root, 'private.txt'), 'old');
    chmodSync(join(root, 'private.txt'), 0o600);
    structured(await call(writeTool, { operation: 'write', path: 'private.txt', content: 'new' }));
    expect(statSync(join(root, 'private.txt')).mode & 0o777).toBe(0o600);
    expect(readFileSync(join(root, 'private.txt'), 'utf8')).toBe('new');
  });

  it('drops setuid and setgid bits when it replaces a file', async () => {
    writeFileSync(join(root, 'suid.bin'), 'old');
    chmodSync(join(root, 'suid.bin'), 0o6755);
    structured(await call(writeTool, { operation: 'write', path: 'suid.bin', content: 'new' }));
    expect(statSync(join(root, 'suid.bin')).mode & 0o7777).toBe(0o755);
  });

  it('replaces a hard link with a new file instead of changing the outside file', async () => {
    writeFileSync(join(base, 'linked-outside.txt'), 'OUTSIDE');
    linkSync(join(base, 'linked-outside.txt'), join(root, 'hard2'));
    structured(await call(writeTool, { operation: 'write', path: 'hard2', content: 'inside' }));
    expect(readFileSync(join(base, 'linked-outside.txt'), 'utf8')).toBe('OUTSIDE');
    expect(readFileSync(join(root, 'hard2'), 'utf8')).toBe('inside');
  });

  it('writes base64 content byte for byte', async () => {
    const bytes = Buffer.from([0, 1, 2, 250, 251, 252]);
    structured(
      await call(writeTool, {
        operation: 'write',
        path: 'bytes.bin',
        content: bytes.toString('base64'),
        encoding: 'base64',
      }),
    );
    expect(readFileSync(join(root, 'bytes.bin'))).toEqual(bytes);
  });

  it('refuses content over maxWriteBytes before writing anything', async () => {
    const tool = new FileSystemTool({ root, allowWrite: true, maxWriteBytes: 10 });
    const result = await call(tool, {
      operation: 'write',
      path: 'large.txt',
      content: 'x'.repeat(11),
    });
    expect(codeOf(result)).toBe('FS_TOO_LARGE');
    expect(existsSync(join(root, 'large.txt'))).toBe(false);
    const base64 = await call(tool, {
      operation: 'write',
      path: 'large.bin',
      content: Buffer.alloc(11).toString('base64'),
      encoding: 'base64',
    });
    expect(codeOf(base64)).toBe('FS_TOO_LARGE');
    expect(
      structured(
        await call(tool, { operation: 'write', path: 'ten.txt', content: 'x'.repeat(10) }),
      ),
    ).toMatchObject({ bytes: 10 });
  });

  it('leaves the old content when a write fails', async () => {
    writeFileSync(join(root, 'keep.txt'), 'original');
    const tool = new FileSystemTool({ root, allowWrite: true, maxWriteBytes: 4 });
    await call(tool, { operation: 'write', path: 'keep.txt', content: 'replacement' });
    expect(readFileSync(join(root, 'keep.txt'), 'utf8')).toBe('original');
  });

  it('makes folders, moves and deletes inside the root', async () => {
    structured(await call(writeTool, { operation: 'mkdir', path: 'made' }));
    writeFileSync(join(root, 'made', 'm.txt'), 'm');
    structured(
      await call(writeTool, { operation: 'move', path: 'made/m.txt', destination: 'made/n.txt' }),
    );
    expect(readFileSync(join(root, 'made', 'n.txt'), 'utf8')).toBe('m');
    writeFileSync(join(root, 'made', 'o.txt'), 'o');
    structured(
      await call(writeTool, {
        operation: 'move',
        path: 'made/o.txt',
        destination: 'made/n.txt',
        overwrite: true,
      }),
    );
    expect(readFileSync(join(root, 'made', 'n.txt'), 'utf8')).toBe('o');
    structured(await call(writeTool, { operation: 'delete', path: 'made/n.txt' }));
    structured(await call(writeTool, { operation: 'delete', path: 'made' }));
    expect(existsSync(join(root, 'made'))).toBe(false);
  });

  it('declares a contract per operation when writable, read and write effects when not', () => {
    const risks = Object.fromEntries(
      Object.entries(writeTool.spec.operationContracts?.operations ?? {}).map(([key, value]) => [
        key,
        value.risk,
      ]),
    );
    expect(risks).toEqual({
      read: 'read-only',
      list: 'read-only',
      exists: 'read-only',
      stat: 'read-only',
      glob: 'read-only',
      mkdir: 'low-risk-write',
      write: 'high-risk-write',
      move: 'high-risk-write',
      'move-overwrite': 'destructive',
      delete: 'destructive',
    });
    expect(writeTool.spec.effect).toBeUndefined();
    expect(readTool.spec.operationContracts).toBeUndefined();
    expect(readTool.spec.effect).toEqual({
      default: 'write',
      argument: 'operation',
      byValue: expect.objectContaining({ read: 'read', glob: 'read', write: 'write' }),
    });
    expect(writeTool.spec.operationArgument).toBe('operation');
    // Every operation stays in the schema so a write reaches the tool and gets FS_WRITE_DISABLED.
    const schema = readTool.spec.inputSchema as {
      properties: { operation: { enum: string[]; description?: string } };
    };
    expect(schema.properties.operation.enum).toContain('write');
    expect(schema.properties.operation.description).toMatch(/disabled/);
    expect(readTool.spec.description).toMatch(/FS_WRITE_DISABLED/);
  });
});

function startFlipper(script: string): ReturnType<typeof spawn> {
  return spawn(process.execPath, ['-e', script], { stdio: 'ignore' });
}

describe('FileSystemTool: swap-for-symlink races', () => {
  it('never returns outside content while a file flips between real file and symlink', async () => {
    const race = join(root, 'race1');
    mkdirSync(race);
    writeFileSync(join(race, 'target'), 'INSIDE');
    const flipper = startFlipper(`
      const fs = require('fs'); const d = ${JSON.stringify(race)}; const s = ${JSON.stringify(join(outside, 'secret.txt'))};
      for (;;) { try { fs.symlinkSync(s, d + '/l'); fs.renameSync(d + '/l', d + '/target');
        fs.writeFileSync(d + '/f', 'INSIDE'); fs.renameSync(d + '/f', d + '/target'); } catch {} }`);
    try {
      const codes = new Set<string>();
      for (let round = 0; round < 300; round += 1) {
        const result = await call(readTool, { operation: 'read', path: 'race1/target' });
        expect(JSON.stringify(result)).not.toContain('OUTSIDE');
        codes.add(codeOf(result) ?? 'ok');
      }
      for (const code of codes) {
        expect(['ok', 'FS_SYMLINK_REFUSED', 'FS_CHANGED_DURING_ACCESS', 'FS_NOT_FOUND']).toContain(
          code,
        );
      }
    } finally {
      // Gone before the afterAll removes the folders it renames in.
      await killAndWait(flipper);
    }
  });

  it('never reads through a folder swapped for an outside link', async () => {
    const race = join(root, 'race2');
    mkdirSync(join(race, 'real'), { recursive: true });
    writeFileSync(join(race, 'real', 'inner.txt'), 'INSIDE');
    const flipper = startFlipper(`
      const fs = require('fs'); const d = ${JSON.stringify(race)}; const o = ${JSON.stringify(outside)};
      fs.renameSync(d + '/real', d + '/d');
      for (;;) { try { fs.renameSync(d + '/d', d + '/real'); fs.symlinkSync(o, d + '/d');
        fs.unlinkSync(d + '/d'); fs.renameSync(d + '/real', d + '/d'); } catch {} }`);
    try {
      for (let round = 0; round < 300; round += 1) {
        const result = await call(readTool, { operation: 'read', path: 'race2/d/secret.txt' });
        expect(JSON.stringify(result)).not.toContain('OUTSIDE');
        const inner = await call(readTool, { operation: 'read', path: 'race2/d/inner.txt' });
        expect(['ok', 'FS_SYMLINK_REFUSED', 'FS_CHANGED_DURING_ACCESS', 'FS_NOT_FOUND']).toContain(
          codeOf(inner) ?? 'ok',
        );
        const listing = await call(readTool, { operation: 'list', path: 'race2/d' });
        expect(JSON.stringify(listing)).not.toContain('"secret.txt"');
      }
    } finally {
      // Gone before the afterAll removes the folders it renames in.
      await killAndWait(flipper);
    }
  });

  it('never globs into a folder swapped for an outside link', async () => {
    const race = join(root, 'race4');
    mkdirSync(join(race, 'real', 'deep'), { recursive: true });
    writeFileSync(join(race, 'real', 'deep', 'inner.txt'), 'INSIDE');
    const flipper = startFlipper(`
      const fs = require('fs'); const d = ${JSON.stringify(race)}; const o = ${JSON.stringify(outside)};
      fs.renameSync(d + '/real', d + '/d');
      for (;;) { try { fs.renameSync(d + '/d', d + '/real'); fs.symlinkSync(o, d + '/d');
        fs.unlinkSync(d + '/d'); fs.renameSync(d + '/real', d + '/d'); } catch {} }`);
    try {
      for (let round = 0; round < 200; round += 1) {
        const result = await call(readTool, { operation: 'glob', path: 'race4', pattern: '**' });
        expect(JSON.stringify(result)).not.toContain('secret.txt');
      }
    } finally {
      // Gone before the afterAll removes the folders it renames in.
      await killAndWait(flipper);
    }
  });

  it('never writes into a folder swapped for an outside link', async () => {
    const race = join(root, 'race3');
    mkdirSync(join(race, 'real'), { recursive: true });
    const flipper = startFlipper(`
      const fs = require('fs'); const d = ${JSON.stringify(race)}; const o = ${JSON.stringify(outside)};
      fs.renameSync(d + '/real', d + '/d');
      for (;;) { try { fs.renameSync(d + '/d', d + '/real'); fs.symlinkSync(o, d + '/d');
        fs.unlinkSync(d + '/d'); fs.renameSync(d + '/real', d + '/d'); } catch {} }`);
    try {
      for (let round = 0; round < 200; round += 1) {
        await call(writeTool, { operation: 'write', path: `race3/d/w${round}.txt`, content: 'x' });
        await call(writeTool, { operation: 'mkdir', path: `race3/d/m${round}` });
      }
      const leaked = execFileSync('ls', ['-a', outside], { encoding: 'utf8' });
      expect(leaked).not.toMatch(/w\d+\.txt|m\d+|\.tmp/);
    } finally {
      // Gone before the afterAll removes the folders it renames in.
      await killAndWait(flipper);
    }
  });
});

describe('FileSystemTool options', () => {
  it.each([
    ['no root', { root: undefined }],
    ['missing root', { root: '/nonexistent/toolfence' }],
    ['root is a file', { root: '/etc/hostname' }],
    ['allowWrite as a string', { allowWrite: 'yes' }],
    ['maxReadBytes as a boolean', { maxReadBytes: true }],
    ['maxWriteBytes zero', { maxWriteBytes: 0 }],
    ['maxListEntries fractional', { maxListEntries: 1.5 }],
    ['name with spaces', { name: 'file system' }],
  ])('rejects %s', (_name, options) => {
    const withRoot = 'root' in options ? options : { root: base, ...options };
    expect(() => new FileSystemTool(withRoot as never)).toThrow(FileSystemToolOptionsError);
  });

  it('takes the real path of a symlinked root once', () => {
    const alias = join(base, 'alias');
    symlinkSync(root, alias);
    expect(new FileSystemTool({ root: alias }).root).toBe(root);
  });
});
