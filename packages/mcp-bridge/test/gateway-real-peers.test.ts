// `toolfence-mcp serve` as a user runs it, between real clients and real servers: the SDK v2
// client (@modelcontextprotocol/client) downstream in 2026-07-28 and in 2025-11-25 mode, over
// stdio (the gateway as the client's child process) and over --http; upstream
// `server-filesystem` over a temp folder, `server-everything`, the toolkit fixture (SDK 1.x), and
// SDK v2 servers in modern mode (stdio, and stateless HTTP that refuses the legacy era).
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpClient } from '../src/client/mcp-client.js';
import { startServeHttp } from './fixtures/serve-http.js';
import { stopProcess } from './fixtures/teardown.js';
import { allowLoopback, EVERYTHING_ENTRY, FILESYSTEM_ENTRY } from './helpers.js';

const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
const V2_SERVER = fileURLToPath(new URL('./fixtures/v2-server.mjs', import.meta.url));
const CLI = fileURLToPath(new URL('../dist/bin/main.js', import.meta.url));
const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin' };

let folder: string;
let files: string;
let callsFile: string;
let config: string;
let policy: string;
const children: ChildProcess[] = [];
const clients: Client[] = [];

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-gateway-peers-'));
  files = join(folder, 'files');
  await mkdir(files);
  await writeFile(join(files, 'readme.txt'), 'hello from a real filesystem server');
  callsFile = join(folder, 'calls.jsonl');
  // A stateless SDK v2 HTTP server that refuses 2025-era traffic: only a modern client gets in.
  const http = spawn(process.execPath, [V2_SERVER, 'http'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  children.push(http);
  const url = await new Promise<string>((resolve, reject) => {
    let buffer = '';
    http.stdout?.on('data', (chunk) => {
      buffer += String(chunk);
      const match = /"url":"([^"]+)"/.exec(buffer);
      if (match) resolve(match[1] as string);
    });
    http.once('exit', () => reject(new Error('the v2 HTTP server exited')));
  });
  config = join(folder, 'toolfence.json');
  await writeFile(
    config,
    JSON.stringify({
      mcpServers: {
        toolkit: {
          command: process.execPath,
          args: [TOOLKIT],
          env: { CALLS_FILE: callsFile },
          namespace: 'tk',
        },
        files: { command: process.execPath, args: [FILESYSTEM_ENTRY, files], namespace: 'fs' },
        everything: {
          command: process.execPath,
          args: [EVERYTHING_ENTRY, 'stdio'],
          allow: ['echo'],
          namespace: 'ev',
        },
        modern: {
          command: process.execPath,
          args: [V2_SERVER, 'stdio'],
          allow: ['echo'],
          namespace: 'v2',
        },
        stateless: { url, allow: ['echo'], namespace: 'v2h' },
      },
    }),
  );
  policy = join(folder, 'policy.json');
  await writeFile(
    policy,
    JSON.stringify({
      kind: 'rules',
      rules: [
        { tool: 'tk__wipe', decision: 'deny' },
        { tool: 'fs__write_file', decision: 'deny' },
        { tool: 'tk__publish', decision: 'ask' },
      ],
      default: 'allow',
    }),
  );
}, 60_000);

afterAll(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  for (const child of children.splice(0)) await stopProcess(child);
  await rm(folder, { recursive: true, force: true });
});

function newClient(modern: boolean): Client {
  const client = new Client(
    { name: 'v2-peer', version: '1.0.0' },
    {
      capabilities: { elicitation: {} },
      ...(modern ? { versionNegotiation: { mode: 'auto' as const } } : {}),
    },
  );
  // The user approves exactly the call whose arguments say "yes".
  client.setRequestHandler('elicitation/create', async (request) => ({
    action: 'accept',
    content: { approve: String(request.params.message).includes('"id": "yes"') },
  }));
  clients.push(client);
  return client;
}

async function serveHttp(): Promise<string> {
  const served = await startServeHttp([
    '--config',
    config,
    '--policy',
    policy,
    '--http',
    '127.0.0.1:0',
  ]);
  children.push(served.child);
  return served.url;
}

