import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileSystemTool } from '../src/builtin/file-system-tool.js';
import { FileSystemToolOptionsError } from '../src/builtin/file-system-tool-options-error.js';
import type { JsonObject, ToolResult } from '../src/registry/tool.js';
import { createToolContext } from '../src/registry/tool-context.js';

const context = createToolContext({ runId: 'fs-paths' });
let base: string;
let root: string;
let alias: string;
let outside: string;
let tool: FileSystemTool;
let writer: FileSystemTool;

const LONG_ASCII = 'x'.repeat(255);
// 127 two-byte characters: 254 bytes, one under the 255-byte segment limit.
const LONG_UNICODE = 'é'.repeat(127);
const DECOMPOSED = 'cafe\u0301.txt';

// Names that are legal on Linux and that a model plausibly sends; each holds its own name.
const FILES = [
  'a.txt',
  'dir/b.txt',
  'dir/sub/c.txt',
  'héllo.txt',
  '日本語/ファイル.txt',
  'emoji 🎉.txt',
  'my file.txt',
  ' leading space.txt',
  'trailing dot.',
  'trailing space ',
  'note:colon.txt',
  'con',
  'aux.txt',
  'nul',
  'prn.log',
  'com1',
  'LPT1.txt',
  '.env',
  '.hidden/inner.txt',
  '..foo',
  'foo..bar',
  '...',
  LONG_ASCII,
  LONG_UNICODE,
  'deep/a/b/c/d/e/f.txt',
  'file(1).txt',
  '[brackets].txt',
  '#hash&amp.txt',
  'a%20b.txt',
  '-dash.txt',
  '*star?.txt',
  '$HOME.txt',
  "'single'.txt",
  '"double".txt',
  'semi;colon.txt',
  'Makefile',
  'UPPER.TXT',
  DECOMPOSED,
];

type Benign = readonly [label: string, args: () => JsonObject, expected: Record<string, unknown>];

const read = (path: string, expectedPath = path): Benign => [
  `read ${JSON.stringify(path)}`,
  () => ({ operation: 'read', path }),
  { path: expectedPath, content: expectedPath },
];

