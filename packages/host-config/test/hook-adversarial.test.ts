import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileUrl, runHook, stdinFor, stdinShapes } from './support/run-hook.js';

type Expectation =
  | { readonly deny: string }
  | { readonly pass: true }
  | { readonly rewrite: (input: Record<string, unknown>) => void };

interface Row {
  readonly name: string;
  readonly input: (dir: string) => unknown;
  readonly env?: (dir: string) => Record<string, string>;
  readonly raw?: (dir: string) => string;
  readonly expect: Expectation;
  /** Platforms the row applies to (default: all). Windows has no FIFOs, devices or /proc. */
  readonly only?: 'posix' | 'linux' | 'win32';
}

const WINDOWS = process.platform === 'win32';
function applies(row: Row): boolean {
  if (row.only === undefined) return true;
  if (row.only === 'win32') return WINDOWS;
  if (row.only === 'linux') return process.platform === 'linux';
  return !WINDOWS;
}

let dir: string;
let socketServer: Server | undefined;
const body = 'attachment bytes\n';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolfence-adversarial-'));
  await writeFile(join(dir, 'a.txt'), body);
  await writeFile(join(dir, 'b.txt'), body);
  await writeFile(join(dir, 'a b é.txt'), body);
  await writeFile(join(dir, 'noext'), Buffer.from('%PDF-1.7\n'));
  await mkdir(join(dir, 'allowed'));
  await mkdir(join(dir, 'outside'));
  await writeFile(join(dir, 'allowed', 'in.txt'), body);
  await writeFile(join(dir, 'outside', 'secret.txt'), body);
  if (WINDOWS) return; // symlinks need a privilege there; no FIFOs, no unix sockets in folders
  await symlink(join(dir, 'outside', 'secret.txt'), join(dir, 'allowed', 'escape.txt'));
  await symlink('/dev/zero', join(dir, 'zero-link'));
  await symlink(join(dir, 'loop-b'), join(dir, 'loop-a'));
  await symlink(join(dir, 'loop-a'), join(dir, 'loop-b'));
  spawnSync('mkfifo', [join(dir, 'fifo')]);
  socketServer = createServer();
  await new Promise<void>((resolve) => socketServer?.listen(join(dir, 'sock'), resolve));
});

afterAll(async () => {
  if (socketServer !== undefined) {
    const server = socketServer;
    await new Promise((resolve) => server.close(resolve));
  }
  await rm(dir, { recursive: true, force: true });
});

const one = (source: string, extra: Record<string, unknown> = {}) => ({
  attachment: { source, ...extra },
});
const url = (name: string) => fileUrl(join(dir, name));

/**
 * A Claude Code event whose tool input holds an attachment beside `levels` nested lists. Built as
 * text: JSON.stringify itself cannot serialise such a value.
 */
function deepEvent(source: string, levels: number): string {
  return eventText(
    `{"attachment":{"source":"${source}"},"nested":${'['.repeat(levels)}${']'.repeat(levels)}}`,
  );
}

/** A Claude Code event around a tool input given as JSON text. */
function eventText(toolInput: string): string {
  const head = JSON.stringify({ ...stdinShapes['claude-code']({}), tool_input: undefined });
  return `${head.slice(0, -1)},"tool_input":${toolInput}}\n`;
}