const text = (result: unknown) =>
  ((result as { content?: { text?: string }[] }).content ?? [])
    .map((block) => block.text ?? '')
    .join('');

async function exercise(client: Client, era: string): Promise<void> {
  expect(client.getNegotiatedProtocolVersion()).toBe(era);
  const names = (await client.listTools()).tools.map((tool) => tool.name);
  for (const name of ['tk__publish', 'fs__read_text_file', 'ev__echo', 'v2__echo', 'v2h__echo']) {
    expect(names).toContain(name);
  }
  expect(
    text(
      await client.callTool({
        name: 'fs__read_text_file',
        arguments: { path: join(files, 'readme.txt') },
      }),
    ),
  ).toContain('hello from a real filesystem server');
  expect(text(await client.callTool({ name: 'ev__echo', arguments: { message: 'hi' } }))).toContain(
    'hi',
  );
  expect(text(await client.callTool({ name: 'v2__echo', arguments: { message: 'hi' } }))).toBe(
    'Echo: hi',
  );
  expect(text(await client.callTool({ name: 'v2h__echo', arguments: { message: 'hi' } }))).toBe(
    'Echo: hi',
  );
  const target = join(files, `written-${era}.txt`);
  const denied = await client.callTool({
    name: 'fs__write_file',
    arguments: { path: target, content: 'nope' },
  });
  expect(denied.isError).toBe(true);
  expect(text(denied)).toMatch(/denied by the gateway's policy/);
  expect(existsSync(target)).toBe(false);
  const approved = await client.callTool({ name: 'tk__publish', arguments: { id: 'yes' } });
  expect(text(approved)).toBe('published yes');
  const declined = await client.callTool({ name: 'tk__publish', arguments: { id: 'no' } });
  expect(declined.isError).toBe(true);
  expect(text(declined)).toMatch(/not approved/);
}

async function published(): Promise<string[]> {
  const lines = (await readFile(callsFile, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  return lines
    .map((line) => JSON.parse(line) as { name: string; args: { id?: string } })
    .filter((call) => call.name === 'publish')
    .map((call) => call.args.id as string);
}

describe('the SDK v2 client downstream of toolfence-mcp serve, real servers upstream', () => {
  it.each([
    ['2026-07-28', true],
    ['2025-11-25', false],
  ])(
    'over stdio in %s',
    async (era, modern) => {
      const before = await published();
      const client = newClient(modern);
      await client.connect(
        new StdioClientTransport({
          command: process.execPath,
          args: [CLI, 'serve', '--config', config, '--policy', policy],
          env: ENV,
          stderr: 'ignore',
        }),
      );
      await exercise(client, era);
      await client.close();
      expect((await published()).slice(before.length)).toEqual(['yes']);
    },
    60_000,
  );

  it.each([
    ['2026-07-28', true],
    ['2025-11-25', false],
  ])(
    'over --http in %s',
    async (era, modern) => {
      const before = await published();
      const url = await serveHttp();
      const client = newClient(modern);
      await client.connect(new StreamableHTTPClientTransport(new URL(url)));
      await exercise(client, era);
      await client.close();
      expect((await published()).slice(before.length)).toEqual(['yes']);
    },
    60_000,
  );

  it('serves our own McpClient over --http in 2026-07-28, asking through input_required', async () => {
    const before = await published();
    const url = await serveHttp();
    const asked: string[] = [];
    const client = new McpClient({
      url,
      allowNonPublic: allowLoopback,
      elicitation: {
        handler: async (params) => {
          asked.push(String(params.message));
          return {
            action: 'accept',
            content: { approve: String(params.message).includes('"id": "yes"') },
          };
        },
      },
    });
    try {
      await client.connect();
      expect(client.protocolVersion).toBe('2026-07-28');
      const approved = await client.callTool('tk__publish', { id: 'yes' });
      expect((approved.content[0] as { text: string }).text).toBe('published yes');
      const declined = await client.callTool('tk__publish', { id: 'no' });
      expect(declined.isError).toBe(true);
      expect(asked).toHaveLength(2);
    } finally {
      await client.close();
    }
    expect((await published()).slice(before.length)).toEqual(['yes']);
  }, 60_000);
});
