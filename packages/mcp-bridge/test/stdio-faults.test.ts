import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AmbiguousDeliveryError } from '../src/client/errors.js';
import { McpClient, type McpClientOptions } from '../src/client/mcp-client.js';
import {
  RecordEncodingError,
  ResponseTooComplexError,
  ResponseTooLargeError,
  TransportConfigurationError,
  type TransportError,
  TransportProtocolError,
  TransportTimeoutError,
} from '../src/transport/errors.js';
import { CHILD_ENV } from './helpers.js';

const SERVER = fileURLToPath(new URL('./fixtures/fault-stdio-server.mjs', import.meta.url));

/**
 * A server that closes its stdin on the first request and answers it with an error, so the
 * client's next write fails with EPIPE; then it runs `then`.
 */
function stdinClosingServer(then: string): string[] {
  return [
    process.execPath,
    '-e',
    `process.stdin.once('data', (chunk) => { const { id } = JSON.parse(String(chunk).split('\\n')[0]); process.stdin.destroy(); require('node:fs').closeSync(0); process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } }) + '\\n'); ${then} });`,
  ];
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** Running and not a zombie (a container's init may not reap orphans at once). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

describe.each([
  ['legacy', false],
  ['modern 2026-07-28', true],
])('McpClient over stdio against the fault-injecting server (%s)', (_mode, modern) => {
  let dir: string;
  let countFile: string;
  const clients: McpClient[] = [];

  function client(options: Partial<McpClientOptions> = {}): McpClient {
    const made = new McpClient({
      command: [process.execPath, SERVER, ...(modern ? ['modern'] : [])],
      env: { ...CHILD_ENV, COUNT_FILE: countFile },
      ...options,
    });
    clients.push(made);
    return made;
  }

  async function calls(name: string): Promise<number> {
    const text = await readFile(countFile, 'utf8').catch(() => '');
    return text.split('\n').filter((line) => line === name).length;
  }

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mcp-bridge-stdio-'));
    countFile = join(dir, 'calls.txt');
  });
  afterEach(async () => {
    for (const made of clients.splice(0)) await made.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('treats a non-protocol stdout line as an error and does not replay', async () => {
    const mcp = client();
    const error = await caught(mcp.callTool('stray'));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    expect((error as Error).cause).toBeInstanceOf(TransportProtocolError);
    expect(await calls('stray')).toBe(1);
    // a fresh process answers the next call
    expect((await mcp.callTool('echo')).content).toEqual([{ type: 'text', text: 'echo' }]);
  });

  it('stops a line over maxRecordBytes as it arrives', async () => {
    const error = await caught(
      client({ maxRecordBytes: 4096 }).callTool('huge', { bytes: 100_000 }),
    );
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    const cause = (error as Error).cause as ResponseTooLargeError;
    expect(cause).toBeInstanceOf(ResponseTooLargeError);
    expect(cause.kind).toBe('stdio');
    expect(cause.limit).toBe(4096);
    expect(await calls('huge')).toBe(1);
  });

  it('stops a too-deep line before parsing', async () => {
    const error = await caught(client().callTool('complex'));
    expect((error as Error).cause).toBeInstanceOf(ResponseTooComplexError);
    expect(await calls('complex')).toBe(1);
  });

  it('reports a server that exits after receiving the call as ambiguous, exactly once', async () => {
    const mcp = client();
    const error = await caught(mcp.callTool('drop'));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    expect(await calls('drop')).toBe(1);
  });

  it('keeps a result that arrived before an invalid trailing line', async () => {
    const mcp = client();
    const result = await mcp.callTool('trailing');
    expect(result.content).toEqual([{ type: 'text', text: 'kept' }]);
    expect(await calls('trailing')).toBe(1);
  });

  it('bounds a trickled line by readTimeoutMs over the whole record', async () => {
    const mcp = client({ readTimeoutMs: 500 });
    await mcp.connect();
    const error = await caught(mcp.callTool('trickle', {}, { timeoutMs: 30_000 }));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    expect((error as Error).cause).toBeInstanceOf(TransportTimeoutError);
    expect(await calls('trickle')).toBe(1);
  });

  it('negotiates the era the server speaks', async () => {
    const mcp = client();
    await mcp.connect();
    expect(mcp.protocolVersion).toBe(modern ? '2026-07-28' : '2025-11-25');
  });

  it('passes only the explicit environment with inheritEnv: []', async () => {
    const mcp = client({ env: { ONLY_THIS: '1' }, inheritEnv: [] });
    const result = await mcp.callTool('env');
    expect(result.content).toEqual([{ type: 'text', text: JSON.stringify(['ONLY_THIS']) }]);
  });

  it('inherits only the allowlisted variables by default, never the rest', async () => {
    const previous = { SECRET_TOKEN: process.env.SECRET_TOKEN, SHELL: process.env.SHELL };
    process.env.SECRET_TOKEN = 'do-not-leak';
    process.env.SHELL = '() { evil; }';
    try {
      const mcp = client({ env: { ONLY_THIS: '1' } });
      const result = await mcp.callTool('env');
      const names = JSON.parse((result.content[0] as { text: string }).text) as string[];
      const expected = ['HOME', 'LOGNAME', 'PATH', 'TERM', 'USER'].filter(
        (name) => process.env[name] !== undefined,
      );
      expect(names.sort()).toEqual([...expected, 'ONLY_THIS'].sort());
    } finally {
      for (const [name, value] of Object.entries(previous)) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('pipes stderr to the logger in bounded lines', async () => {
    const lines: { line: unknown; truncated: unknown }[] = [];
    const mcp = client({
      logger: { debug: (_message, details) => lines.push(details as never) },
    });
    await mcp.callTool('stderr-flood');
    await new Promise((resolve) => setTimeout(resolve, 50));
    const flood = lines.find((entry) => entry.truncated === true);
    expect(flood).toBeDefined();
    expect(String(flood?.line ?? '').length).toBe(4096);
    expect(lines.some((entry) => entry.line === 'short line')).toBe(true);
  });

  it('terminates the whole process group on close', async () => {
    const mcp = client();
    const result = await mcp.callTool('grandchild');
    const pid = Number((result.content[0] as { text: string }).text);
    expect(alive(pid)).toBe(true);
    await mcp.close();
    for (let attempt = 0; attempt < 50 && alive(pid); attempt++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(alive(pid)).toBe(false);
  });

  it('skips and reports a malformed tool without hiding the others', async () => {
    const warnings: unknown[] = [];
    const mcp = client({ logger: { warn: (_message, details) => warnings.push(details) } });
    const listing = await mcp.listing();
    expect(listing.tools.map((tool) => tool.name)).toContain('echo');
    expect(listing.tools.map((tool) => tool.name)).not.toContain('bad-schema-type');
    expect(listing.problems).toHaveLength(2);
    expect(listing.problems.map((problem) => problem.reason)).toEqual([
      expect.stringMatching(/name/),
      expect.stringMatching(/inputSchema/),
    ]);
    expect(warnings).toHaveLength(2);
  });

  it('reconnects once for a listing whose wire failed before any response began', async () => {
    const mcp = client({ env: { ...CHILD_ENV, COUNT_FILE: countFile, EXIT_ON_FIRST_LIST: '1' } });
    const tools = await mcp.tools();
    expect(tools.map((tool) => tool.name)).toContain('echo');
    expect(await calls('list')).toBe(2);
  });

  it('sends SIGKILL after killGraceMs to a server that ignores SIGTERM', async () => {
    const mcp = client({ killGraceMs: 300 });
    const result = await mcp.callTool('ignore-term');
    const pid = Number((result.content[0] as { text: string }).text);
    expect(alive(pid)).toBe(true);
    await mcp.close();
    expect(alive(pid)).toBe(false);
  });

  it.each([
    ['a no-break space (U+00A0)', '\u00a0'],
    ['a byte-order mark (U+FEFF)', '\ufeff'],
    ['a line separator (U+2028)', '\u2028'],
    ['a paragraph separator (U+2029)', '\u2029'],
    ['an ideographic space (U+3000)', '\u3000'],
    ['a next-line character (U+0085)', '\u0085'],
    ['a vertical tab', '\u000b'],
    ['a form feed', '\f'],
    ['spaces around a no-break space', '  \u00a0\t'],
    ['an empty batch', '[]'],
    ['an empty batch with spaces', '[ \t]'],
    ['a byte-order mark before a record', '\ufeff{"jsonrpc":"2.0","method":"notifications/x"}'],
  ])('treats a line of %s as a protocol error', async (_name, text) => {
    const error = await caught(client().callTool('raw-line', { text }));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    expect((error as AmbiguousDeliveryError).reason).toBe('invalid-response');
    expect((error as Error).cause).toBeInstanceOf(TransportProtocolError);
    expect(await calls('raw-line')).toBe(1);
  });

  it.each([
    ['an empty line', ''],
    ['spaces', '   '],
    ['a tab', '\t'],
    ['spaces before a CRLF ending', '  \r'],
  ])('skips a line of %s', async (_name, text) => {
    const result = await client().callTool('raw-line', { text });
    expect(result.content).toEqual([{ type: 'text', text: 'after raw line' }]);
  });

  it('refuses a record that is not valid UTF-8 instead of replacing the byte', async () => {
    const error = await caught(client().callTool('invalid-utf8'));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    expect((error as AmbiguousDeliveryError).reason).toBe('invalid-response');
    const cause = (error as Error).cause as RecordEncodingError;
    expect(cause).toBeInstanceOf(RecordEncodingError);
    expect(cause.code).toBe('TRANSPORT_INVALID_UTF8');
    expect(cause.kind).toBe('stdio');
    expect(await calls('invalid-utf8')).toBe(1);
  });

  it.each([
    ['exactly maxRecordBytes with a CRLF ending', 4096, '\r\n'],
    ['exactly maxRecordBytes with a LF ending', 4096, '\n'],
  ])('accepts a record of %s', async (_name, bytes, text) => {
    const result = await client({ maxRecordBytes: 4096 }).callTool('sized', { bytes, text });
    const block = result.content[0] as { text: string };
    expect(block.text).toMatch(/^x+$/);
    expect(await calls('sized')).toBe(1);
  });

  it.each([
    ['one byte over maxRecordBytes with a CRLF ending', 4097, '\r\n'],
    ['exactly maxRecordBytes followed by CR CR LF', 4096, '\r\r\n'],
    ['one byte over maxRecordBytes with a LF ending', 4097, '\n'],
  ])('refuses a record of %s', async (_name, bytes, text) => {
    const error = await caught(client({ maxRecordBytes: 4096 }).callTool('sized', { bytes, text }));
    expect(error).toBeInstanceOf(AmbiguousDeliveryError);
    const cause = (error as Error).cause as ResponseTooLargeError;
    expect(cause).toBeInstanceOf(ResponseTooLargeError);
    expect(cause.kind).toBe('stdio');
    expect(cause.limit).toBe(4096);
  });

  it('delivers a last record that has no trailing newline at end of file', async () => {
    const result = await client().callTool('last-no-newline');
    expect(result.content).toEqual([{ type: 'text', text: 'last record' }]);
    expect(await calls('last-no-newline')).toBe(1);
  });

  it.each([
    ['a shell string', 'node server.js'],
    ['an empty argv', []],
    ['a non-string argument', ['node', 1]],
  ])('refuses %s as command', (_name, command) => {
    expect(() => new McpClient({ command: command as never })).toThrow(TransportConfigurationError);
  });
});

describe('a stdio server that fails at start', () => {
  let dir: string;
  let startsFile: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolfence-starts-'));
    startsFile = join(dir, 'starts');
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** A real process that appends one line per start to STARTS_FILE and exits with `code`. */
  function failing(code: number, options: Partial<McpClientOptions> = {}): McpClient {
    return new McpClient({
      command: [
        process.execPath,
        '-e',
        `require('node:fs').appendFileSync(process.env.STARTS_FILE, 'start\\n'); process.stderr.write('missing configuration\\n'); process.exit(${code});`,
      ],
      env: { ...CHILD_ENV, STARTS_FILE: startsFile },
      ...options,
    });
  }

  async function starts(): Promise<number> {
    const text = await readFile(startsFile, 'utf8').catch(() => '');
    return text.split('\n').filter((line) => line === 'start').length;
  }

  it.each([
    ['a legacy version pinned', ['2025-11-25']],
    ['the modern version pinned', ['2026-07-28']],
  ])('starts it once with %s, and names the exit code', async (_label, protocolVersions) => {
    const mcp = failing(1, { protocolVersions });
    try {
      const error = await caught(mcp.tools());
      expect(await starts()).toBe(1);
      const cause = (error as Error).cause as TransportError;
      expect(cause.message).toContain('exited with code 1');
      expect(cause.details).toMatchObject({ exitCode: 1, stderrTail: 'missing configuration' });
    } finally {
      await mcp.close();
    }
  });

  it('names the exit code and stderr of a server whose stdin closed before it exited (a write refused with EPIPE first)', async () => {
    // It closes its stdin and answers the first request with an error, so the client's next
    // write fails with EPIPE, and exits a moment later: the exit, not the refused write, is what
    // failed.
    const mcp = new McpClient({
      command: stdinClosingServer(
        `setTimeout(() => { process.stderr.write('cannot read the config\\n'); process.exit(3); }, 300);`,
      ),
      env: CHILD_ENV,
    });
    try {
      const error = await caught(mcp.tools());
      const cause = (error as Error).cause as TransportError;
      expect(cause.message).toContain('exited with code 3');
      expect(cause.details).toMatchObject({ exitCode: 3, stderrTail: 'cannot read the config' });
    } finally {
      await mcp.close();
    }
  });

  it('reports the refused write after killGraceMs when the server closed its stdin and does not exit', async () => {
    const mcp = new McpClient({
      command: stdinClosingServer('setInterval(() => {}, 1000);'),
      env: CHILD_ENV,
      killGraceMs: 300,
    });
    try {
      const began = performance.now();
      const error = await caught(mcp.tools());
      expect(((error as Error).cause as TransportError).message).toBe(
        'Writing to the MCP server failed',
      );
      expect(performance.now() - began).toBeGreaterThanOrEqual(250);
    } finally {
      await mcp.close();
    }
  });

  it('starts a command that was not found (exit 127) once, even with the modern probe on offer', async () => {
    const mcp = failing(127);
    try {
      await caught(mcp.tools());
      expect(await starts()).toBe(1);
    } finally {
      await mcp.close();
    }
  });

  it('gives a server that exits during the server/discover probe exactly one more start, for initialize', async () => {
    const mcp = failing(1);
    try {
      await caught(mcp.tools());
      // The probe's start, then initialize's (a legacy server may exit on server/discover).
      expect(await starts()).toBe(2);
      await caught(mcp.tools());
      expect(await starts()).toBe(4);
    } finally {
      await mcp.close();
    }
  });
});