const rows: Row[] = [
  {
    name: 'file:// URL in filename',
    input: () => one('data:text/plain;base64,YQ==', { filename: 'file:///etc/passwd' }),
    expect: { deny: 'HOOK_FILE_URL_IN_METADATA' },
  },
  {
    name: 'file:// URL in mime_type',
    input: () => one(url('a.txt'), { mime_type: 'file:///etc/passwd' }),
    expect: { deny: 'HOOK_FILE_URL_IN_METADATA' },
  },
  {
    name: 'padded upper-case FILE: in filename of a list item',
    input: () => ({
      attachments: [{ source: 'https://x.test/a', filename: '  FILE:///etc/passwd' }],
    }),
    expect: { deny: 'HOOK_FILE_URL_IN_METADATA' },
  },
  {
    name: 'file larger than the per-file limit',
    input: () => one(url('a.txt')),
    env: () => ({ TOOLFENCE_HOOK_MAX_BYTES: String(body.length - 1) }),
    expect: { deny: 'HOOK_FILE_TOO_LARGE' },
  },
  {
    name: 'two files over the per-call budget',
    input: () => ({ attachments: [{ source: url('a.txt') }, { source: url('b.txt') }] }),
    env: () => ({ TOOLFENCE_HOOK_MAX_TOTAL_BYTES: String(body.length * 2 - 1) }),
    expect: { deny: 'HOOK_TOTAL_TOO_LARGE' },
  },
  {
    name: 'missing file',
    input: () => one(url('nope.txt')),
    expect: { deny: 'HOOK_FILE_NOT_FOUND' },
  },
  {
    name: 'path through a regular file',
    input: () => one(`${url('a.txt')}/child`),
    expect: { deny: 'HOOK_FILE_NOT_FOUND' },
  },
  {
    name: 'symlink loop',
    input: () => one(url('loop-a')),
    expect: { deny: 'HOOK_FILE_UNREADABLE' },
    only: 'posix',
  },
  {
    name: 'file URL with a remote host',
    input: () => one('file://evil.example/etc/passwd'),
    expect: { deny: 'HOOK_FILE_URL_HOST' },
  },
  {
    name: 'file://localhost/path reads the local file (RFC 8089)',
    input: () => one(`file://localhost${url('a.txt').slice('file://'.length)}`),
    expect: { rewrite: (input) => expect(input.attachment).toMatchObject({ filename: 'a.txt' }) },
  },
  {
    name: 'file://LOCALHOST/path: the host is case-insensitive',
    input: () => one(`file://LocalHost${url('a.txt').slice('file://'.length)}`),
    expect: { rewrite: (input) => expect(input.attachment).toMatchObject({ filename: 'a.txt' }) },
  },
  {
    name: 'localhost with a port is a host, not this machine',
    input: () => one(`file://localhost:80${url('a.txt').slice('file://'.length)}`),
    expect: { deny: 'HOOK_FILE_URL_HOST' },
  },
  {
    name: 'a host that starts with localhost is a remote host',
    input: () => one(`file://localhost.evil.example${url('a.txt').slice('file://'.length)}`),
    expect: { deny: 'HOOK_FILE_URL_HOST' },
  },
  {
    name: 'file://localhost with no path',
    input: () => one('file://localhost'),
    expect: { deny: 'HOOK_FILE_URL_HOST' },
  },
  {
    name: 'input nested 5,000 levels deep (denied before any file is read)',
    input: () => ({}),
    raw: () => deepEvent(url('nope.txt'), 5000),
    expect: { deny: 'HOOK_INPUT_TOO_DEEP' },
  },
  {
    name: 'input nested 200,000 levels deep',
    input: () => ({}),
    raw: () => deepEvent(url('nope.txt'), 200_000),
    expect: { deny: 'HOOK_INPUT_TOO_DEEP' },
  },
  {
    name: 'deep nesting inside the attachment object itself',
    input: () => ({}),
    raw: () =>
      eventText(
        `{"attachment":{"source":"${url('a.txt')}","meta":${'{"x":'.repeat(300)}1${'}'.repeat(300)}}}`,
      ),
    expect: { deny: 'HOOK_INPUT_TOO_DEEP' },
  },
  {
    name: 'nesting one level deeper than TOOLFENCE_HOOK_MAX_DEPTH',
    input: () => ({}),
    raw: () => deepEvent(url('a.txt'), 10),
    env: () => ({ TOOLFENCE_HOOK_MAX_DEPTH: '10' }),
    expect: { deny: 'HOOK_INPUT_TOO_DEEP' },
  },
  {
    name: 'nesting exactly at TOOLFENCE_HOOK_MAX_DEPTH is rewritten',
    input: () => ({}),
    raw: () => deepEvent(url('a.txt'), 9),
    env: () => ({ TOOLFENCE_HOOK_MAX_DEPTH: '10' }),
    expect: { rewrite: (input) => expect(input.attachment).toMatchObject({ filename: 'a.txt' }) },
  },
  {
    name: 'the default depth limit (100) admits 99 nested lists beside the attachment',
    input: () => ({}),
    raw: () => deepEvent(url('a.txt'), 99),
    expect: { rewrite: (input) => expect(input.attachment).toMatchObject({ filename: 'a.txt' }) },
  },
  {
    name: 'TOOLFENCE_HOOK_MAX_DEPTH above its ceiling (config invalid, fail closed)',
    input: () => one(url('a.txt')),
    env: () => ({ TOOLFENCE_HOOK_MAX_DEPTH: '1001' }),
    expect: { deny: 'HOOK_CONFIG_INVALID' },
  },
  {
    name: 'UNC-style file URL (file:////server/share)',
    input: () => one('file:////server/share/x'),
    expect: { deny: 'HOOK_FILE_NOT_FOUND' },
    only: 'posix',
  },
  {
    name: 'relative file: path',
    input: () => one('file:a.txt'),
    expect: { deny: 'HOOK_FILE_PATH_RELATIVE' },
  },
  {
    name: 'dot-relative file: path',
    input: () => one('file:./a.txt'),
    expect: { deny: 'HOOK_FILE_PATH_RELATIVE' },
  },
  {
    name: 'single-slash file: path',
    input: () => one(`file:${join(dir, 'a.txt')}`),
    expect: { deny: 'HOOK_FILE_PATH_RELATIVE' },
  },
  { name: 'directory', input: () => one(fileUrl(dir)), expect: { deny: 'HOOK_NOT_REGULAR_FILE' } },
  {
    name: 'FIFO (must not hang)',
    input: () => one(url('fifo')),
    expect: { deny: 'HOOK_NOT_REGULAR_FILE' },
    only: 'posix',
  },
  {
    name: 'unix socket',
    input: () => one(url('sock')),
    expect: { deny: 'HOOK_NOT_REGULAR_FILE' },
    only: 'posix',
  },
  {
    name: '/dev/zero (must not hang)',
    input: () => one('file:///dev/zero'),
    expect: { deny: 'HOOK_NOT_REGULAR_FILE' },
    only: 'posix',
  },
  {
    name: '/dev/null',
    input: () => one('file:///dev/null'),
    expect: { deny: 'HOOK_NOT_REGULAR_FILE' },
    only: 'posix',
  },
  {
    name: 'symlink to /dev/zero',
    input: () => one(url('zero-link')),
    expect: { deny: 'HOOK_NOT_REGULAR_FILE' },
    only: 'posix',
  },
  {
    name: 'pseudo-file whose size is 0 but reads more (/proc/version)',
    input: () => one('file:///proc/version'),
    // /proc is a credential location by default; this row checks the reader behind that list.
    env: () => ({ TOOLFENCE_HOOK_DENY_CREDENTIAL_FILES: '0' }),
    expect: { deny: 'HOOK_FILE_CHANGED' },
    only: 'linux',
  },
  {
    name: 'file outside the allowlist',
    input: () => one(url('outside/secret.txt')),
    env: (d) => ({ TOOLFENCE_HOOK_ALLOWED_ROOTS: join(d, 'allowed') }),
    expect: { deny: 'HOOK_PATH_NOT_ALLOWED' },
  },
  {
    name: 'symlink inside the allowlist pointing outside',
    input: () => one(url('allowed/escape.txt')),
    env: (d) => ({ TOOLFENCE_HOOK_ALLOWED_ROOTS: join(d, 'allowed') }),
    expect: { deny: 'HOOK_PATH_NOT_ALLOWED' },
    only: 'posix',
  },
  {
    name: 'dot-dot escape from an allowed root',
    input: () => one(`${fileUrl(join(dir, 'allowed'))}/../outside/secret.txt`),
    env: (d) => ({ TOOLFENCE_HOOK_ALLOWED_ROOTS: join(d, 'allowed') }),
    expect: { deny: 'HOOK_PATH_NOT_ALLOWED' },
  },
  {
    name: 'sibling folder sharing the allowed root as a name prefix',
    input: () => one(url('outside/secret.txt')),
    env: (d) => ({ TOOLFENCE_HOOK_ALLOWED_ROOTS: join(d, 'out') }),
    expect: { deny: 'HOOK_PATH_NOT_ALLOWED' },
  },
  {
    name: 'relative allowlist root (config invalid, fail closed)',
    input: () => one(url('a.txt')),
    env: () => ({ TOOLFENCE_HOOK_ALLOWED_ROOTS: 'relative/dir' }),
    expect: { deny: 'HOOK_CONFIG_INVALID' },
  },
  {
    name: 'non-numeric size limit (config invalid, fail closed)',
    input: () => one(url('a.txt')),
    env: () => ({ TOOLFENCE_HOOK_MAX_BYTES: '10MB' }),
    expect: { deny: 'HOOK_CONFIG_INVALID' },
  },
  {
    name: 'explicit config file that does not exist',
    input: () => one(url('a.txt')),
    env: (d) => ({ TOOLFENCE_HOOK_CONFIG: join(d, 'missing-config.json') }),
    expect: { deny: 'HOOK_CONFIG_INVALID' },
  },
  {
    name: 'percent-encoded slash (%2F)',
    input: () => one(`${fileUrl(dir)}%2Fa.txt`),
    expect: { deny: 'HOOK_FILE_URL_INVALID' },
  },
  {
    name: 'percent-encoded NUL (%00)',
    input: () => one(`${url('a.txt')}%00.png`),
    expect: { deny: 'HOOK_FILE_URL_INVALID' },
  },
  {
    name: 'malformed percent-encoding',
    input: () => one(`${fileUrl(dir)}/a%zz.txt`),
    expect: { deny: 'HOOK_FILE_URL_INVALID' },
  },
  {
    name: 'percent-encoding that is not UTF-8',
    input: () => one(`${fileUrl(dir)}/a%FF.txt`),
    expect: { deny: 'HOOK_FILE_URL_INVALID' },
  },
  {
    name: 'query string',
    input: () => one(`${url('a.txt')}?x=1`),
    expect: { deny: 'HOOK_FILE_URL_INVALID' },
  },
  {
    name: 'fragment',
    input: () => one(`${url('a.txt')}#top`),
    expect: { deny: 'HOOK_FILE_URL_INVALID' },
  },
  {
    name: 'data: source passes through',
    input: () => one('data:text/plain;base64,YQ=='),
    expect: { pass: true },
  },
  {
    name: 'https source passes through',
    input: () => one('https://example.com/a.pdf'),
    expect: { pass: true },
  },
  {
    name: 'http source passes through',
    input: () => one('http://example.com/a.pdf'),
    expect: { pass: true },
  },
  {
    name: 'top-level source key is not an attachment',
    input: () => ({ source: url('a.txt') }),
    expect: { pass: true },
  },
  {
    name: 'attachment object without source',
    input: () => ({ attachment: { path: url('a.txt') } }),
    expect: { pass: true },
  },
  {
    name: 'nested attachment below the top level',
    input: () => ({ issue: { attachment: { source: url('a.txt') } } }),
    expect: { pass: true },
  },
  {
    name: 'other key holding a file URL',
    input: () => ({ file: { source: url('a.txt') }, docs: [{ source: url('a.txt') }] }),
    expect: { pass: true },
  },
  {
    name: 'attachment given as a list',
    input: () => ({ attachment: [{ source: url('a.txt') }] }),
    expect: { pass: true },
  },
  { name: 'non-string source', input: () => one(42 as unknown as string), expect: { pass: true } },
  {
    name: 'source with leading whitespace is not a file URL',
    input: () => one(` ${url('a.txt')}`),
    expect: { pass: true },
  },
  {
    name: 'tool_input sent as a string (Cursor beforeMCPExecution)',
    input: () => JSON.stringify(one(url('a.txt'))),
    expect: { pass: true },
  },
  {
    name: 'post-tool-use event',
    input: () => one(url('a.txt')),
    raw: (d) =>
      JSON.stringify({
        hook_event_name: 'PostToolUse',
        tool_input: one(fileUrl(join(d, 'a.txt'))),
      }),
    expect: { pass: true },
  },
  {
    name: 'stdin that is not JSON',
    input: () => null,
    raw: () => '{"tool_input": {"attachment": ',
    expect: { pass: true },
  },
  {
    name: 'upper-case FILE scheme',
    input: () => one(`FILE://${join(dir, 'a.txt')}`),
    expect: {
      rewrite: (input) =>
        expect(input.attachment).toMatchObject({
          source: 'data:text/plain;base64,YXR0YWNobWVudCBieXRlcwo=',
        }),
    },
  },
  {
    name: 'percent-encoded space and non-ASCII name decode correctly',
    input: () => one(url('a b é.txt')),
    expect: {
      rewrite: (input) =>
        expect(input.attachment).toEqual({
          source: 'data:text/plain;base64,YXR0YWNobWVudCBieXRlcwo=',
          filename: 'a b é.txt',
          mime_type: 'text/plain',
        }),
    },
  },
  {
    name: 'key spelled with a JSON \\u escape is still found',
    input: () => null,
    raw: (d) =>
      `{"hook_event_name":"PreToolUse","tool_input":{"\\u0061ttachment":{"source":"${fileUrl(join(d, 'a.txt'))}"}}}`,
    expect: {
      rewrite: (input) => expect(input.attachment).toMatchObject({ filename: 'a.txt' }),
    },
  },
  {
    name: 'unknown keys and __proto__ are carried across unchanged',
    input: () =>
      JSON.parse(`{"attachment":{"source":"${url('a.txt')}","caption":"c","__proto__":{"x":1}}}`),
    expect: {
      rewrite: (input) => {
        const attachment = input.attachment as Record<string, unknown>;
        expect(attachment.caption).toBe('c');
        expect(Object.getOwnPropertyDescriptor(attachment, '__proto__')?.value).toEqual({ x: 1 });
      },
    },
  },
  {
    name: 'given filename and mime_type are kept verbatim',
    input: () => one(url('noext'), { filename: 'report.pdf', mime_type: 'application/x-custom' }),
    expect: {
      rewrite: (input) =>
        expect(input.attachment).toEqual({
          source: `data:application/pdf;base64,${Buffer.from('%PDF-1.7\n').toString('base64')}`,
          filename: 'report.pdf',
          mime_type: 'application/x-custom',
        }),
    },
  },
  {
    name: 'mixed list: only file:// items with a source are rewritten',
    input: () => ({
      attachments: [
        'file:///etc/passwd',
        { note: 1 },
        { source: url('a.txt') },
        { source: 'data:,x' },
      ],
    }),
    expect: {
      rewrite: (input) => {
        const list = input.attachments as unknown[];
        expect(list[0]).toBe('file:///etc/passwd');
        expect(list[1]).toEqual({ note: 1 });
        expect(list[2]).toMatchObject({ filename: 'a.txt', mime_type: 'text/plain' });
        expect(list[3]).toEqual({ source: 'data:,x' });
      },
    },
  },
  {
    name: 'file inside the allowlist is read',
    input: () => one(url('allowed/in.txt')),
    env: (d) => ({
      TOOLFENCE_HOOK_ALLOWED_ROOTS: `${join(d, 'nonexistent-root')}${delimiter}${join(d, 'allowed')}`,
    }),
    expect: { rewrite: (input) => expect(input.attachment).toMatchObject({ filename: 'in.txt' }) },
  },
];