const benign: readonly Benign[] = [
  read('a.txt'),
  ['read ./a.txt', () => ({ operation: 'read', path: './a.txt' }), { path: 'a.txt' }],
  ['read a/./b', () => ({ operation: 'read', path: 'dir/./b.txt' }), { path: 'dir/b.txt' }],
  ['read ./a/./b', () => ({ operation: 'read', path: './dir/./b.txt' }), { path: 'dir/b.txt' }],
  ['read a//b', () => ({ operation: 'read', path: 'dir//b.txt' }), { path: 'dir/b.txt' }],
  [
    'read a///b',
    () => ({ operation: 'read', path: 'dir///sub//c.txt' }),
    { path: 'dir/sub/c.txt' },
  ],
  ['read a/b/../c', () => ({ operation: 'read', path: 'dir/sub/../b.txt' }), { path: 'dir/b.txt' }],
  ['read a/../b', () => ({ operation: 'read', path: 'dir/../a.txt' }), { path: 'a.txt' }],
  [
    'read a/b/../../c',
    () => ({ operation: 'read', path: 'dir/sub/../../a.txt' }),
    { path: 'a.txt' },
  ],
  ['read a/./../b', () => ({ operation: 'read', path: 'dir/./../a.txt' }), { path: 'a.txt' }],
  [
    'read an absolute path inside the root',
    () => ({ operation: 'read', path: join(alias, 'dir', 'b.txt') }),
    { path: 'dir/b.txt' },
  ],
  [
    'read an absolute path through the configured (symlinked) root',
    () => ({ operation: 'read', path: `${alias}/a.txt` }),
    { path: 'a.txt' },
  ],
  [
    'read an absolute path with doubled separators',
    () => ({ operation: 'read', path: `${alias}//dir//b.txt` }),
    { path: 'dir/b.txt' },
  ],
  ['list dir/', () => ({ operation: 'list', path: 'dir/' }), { path: 'dir' }],
  ['list dir//', () => ({ operation: 'list', path: 'dir//' }), { path: 'dir' }],
  ['list ./dir/', () => ({ operation: 'list', path: './dir/' }), { path: 'dir' }],
  ['list .', () => ({ operation: 'list', path: '.' }), { path: '.' }],
  ['list ./', () => ({ operation: 'list', path: './' }), { path: '.' }],
  ['list without a path', () => ({ operation: 'list' }), { path: '.' }],
  ['list the absolute root', () => ({ operation: 'list', path: alias }), { path: '.' }],
  [
    'list the absolute root with /',
    () => ({ operation: 'list', path: `${alias}/` }),
    { path: '.' },
  ],
  ['list dir/sub/..', () => ({ operation: 'list', path: 'dir/sub/..' }), { path: 'dir' }],
  ['stat dir/', () => ({ operation: 'stat', path: 'dir/' }), { type: 'directory' }],
  ['stat .', () => ({ operation: 'stat', path: '.' }), { type: 'directory' }],
  ['exists ./a.txt', () => ({ operation: 'exists', path: './a.txt' }), { exists: true }],
  [
    'glob from dir/',
    () => ({ operation: 'glob', path: 'dir/', pattern: '*.txt' }),
    { path: 'dir' },
  ],
  ...FILES.filter((file) => !['a.txt', 'dir/b.txt'].includes(file)).map((file) => read(file)),
  read('日本語//ファイル.txt', '日本語/ファイル.txt'),
  read(`./${LONG_ASCII}`, LONG_ASCII),
];

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'toolfence-fs-paths-'));
  root = join(base, 'root');
  outside = join(base, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(join(outside, 'secret.txt'), 'OUTSIDE');
  mkdirSync(join(base, 'root-evil'));
  writeFileSync(join(base, 'root-evil', 'secret.txt'), 'OUTSIDE');
  for (const file of FILES) {
    const parts = file.split('/');
    if (parts.length > 1) mkdirSync(join(root, ...parts.slice(0, -1)), { recursive: true });
    writeFileSync(join(root, file), file);
  }
  alias = join(base, 'alias');
  symlinkSync(root, alias);
  tool = new FileSystemTool({ root: alias });
  writer = new FileSystemTool({ root, allowWrite: true });
});

afterAll(async () => {
  await tool.close();
  await writer.close();
  rmSync(base, { recursive: true, force: true });
});

function structured(result: ToolResult): Record<string, unknown> {
  expect(result.isError, JSON.stringify(result)).not.toBe(true);
  return result.structuredContent as Record<string, unknown>;
}

