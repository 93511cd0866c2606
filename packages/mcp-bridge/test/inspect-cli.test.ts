import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/run-cli.js';
import { runInspect } from '../src/cli/run-inspect.js';
import { stopProcess } from './fixtures/teardown.js';
import { CHILD_ENV, EVERYTHING_ENTRY, REPO_ROOT } from './helpers.js';

const PACKAGE_DIR = fileURLToPath(new URL('../', import.meta.url));
const BIN = join(PACKAGE_DIR, 'dist', 'bin', 'main.js');
const TOOLKIT_MAIN = join(REPO_ROOT, 'examples', 'toolkit-server', 'src', 'main.ts');
const TOOLKIT_STDIO = ['--', process.execPath, '--import', 'tsx', TOOLKIT_MAIN, '--stdio'];
const EVERYTHING_STDIO = ['--', process.execPath, EVERYTHING_ENTRY, 'stdio'];

interface Captured {
  readonly code: number;
  readonly out: string;
  readonly err: string;
}

/** Runs the CLI in-process with captured output. */
async function inspect(
  argv: readonly string[],
  cwd: string = REPO_ROOT,
  env: Readonly<Record<string, string>> = CHILD_ENV,
): Promise<Captured> {
  let out = '';
  let err = '';
  const code = await runInspect(argv, {
    out: (text) => {
      out += text;
    },
    err: (text) => {
      err += text;
    },
    env,
    cwd,
  });
  return { code, out, err };
}

/** Runs the built `dist/bin/main.js` as a real process. */
function runBin(argv: readonly string[]): Promise<Captured> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...argv],
      { cwd: REPO_ROOT, env: CHILD_ENV, timeout: 9000 },
      (error, stdout, stderr) => {
        const code = error === null ? 0 : typeof error.code === 'number' ? error.code : -1;
        resolve({ code, out: stdout, err: stderr });
      },
    );
  });
}

interface ToolRow {
  readonly name: string;
  readonly risk: string;
  readonly contentTrust: string;
  readonly source: string;
  readonly policy: { readonly verdict: string; readonly reason?: string };
  readonly schemaProblems: readonly { readonly schema: string; readonly reason?: string }[];
  readonly contractProblems: readonly unknown[];
}

function byName(report: { tools: readonly ToolRow[] }): Map<string, ToolRow> {
  return new Map(report.tools.map((tool) => [tool.name, tool]));
}