rows.push(
  {
    name: 'Windows: drive-letter URL (file:///C:/...)',
    input: () => one(url('a.txt')),
    expect: { rewrite: (input) => expect(input.attachment).toMatchObject({ filename: 'a.txt' }) },
    only: 'win32',
  },
  {
    name: 'Windows: drive letter with a bar (file:///C|/...)',
    input: () => one(url('a.txt').replace(/^file:\/\/\/([A-Za-z]):/, 'file:///$1|')),
    expect: { rewrite: (input) => expect(input.attachment).toMatchObject({ filename: 'a.txt' }) },
    only: 'win32',
  },
  {
    name: 'Windows: a URL without a drive letter',
    input: () => one('file:///Users/me/a.txt'),
    expect: { deny: 'HOOK_FILE_URL_INVALID' },
    only: 'win32',
  },
  {
    name: 'Windows: an allowlist root in other letter case matches (names are case-insensitive)',
    input: () => one(url('allowed/in.txt')),
    env: (d) => ({ TOOLFENCE_HOOK_ALLOWED_ROOTS: join(d, 'allowed').toUpperCase() }),
    expect: { rewrite: (input) => expect(input.attachment).toMatchObject({ filename: 'in.txt' }) },
    only: 'win32',
  },
  {
    name: 'Windows: an allowlist root written as a \\\\?\\ path matches',
    input: () => one(url('allowed/in.txt')),
    env: (d) => ({ TOOLFENCE_HOOK_ALLOWED_ROOTS: `\\\\?\\${join(d, 'allowed')}` }),
    expect: { rewrite: (input) => expect(input.attachment).toMatchObject({ filename: 'in.txt' }) },
    only: 'win32',
  },
  {
    name: 'Windows: a file outside a case-insensitive allowlist root is still denied',
    input: () => one(url('outside/secret.txt')),
    env: (d) => ({ TOOLFENCE_HOOK_ALLOWED_ROOTS: join(d, 'allowed').toUpperCase() }),
    expect: { deny: 'HOOK_PATH_NOT_ALLOWED' },
    only: 'win32',
  },
);