describe('FileSystemTool: benign paths a model sends are accepted', () => {
  it('has at least 40 rows', () => {
    expect(benign.length).toBeGreaterThanOrEqual(40);
  });

  it.for(benign)('accepts %s', async ([, args, expected]) => {
    const content = structured(await tool.invoke(args(), context));
    expect(content).toMatchObject(expected);
  });

  it.each<readonly [string, JsonObject, string]>([
    ['write ./new.txt', { operation: 'write', path: './new.txt', content: 'n' }, 'new.txt'],
    ['write dir//new.txt', { operation: 'write', path: 'dir//w.txt', content: 'w' }, 'dir/w.txt'],
    [
      'write a unicode name',
      { operation: 'write', path: 'ünï cødé.md', content: 'u' },
      'ünï cødé.md',
    ],
    ['write a trailing-dot name', { operation: 'write', path: 'v1.', content: 'v' }, 'v1.'],
    ['mkdir made/', { operation: 'mkdir', path: 'made/' }, 'made'],
    ['mkdir ./made2', { operation: 'mkdir', path: './made2' }, 'made2'],
    ['mkdir con', { operation: 'mkdir', path: 'made/con' }, 'made/con'],
    // 255-byte names: the atomic write's temp name must stay within 255 bytes too.
    ...['漢'.repeat(85), `${'🎉'.repeat(63)}abc`, `${'é'.repeat(127)}x`, 'y'.repeat(255)].map(
      (name) =>
        [
          `write a 255-byte name of ${[...name][0]}`,
          { operation: 'write', path: name, content: 'long' },
          name,
        ] satisfies readonly [string, JsonObject, string],
    ),
  ])('accepts %s for writing', async (_label, args, path) => {
    expect(structured(await writer.invoke(args, context))).toMatchObject({ path });
    expect(existsSync(join(root, path))).toBe(true);
  });

  it('moves and deletes with normalised paths', async () => {
    writeFileSync(join(root, 'to-move.txt'), 'm');
    expect(
      structured(
        await writer.invoke(
          { operation: 'move', path: './to-move.txt', destination: 'dir/sub/../moved.txt' },
          context,
        ),
      ),
    ).toEqual({ from: 'to-move.txt', to: 'dir/moved.txt' });
    expect(
      structured(
        await writer.invoke({ operation: 'delete', path: `${root}/dir/moved.txt` }, context),
      ),
    ).toMatchObject({ path: 'dir/moved.txt' });
  });
});

type Refusal = readonly [label: string, path: () => string, code: string, message: RegExp];

const refusals: readonly Refusal[] = [
  [
    'absolute path outside the root',
    () => join(outside, 'secret.txt'),
    'FS_PATH_INVALID',
    /absolute path outside/,
  ],
  [
    'absolute prefix sibling',
    () => `${root}-evil/secret.txt`,
    'FS_PATH_INVALID',
    /absolute path outside/,
  ],
  [
    'absolute path that climbs out',
    () => `${alias}/../outside/secret.txt`,
    'FS_PATH_INVALID',
    /leaves the workspace root/,
  ],
  [
    // The tool is configured through the alias: the real path is a second spelling of the root,
    // refused so that a pathUnder rule written on the configured root sees every absolute path.
    'the real path of a root configured through a link',
    () => join(root, 'a.txt'),
    'FS_PATH_INVALID',
    /its real path\); this tool takes absolute paths only under the root as configured, ".*alias"/,
  ],
  ['the real path of the root itself', () => root, 'FS_PATH_INVALID', /its real path/],
  [
    '.. above the root',
    () => '../outside/secret.txt',
    'FS_PATH_INVALID',
    /leaves the workspace root/,
  ],
  ['bare ..', () => '..', 'FS_PATH_INVALID', /leaves/],
  ['a/../../x', () => 'dir/../../outside/secret.txt', 'FS_PATH_INVALID', /leaves/],
  ['empty', () => '', 'FS_PATH_INVALID', /empty/],
  ['NUL', () => 'a.txt\u0000x', 'FS_PATH_INVALID', /control character at position 5/],
  ['newline', () => 'a\nb', 'FS_PATH_INVALID', /control character/],
  ['backslash', () => 'dir\\b.txt', 'FS_PATH_INVALID', /backslash/],
  ['drive letter', () => 'C:/Windows/win.ini', 'FS_PATH_INVALID', /drive letter/],
  ['file URL', () => 'file:///etc/passwd', 'FS_PATH_INVALID', /URL/],
  ['https URL', () => 'https://example.com/a', 'FS_PATH_INVALID', /URL/],
  ['tilde', () => '~/.ssh/id_rsa', 'FS_PATH_INVALID', /"~"/],
  ['over-long name', () => 'x'.repeat(256), 'FS_PATH_INVALID', /longer than 255 bytes/],
  [
    'over-long path',
    () => Array(1000).fill('abcd').join('/'),
    'FS_PATH_INVALID',
    /longer than 4096/,
  ],
  ['a file used as a folder', () => 'a.txt/x', 'FS_NOT_A_DIRECTORY', /"a\.txt" is not a folder/],
  ['a missing folder', () => 'nope/deeper/x.txt', 'FS_NOT_FOUND', /"nope" does not exist/],
  ['a missing file', () => 'dir/nothing.txt', 'FS_NOT_FOUND', /"dir\/nothing\.txt" does not exist/],
];