/** The text table's row for one tool, split into columns. */
function row(out: string, tool: string): string[] {
  const line = out.split('\n').find((candidate) => candidate.startsWith(`${tool} `));
  if (line === undefined) throw new Error(`no row for ${tool}`);
  return line.trim().split(/\s+/);
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

let toolkit: ChildProcess | undefined;
let toolkitUrl = '';
let dir = '';

beforeAll(async () => {
  if (!existsSync(BIN)) {
    throw new Error('Build first: npx -y pnpm@12.4.2 --filter @toolfence/mcp-bridge build');
  }
  dir = await mkdtemp(join(tmpdir(), 'toolfence-inspect-'));
  const child = spawn(process.execPath, ['--import', 'tsx', TOOLKIT_MAIN, '--http'], {
    cwd: REPO_ROOT,
    env: CHILD_ENV,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  toolkit = child;
  toolkitUrl = await new Promise<string>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error('the toolkit server did not start')), 9000);
    child.stdout?.on('data', (chunk: Buffer) => {
      seen += chunk.toString();
      const match = /listening (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(seen);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.stderr?.resume();
    child.once('exit', () => reject(new Error('the toolkit server exited')));
  });
}, 10_000);

afterAll(async () => {
  if (toolkit !== undefined) await stopProcess(toolkit);
  if (dir !== '') await rm(dir, { recursive: true, force: true });
});

describe('toolfence-mcp inspect against the example toolkit', () => {
  it('prints declared risks and the default risk policy over stdio', async () => {
    const result = await inspect(TOOLKIT_STDIO);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(result.out).toContain('Server:       toolfence-example-toolkit 1.0.0');
    expect(result.out).toContain('Transport:    stdio');
    expect(result.out).toMatch(/Capabilities: .*tools/);
    expect(result.out).toContain('risk policy (default)');
    expect(result.out).toContain('Tools:        5');
    expect(row(result.out, 'search_notes')).toEqual([
      'search_notes',
      'read-only',
      'untrusted',
      'declared',
      'allow',
      'ok',
    ]);
    expect(row(result.out, 'save_note')).toEqual([
      'save_note',
      'low-risk-write',
      'trusted',
      'declared',
      'ask',
      'ok',
    ]);
    expect(row(result.out, 'delete_note').slice(1, 5)).toEqual([
      'destructive',
      'trusted',
      'declared',
      'ask',
    ]);
    expect(row(result.out, 'send_message').slice(1, 5)).toEqual([
      'external-publication',
      'sensitive',
      'declared',
      'ask',
    ]);
  }, 10_000);

  it('judges each tool with a risk policy file over Streamable HTTP (built bin, --json)', async () => {
    const policy = join(dir, 'risk.json');
    await writeFile(
      policy,
      JSON.stringify({
        kind: 'risk',
        risk: { allowUpTo: 'read-only', askUpTo: 'high-risk-write' },
        contentTrust: { allowUpTo: 'sensitive', askUpTo: 'prompt-injection-prone' },
      }),
    );
    const result = await runBin(['inspect', '--url', toolkitUrl, '--json', '--policy', policy]);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.out);
    expect(Object.keys(report).sort()).toEqual(
      ['capabilities', 'policy', 'server', 'skippedTools', 'tools', 'transport'].sort(),
    );
    expect(report.server).toEqual({ name: 'toolfence-example-toolkit', version: '1.0.0' });
    expect(report.transport).toBe('streamable-http');
    expect(report.capabilities).toHaveProperty('tools');
    expect(report.policy).toEqual({
      kind: 'risk',
      source: 'file',
      risk: { allowUpTo: 'read-only', askUpTo: 'high-risk-write' },
      contentTrust: { allowUpTo: 'sensitive', askUpTo: 'prompt-injection-prone' },
      undeclared: 'heuristic',
    });
    expect(report.skippedTools).toEqual([]);
    const tools = byName(report);
    expect([...tools.keys()].sort()).toEqual(
      ['delete_note', 'export_report', 'save_note', 'search_notes', 'send_message'].sort(),
    );
    expect(tools.get('search_notes')).toMatchObject({
      risk: 'read-only',
      contentTrust: 'untrusted',
      source: 'declared',
      policy: { verdict: 'allow', reason: 'declared risk read-only' },
      schemaProblems: [],
      contractProblems: [],
    });
    expect(tools.get('save_note')?.policy.verdict).toBe('ask');
    expect(tools.get('delete_note')).toMatchObject({
      risk: 'destructive',
      policy: { verdict: 'deny', reason: 'declared risk destructive' },
    });
    expect(tools.get('send_message')).toMatchObject({
      risk: 'external-publication',
      contentTrust: 'sensitive',
      policy: { verdict: 'deny' },
    });
    for (const tool of tools.values()) expect(tool.source).toBe('declared');
  }, 10_000);

  it('shows a rule policy file in the POLICY column', async () => {
    const policy = join(dir, 'rules.json');
    await writeFile(
      policy,
      JSON.stringify({
        kind: 'rules',
        rules: [
          { tool: 'delete_*', decision: 'deny', reason: 'no deletes' },
          { tool: 'search_notes', decision: 'allow' },
        ],
        default: 'ask',
      }),
    );
    const result = await inspect(['--url', toolkitUrl, '--policy', 'rules.json'], dir);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(result.out).toContain('rule policy: 2 rule(s), default ask');
    expect(row(result.out, 'delete_note')[4]).toBe('deny');
    expect(row(result.out, 'search_notes')[4]).toBe('allow');
    expect(row(result.out, 'save_note')[4]).toBe('ask');
    expect(row(result.out, 'send_message')[4]).toBe('ask');
  }, 10_000);
});

describe('toolfence-mcp inspect connection options', () => {
  it('reaches a loopback server by the name localhost', async () => {
    const result = await inspect(['--json', '--url', toolkitUrl.replace('127.0.0.1', 'localhost')]);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.out).server.name).toBe('toolfence-example-toolkit');
  }, 10_000);

  it('gives a stdio server only the base variables and those named by --env', async () => {
    // The server reports the names of its environment variables as its version.
    const server = `
      import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
      import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
      const names = Object.keys(process.env).sort().join(',');
      const server = new McpServer({ name: process.env.SET ?? 'unset', version: names });
      await server.connect(new StdioServerTransport());
    `;
    const result = await inspect(
      [
        '--json',
        '--env',
        'FROM_PARENT',
        '--env',
        'SET=chosen',
        '--env',
        'MISSING',
        '--',
        process.execPath,
        '--input-type=module',
        '-e',
        server,
      ],
      PACKAGE_DIR,
      {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: '/nonexistent-home',
        API_TOKEN: 'must-not-leak',
        FROM_PARENT: 'yes',
      },
    );
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.out);
    expect(report.server).toEqual({ name: 'chosen', version: 'FROM_PARENT,HOME,PATH,SET' });
    // It declares no tools capability, so tools/list is not asked.
    expect(report.capabilities).not.toHaveProperty('tools');
    expect(report.tools).toEqual([]);
  }, 10_000);
});