describe('hook deny and pass-through rules (adversarial)', () => {
  it('has at least 30 rows', () => {
    expect(rows.length).toBeGreaterThanOrEqual(30);
  });

  // A row for another platform is reported as skipped (platform condition), never as passed.
  for (const row of rows) {
    it.skipIf(!applies(row))(row.name, async () => {
      const stdin = row.raw?.(dir) ?? stdinFor('claude-code', row.input(dir));
      const result = await runHook(stdin, row.env === undefined ? {} : { env: row.env(dir) });
      expect(result.code).toBe(0);
      if ('deny' in row.expect) {
        const output = JSON.parse(result.stdout);
        expect(output.hookSpecificOutput.permissionDecision).toBe('deny');
        expect(output.hookSpecificOutput.permissionDecisionReason).toContain(
          `: ${row.expect.deny}: `,
        );
        expect(output.hookSpecificOutput.updatedInput).toBeUndefined();
        expect(result.stdout).not.toContain(Buffer.from(body).toString('base64'));
      } else if ('pass' in row.expect) {
        expect(result.stdout).toBe('');
      } else {
        const output = JSON.parse(result.stdout);
        expect(output.hookSpecificOutput.permissionDecision).toBeUndefined();
        row.expect.rewrite(output.hookSpecificOutput.updatedInput);
      }
    });
  }
});