describe('FileSystemTool: refusals name the problem and show an accepted form', () => {
  it.for(refusals)('refuses %s', async ([, path, code, message]) => {
    const result = await tool.invoke({ operation: 'read', path: path() }, context);
    expect(result.isError).toBe(true);
    expect(result.metadata?.code).toBe(code);
    const text = (result.content[0] as { text: string }).text;
    expect(text).toMatch(message);
    expect(JSON.stringify(result)).not.toContain('OUTSIDE');
    if (code === 'FS_PATH_INVALID') expect(text).toContain('for example "src/index.ts"');
  });

  it('names the link component and the option when a link is refused', async () => {
    symlinkSync('dir', join(root, 'dir-link'));
    const result = await tool.invoke({ operation: 'read', path: 'dir-link/b.txt' }, context);
    expect(result.metadata?.code).toBe('FS_SYMLINK_REFUSED');
    const text = (result.content[0] as { text: string }).text;
    expect(text).toContain('"dir-link" is a symbolic link');
    expect(text).toContain("symlinks: 'follow-inside'");
  });

  it('does not echo control characters back', async () => {
    const result = await tool.invoke({ operation: 'read', path: 'a\u001b[2Jb' }, context);
    expect((result.content[0] as { text: string }).text).not.toContain('\u001b');
  });
});

describe('FileSystemTool: portableNames refuses names Windows cannot hold', () => {
  it.each([
    ['con', 'Windows device name'],
    ['aux.txt', 'Windows device name'],
    ['dir/NUL.log', 'Windows device name'],
    ['COM1', 'Windows device name'],
    ['trailing dot.', 'ends with a dot or a space'],
    ['trailing space ', 'ends with a dot or a space'],
    ['note:colon.txt', 'contains one of'],
    ['a.txt::$DATA', 'contains one of'],
    ['*star?.txt', 'contains one of'],
    ['"double".txt', 'contains one of'],
  ])('refuses %j', async (path, why) => {
    const portable = new FileSystemTool({ root, portableNames: true });
    try {
      const result = await portable.invoke({ operation: 'read', path }, context);
      expect(result.metadata?.code).toBe('FS_PATH_INVALID');
      expect(JSON.stringify(result)).toContain(why);
      expect(JSON.stringify(result)).toContain('portableNames');
      // The same name is ordinary without the option.
      expect((await tool.invoke({ operation: 'exists', path }, context)).isError).not.toBe(true);
    } finally {
      await portable.close();
    }
  });

  it('still accepts portable names', async () => {
    const portable = new FileSystemTool({ root, portableNames: true });
    try {
      expect(
        structured(await portable.invoke({ operation: 'read', path: './dir//b.txt' }, context)),
      ).toMatchObject({ content: 'dir/b.txt' });
    } finally {
      await portable.close();
    }
  });
});