describe('toolfence-mcp inspect against server-everything', () => {
  it('reports heuristic contracts for undeclared tools', async () => {
    const json = await inspect(['--json', ...EVERYTHING_STDIO]);
    expect(json.err).toBe('');
    expect(json.code).toBe(0);
    const report = JSON.parse(json.out);
    expect(report.server.name).toBe('mcp-servers/everything');
    expect(report.transport).toBe('stdio');
    expect(report.capabilities).toHaveProperty('tools');
    const tools = byName(report);
    expect(tools.size).toBeGreaterThan(5);
    for (const tool of tools.values()) {
      expect(tool.source).toBe('heuristic');
      expect(tool.schemaProblems).toEqual([]);
    }
    expect(tools.get('get-sum')).toMatchObject({
      risk: 'read-only',
      policy: { verdict: 'allow', reason: 'heuristic risk read-only' },
    });
    expect(tools.get('echo')?.policy.verdict).toBe('ask');
    expect(tools.get('get-env')?.contentTrust).toBe('sensitive');
  }, 10_000);
});

// A real SDK server (low-level Server) that lists tools the bridge must refuse or read carefully.
const ODD_SERVER = `
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
const server = new Server(
  { name: 'odd\\u001b[31mserver', version: '0.1.0' },
  { capabilities: { tools: {} } },
);
const object = { type: 'object' };
server.setRequestHandler(ListToolsRequestSchema, () => ({
  tools: [
    { name: 'fine', inputSchema: { type: 'object', properties: {} } },
    { name: 'no_schema' },
    { name: 'remote_ref', inputSchema: { type: 'object', properties: { a: { $ref: 'https://example.com/s.json' } } } },
    { name: 'not_object', inputSchema: { type: 'string' } },
    { name: 'null_schema', inputSchema: null },
    { name: 'unknown_dialect', inputSchema: { $schema: 'https://example.com/dialect', type: 'object' } },
    { name: 'draft7_divergent', inputSchema: { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', dependencies: {} } },
    { name: 'embedded_id', inputSchema: { type: 'object', properties: { a: { $id: 'x', type: 'string' } } } },
    { name: 'uncompilable', inputSchema: { type: 'object', properties: { a: { type: 'no-such-type' } } } },
    { name: 'bad_output', inputSchema: object, outputSchema: { type: 'array' } },
    { name: 'meta_only', description: 'delete everything', inputSchema: object,
      _meta: { 'io.github.toolfence/contract': { risk_level: 'read-only', content_trust_risk: 'trusted', version: '1.0.0' } } },
    { name: 'disagree', inputSchema: object,
      annotations: { risk_level: 'read-only', content_trust_risk: 'trusted', version: '1.0.0' },
      _meta: { 'io.github.toolfence/contract': { risk_level: 'destructive', content_trust_risk: 'trusted', version: '1.0.0' } } },
    { name: 'hinted_delete', inputSchema: object, annotations: { destructiveHint: true } },
    { name: 'evil\\u001b]0;pwned\\u0007name', inputSchema: object },
    { name: 42 },
  ],
}));
await server.connect(new StdioServerTransport());
`;
const ODD_STDIO = ['--', process.execPath, '--input-type=module', '-e', ODD_SERVER];