describe('hook input limits', () => {
  it('denies with exit code 2 when the event exceeds TOOLFENCE_HOOK_MAX_INPUT_BYTES', async () => {
    const stdin = stdinFor('claude-code', {
      attachment: { source: 'data:,x' },
      pad: 'x'.repeat(5000),
    });
    const result = await runHook(stdin, { env: { TOOLFENCE_HOOK_MAX_INPUT_BYTES: '1000' } });
    expect(result.code).toBe(2);
    expect(result.stdout).toBe('');
    expect(result.stderr).toContain('HOOK_INPUT_TOO_LARGE');
  });

  it('reads an event just under TOOLFENCE_HOOK_MAX_INPUT_BYTES', async () => {
    const stdin = stdinFor('claude-code', { attachment: { source: url('a.txt') } });
    const result = await runHook(stdin, {
      env: { TOOLFENCE_HOOK_MAX_INPUT_BYTES: String(Buffer.byteLength(stdin)) },
    });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).hookSpecificOutput.updatedInput.attachment.filename).toBe(
      'a.txt',
    );
  });

  it('refuses a non-numeric TOOLFENCE_HOOK_MAX_INPUT_BYTES', async () => {
    const result = await runHook('{}', { env: { TOOLFENCE_HOOK_MAX_INPUT_BYTES: 'true' } });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('HOOK_CONFIG_INVALID');
  });

  it('inlines a file of exactly TOOLFENCE_HOOK_MAX_BYTES bytes', async () => {
    const stdin = stdinFor('claude-code', { attachment: { source: url('a.txt') } });
    const result = await runHook(stdin, { env: { TOOLFENCE_HOOK_MAX_BYTES: String(body.length) } });
    expect(JSON.parse(result.stdout).hookSpecificOutput.updatedInput.attachment.filename).toBe(
      'a.txt',
    );
  });
});