describe('FileSystemTool options are checked', () => {
  it.each([
    [
      'a misspelled key',
      { allowWrites: true },
      /Unknown FileSystemTool option "allowWrites" \(did you mean "allowWrite"\?\)/,
    ],
    ['an unknown key', { readTimout: 5 }, /Unknown FileSystemTool option/],
    [
      'symlinks: follow',
      { symlinks: 'follow' },
      /symlinks must be one of 'refuse', 'follow-inside'/,
    ],
    ['confinement: none', { confinement: 'none' }, /confinement must be one of/],
    ['portableNames as a string', { portableNames: 'yes' }, /portableNames must be a boolean/],
    [
      'maxSymlinkHops without follow-inside',
      { maxSymlinkHops: 4 },
      /only with symlinks: 'follow-inside'/,
    ],
    [
      'maxSymlinkHops zero',
      { symlinks: 'follow-inside', maxSymlinkHops: 0 },
      /positive safe integer/,
    ],
  ])('refuses %s', (_label, options, message) => {
    expect(() => new FileSystemTool({ root, ...options } as never)).toThrow(message);
    expect(() => new FileSystemTool({ root, ...options } as never)).toThrow(
      FileSystemToolOptionsError,
    );
  });

  it('refuses a root whose ".." after a link names another folder than it reads', () => {
    // deep/inner/x is the folder the kernel opens for "hop/../x" (hop links to deep/inner/y);
    // read lexically, the same text names base/x, another folder.
    mkdirSync(join(base, 'deep', 'inner', 'y'), { recursive: true });
    mkdirSync(join(base, 'deep', 'inner', 'x'));
    mkdirSync(join(base, 'x'));
    symlinkSync(join(base, 'deep', 'inner', 'y'), join(base, 'hop'));
    let caught: unknown;
    try {
      new FileSystemTool({ root: `${base}/hop/../x` });
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(FileSystemToolOptionsError);
    expect(caught).toMatchObject({ details: { option: 'root', reason: 'root-changed' } });
    expect((caught as Error).message).toMatch(/"\.\." after a link/);
  });

  it('documents exactly the options it accepts in the README table', () => {
    let message = '';
    try {
      new FileSystemTool({ root, zzz: 1 } as never);
    } catch (error) {
      message = (error as Error).message;
    }
    const accepted = (/accepted: (.*)$/.exec(message)?.[1] ?? '').split(', ').sort();
    expect(accepted).toContain('root');
    const readme = readFileSync(join(import.meta.dirname, '..', 'README.md'), 'utf8');
    const section = readme.split('### `new FileSystemTool(options)`')[1]?.split('\n\n')[1] ?? '';
    const documented = [...section.matchAll(/^\| ((?:`\w+`(?: \/ )?)+) \|/gm)]
      .flatMap((row) => (row[1] as string).split(' / '))
      .map((cell) => cell.replaceAll('`', ''))
      .sort();
    expect(documented).toEqual(accepted);
  });

  it('lets a call in flight at close() finish in its own root, then closes the descriptor', async () => {
    const tenantA = join(base, 'tenant-a');
    const tenantB = join(base, 'tenant-b');
    mkdirSync(tenantA);
    mkdirSync(tenantB);
    writeFileSync(join(tenantA, 'notes.txt'), 'A');
    writeFileSync(join(tenantB, 'notes.txt'), 'B-PRIVATE');
    const descriptors = (): number => readdirSync('/proc/self/fd').length;
    const before = descriptors();
    let foreign = 0;
    for (let round = 0; round < 20; round += 1) {
      const a = new FileSystemTool({ root: tenantA });
      const pending = a.invoke({ operation: 'read', path: 'notes.txt' }, context);
      await a.close();
      // The next descriptor the process opens would take the closed one's number.
      const b = new FileSystemTool({ root: tenantB });
      const result = await pending;
      if (JSON.stringify(result).includes('B-PRIVATE')) foreign += 1;
      expect(structured(result)).toMatchObject({ content: 'A' });
      await b.close();
      const after = await a.invoke({ operation: 'read', path: 'notes.txt' }, context);
      expect(after.metadata?.code).toBe('FS_IO_ERROR');
    }
    expect(foreign).toBe(0);
    expect(descriptors()).toBe(before);
  });

  it('fails calls after close', async () => {
    const closing = new FileSystemTool({ root });
    await closing.close();
    const result = await closing.invoke({ operation: 'read', path: 'a.txt' }, context);
    expect(result.metadata?.code).toBe('FS_IO_ERROR');
    expect(JSON.stringify(result)).toContain('closed');
  });
});