describe('toolfence-mcp inspect against a server with odd tools', () => {
  it('reports each schema problem per tool instead of failing the listing', async () => {
    const result = await inspect(['--json', ...ODD_STDIO], PACKAGE_DIR);
    expect(result.err).toBe('');
    expect(result.code).toBe(0);
    const report = JSON.parse(result.out);
    const tools = byName(report);
    const problems = (name: string) =>
      tools.get(name)?.schemaProblems.map((problem) => [problem.schema, problem.reason ?? null]);
    expect(problems('fine')).toEqual([]);
    expect(problems('no_schema')).toEqual([]);
    expect(problems('remote_ref')).toEqual([['inputSchema', 'external-ref']]);
    expect(problems('not_object')).toEqual([['inputSchema', 'not-object-type']]);
    expect(problems('null_schema')).toEqual([['inputSchema', 'null']]);
    expect(problems('unknown_dialect')).toEqual([['inputSchema', 'dialect']]);
    // draft-07's dependencies is read as draft-07 reads it: nothing to report.
    expect(problems('draft7_divergent')).toEqual([]);
    expect(problems('embedded_id')).toEqual([['inputSchema', 'embedded-id']]);
    expect(problems('uncompilable')).toEqual([['inputSchema', 'compile']]);
    expect(problems('bad_output')).toEqual([['outputSchema', 'not-object-type']]);
    expect(report.skippedTools).toEqual([
      expect.objectContaining({ listing: 'tools', page: 1, index: 14 }),
    ]);
  }, 10_000);

  it('reads contracts from annotations and _meta, cautiously', async () => {
    const result = await inspect(['--json', ...ODD_STDIO], PACKAGE_DIR);
    expect(result.code).toBe(0);
    const tools = byName(JSON.parse(result.out));
    expect(tools.get('meta_only')).toMatchObject({
      source: 'declared',
      risk: 'read-only',
      contentTrust: 'trusted',
      policy: { verdict: 'allow' },
    });
    expect(tools.get('disagree')).toMatchObject({ source: 'declared', risk: 'destructive' });
    expect(tools.get('disagree')?.contractProblems).toEqual([
      expect.objectContaining({ code: 'CONTRACT_SOURCES_DISAGREE' }),
    ]);
    expect(tools.get('hinted_delete')).toMatchObject({ source: 'heuristic', risk: 'destructive' });
  }, 10_000);

  it('never writes control characters from the server to the terminal', async () => {
    const result = await inspect(ODD_STDIO, PACKAGE_DIR);
    expect(result.code).toBe(0);
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the point of the check
    expect(result.out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(result.out).toContain('Server:       odd?[31mserver 0.1.0');
    expect(result.out).toContain('evil?]0;pwned?name');
    expect(result.out).toContain('Schema problems (the bridge would refuse these tools):');
    expect(result.out).toContain(
      'remote_ref: A server tool schema has a $ref that leaves the document',
    );
    expect(result.out).toContain('Skipped tools (malformed in tools/list):');
  }, 10_000);
});

describe('toolfence-mcp usage errors', () => {
  it.for([
    ['no server', []],
    ['both url and command', ['--url', 'http://127.0.0.1:9/mcp', '--', 'node']],
    ['nothing after --', ['--']],
    ['a stray positional argument', ['node', 'server.js']],
    ['an unknown option', ['--frobnicate']],
    ['a value for --json', ['--json=yes', '--url', 'http://127.0.0.1:9/mcp']],
    ['--url twice', ['--url', 'http://127.0.0.1:9/mcp', '--url', 'http://127.0.0.1:8/mcp']],
    ['--url without a value', ['--url']],
    ['an invalid URL', ['--url', 'not a url']],
    ['a non-HTTP scheme', ['--url', 'ftp://127.0.0.1/mcp']],
    ['plain http to a non-loopback host', ['--url', 'http://example.com/mcp']],
    ['plain http to a private address', ['--url', 'http://10.0.0.1/mcp']],
    ['https to a private address', ['--url', 'https://192.168.1.1/mcp']],
    ['credentials in the URL', ['--url', 'https://user:secret@example.com/mcp']],
    ['a non-numeric timeout', ['--timeout-ms', 'soon', '--url', 'http://127.0.0.1:9/mcp']],
    ['a zero timeout', ['--timeout-ms', '0', '--url', 'http://127.0.0.1:9/mcp']],
    ['a fractional timeout', ['--timeout-ms', '1.5', '--url', 'http://127.0.0.1:9/mcp']],
    ['a timeout above the maximum', ['--timeout-ms', '600001', '--url', 'http://127.0.0.1:9/mcp']],
    ['the old --timeout (seconds)', ['--timeout', '15', '--url', 'http://127.0.0.1:9/mcp']],
    ['--env with a URL', ['--env', 'FOO', '--url', 'http://127.0.0.1:9/mcp']],
    ['--env with an invalid name', ['--env', '1FOO=bar', '--', 'node']],
    ['a missing policy file', ['--policy', 'missing.json', '--', 'node']],
    ['--namespace without --server', ['--namespace', 'fs', '--', 'node']],
    ['a namespace with __', ['--server', 'files', '--namespace', 'f__s', '--', 'node']],
    ['a server name that is no namespace', ['--server', 'my files', '--', 'node']],
    ['--server twice', ['--server', 'a', '--server', 'b', '--', 'node']],
  ] as const)('exits 2 for %s', async ([, argv]) => {
    const result = await inspect(argv, dir);
    expect(result.code).toBe(2);
    expect(result.out).toBe('');
    expect(result.err).toMatch(/^toolfence-mcp: /);
    expect(result.err).not.toContain('secret');
    expect(result.err).not.toMatch(/\n\s+at /);
  });

  it.for([
    ['not JSON', '{ kind: risk'],
    ['not an object', '[]'],
    ['an unknown kind', '{"kind":"vibes"}'],
    ['an unknown top-level key', '{"kind":"risk","allow":"all"}'],
    ['an unknown threshold key', '{"kind":"risk","risk":{"allowUpto":"read-only"}}'],
    ['an unknown risk level', '{"kind":"risk","risk":{"allowUpTo":"harmless"}}'],
    [
      'askUpTo below allowUpTo',
      '{"kind":"risk","risk":{"allowUpTo":"destructive","askUpTo":"read-only"}}',
    ],
    ['an unknown content trust level', '{"kind":"risk","contentTrust":{"askUpTo":"evil"}}'],
    ['an invalid undeclared', '{"kind":"risk","undeclared":"allow"}'],
    ['rules not an array', '{"kind":"rules","rules":{}}'],
    [
      'a rule with an invalid decision',
      '{"kind":"rules","rules":[{"tool":"*","decision":"maybe"}]}',
    ],
    ['a rule without a tool', '{"kind":"rules","rules":[{"decision":"allow"}]}'],
    [
      'a rule with an unknown key',
      '{"kind":"rules","rules":[{"tool":"*","decision":"allow","when":"x"}]}',
    ],
    ['an invalid default', '{"kind":"rules","rules":[],"default":"yes"}'],
  ] as const)('exits 2 for a policy file with %s', async ([name, text]) => {
    const file = join(dir, `${name.replace(/\W+/g, '-')}.json`);
    await writeFile(file, text);
    const result = await inspect(['--policy', file, '--', process.execPath, '-e', '0'], dir);
    expect(result.code).toBe(2);
    expect(result.out).toBe('');
    expect(result.err.startsWith(`toolfence-mcp: --policy ${file}: Invalid policy file: `)).toBe(
      true,
    );
  });

  it('refuses a policy file larger than 1 MiB', async () => {
    const file = join(dir, 'huge.json');
    await writeFile(file, `{"kind":"risk","$comment":"${'x'.repeat(1024 * 1024)}"}`);
    const result = await inspect(['--policy', file, '--', process.execPath, '-e', '0'], dir);
    expect(result.code).toBe(2);
    expect(result.err).toContain('larger than 1048576 bytes');
  });

  it('prints help on --help and exits 0', async () => {
    const result = await inspect(['--help']);
    expect(result.code).toBe(0);
    expect(result.out).toContain('Usage: toolfence-mcp inspect (--url URL | -- COMMAND ARGS...)');
    expect(result.out).toContain('loopback');
    expect(result.out).toContain('allowNonPublic');
  });

  it.for([
    ['no command', [], 2],
    ['an unknown command', ['list'], 2],
    ['--help', ['--help'], 0],
    ['--version', ['--version'], 0],
  ] as const)('the top-level command handles %s', async ([, argv, code]) => {
    let out = '';
    let err = '';
    const exit = await runCli(argv, {
      out: (text) => {
        out += text;
      },
      err: (text) => {
        err += text;
      },
    });
    expect(exit).toBe(code);
    expect(code === 0 ? out : err).not.toBe('');
  });
});

describe('toolfence-mcp connection failures', () => {
  it('exits 1 with a safe message when the URL is unreachable (built bin)', async () => {
    const port = await freePort();
    const result = await runBin(['inspect', '--url', `http://127.0.0.1:${port}/mcp?token=s3cret`]);
    expect(result.code).toBe(1);
    expect(result.out).toBe('');
    expect(result.err).toMatch(/^toolfence-mcp: cannot inspect the server: /);
    expect(result.err).toContain('ECONNREFUSED');
    expect(result.err).not.toContain('s3cret');
    expect(result.err).not.toContain(String(port));
    expect(result.err).not.toMatch(/\n\s+at /);
    expect(result.err.split('\n').filter(Boolean)).toHaveLength(1);
  }, 10_000);

  it('names --timeout-ms and its unit when the old --timeout is given', async () => {
    const result = await inspect(['--timeout=15', '--url', 'http://127.0.0.1:9/mcp']);
    expect(result.code).toBe(2);
    expect(result.err).toContain(
      '--timeout was renamed to --timeout-ms (milliseconds; multiply a value in seconds by 1000)',
    );
  });

  it('exits 1 when the stdio command is not a server', async () => {
    const result = await inspect([
      '--timeout-ms',
      '3000',
      '--',
      process.execPath,
      '-e',
      'process.exit(3)',
    ]);
    expect(result.code).toBe(1);
    expect(result.out).toBe('');
    expect(result.err).toMatch(/^toolfence-mcp: cannot inspect the server: /);
  }, 10_000);

  it('exits 1 and names the timeout when the server never answers', async () => {
    const result = await inspect([
      '--timeout-ms',
      '1000',
      '--',
      process.execPath,
      '-e',
      'setTimeout(() => {}, 9000)',
    ]);
    expect(result.code).toBe(1);
    expect(result.err).toContain('no answer within --timeout-ms');
  }, 10_000);

  it('exits 1 when the stdio command does not exist', async () => {
    const result = await inspect(['--', join(dir, 'no-such-program')]);
    expect(result.code).toBe(1);
    expect(result.err).toMatch(/^toolfence-mcp: cannot inspect the server: /);
    expect(result.err).not.toContain(dir);
  }, 10_000);
});