describe('the no-attachment fast path', () => {
  const key = 'attachment';
  const jsonEscape = (code: number, upper: boolean) => {
    const hex = code.toString(16).padStart(4, '0');
    return `\\u${upper ? hex.toUpperCase() : hex}`;
  };
  // Every letter of the key, spelled as a JSON escape (lower- and upper-case hex), in both keys:
  // the hook must not skip the event as one without an attachment.
  const rows = [...key].flatMap((letter, index) =>
    [false, true].flatMap((upper) =>
      ['attachment', 'attachments'].map((name) => ({
        label: `${name} with "${letter}" (position ${index}) as ${jsonEscape(letter.charCodeAt(0), upper)}`,
        name,
        spelled:
          name.slice(0, index) + jsonEscape(letter.charCodeAt(0), upper) + name.slice(index + 1),
      })),
    ),
  );
  it.each(rows)('finds $label', async ({ name, spelled }) => {
    const value = name === 'attachment' ? '{"source":"URL"}' : '[{"source":"URL"}]';
    const stdin = `{"hook_event_name":"PreToolUse","tool_name":"mcp__files__upload","tool_input":{"${spelled}":${value.replace('URL', url('a.txt'))}}}`;
    const result = await runHook(stdin);
    expect(result.code).toBe(0);
    const input = JSON.parse(result.stdout).hookSpecificOutput.updatedInput;
    const item = name === 'attachment' ? input.attachment : input.attachments[0];
    expect(item.source).toBe(`data:text/plain;base64,${Buffer.from(body).toString('base64')}`);
  });

  it.each([
    ['an escaped control character', '{"command":"printf \\u001b[0m"}'],
    ['an escaped letter that is not in the key', '{"note":"\\u0078yz"}'],
    ['an escaped backslash before a u', '{"note":"C:\\\\u0061ttachment"}'],
  ])('answers an event with %s and no attachment as a no-op', async (_label, input) => {
    const claude = `{"hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":${input}}`;
    expect(await runHook(claude)).toEqual({ code: 0, stdout: '', stderr: '' });
    const cursor = `{"hook_event_name":"preToolUse","cursor_version":"2.4","tool_name":"Shell","tool_input":${input}}`;
    expect(await runHook(cursor)).toEqual({ code: 0, stdout: '{}', stderr: '' });
  });

  it('finds the key after bytes that are not UTF-8 (decoded as U+FFFD, as before)', async () => {
    const stdin = Buffer.concat([
      Buffer.from('{"hook_event_name":"PreToolUse","tool_input":{"note":"'),
      Buffer.from([0xff, 0xc3]),
      Buffer.from(`","attachment":{"source":"${url('a.txt')}"}}}`),
    ]);
    const result = await runHook(stdin);
    const input = JSON.parse(result.stdout).hookSpecificOutput.updatedInput;
    expect(input.note).toBe('\ufffd\ufffd');
    expect(input.attachment.filename).toBe('a.txt');
  });

  it('reads an event larger than the first read buffer, up to exactly the limit', async () => {
    const stdin = stdinFor('claude-code', {
      pad: 'x'.repeat(300_000),
      attachment: { source: url('a.txt') },
    });
    const size = Buffer.byteLength(stdin);
    const fits = await runHook(stdin, { env: { TOOLFENCE_HOOK_MAX_INPUT_BYTES: String(size) } });
    expect(fits.code).toBe(0);
    const input = JSON.parse(fits.stdout).hookSpecificOutput.updatedInput;
    expect(input.pad).toHaveLength(300_000);
    expect(input.attachment.filename).toBe('a.txt');
    const over = await runHook(stdin, {
      env: { TOOLFENCE_HOOK_MAX_INPUT_BYTES: String(size - 1) },
    });
    expect(over.code).toBe(2);
    expect(over.stdout).toBe('');
    expect(over.stderr).toContain('HOOK_INPUT_TOO_LARGE');
  });
});
