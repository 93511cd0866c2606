// `toolfence-mcp serve --http` shared by several clients (the built CLI, real SDK clients and
// fetch on 127.0.0.1): idle legacy sessions expire and are closed before a new client is refused,
// and one client's flood of slow calls is bounded (a busy answer) so another client's call runs.
// Outcomes are checked by order and by answer, never by elapsed time.
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';

const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));

let folder: string;
const children: ChildProcess[] = [];
const clients: Client[] = [];
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-http-fairness-'));
});
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  for (const child of children.splice(0)) {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  }
  await rm(folder, { recursive: true, force: true });
});

async function serveHttp(gateway: Record<string, unknown>): Promise<string> {
  const config = join(folder, 'toolfence.json');
  await writeFile(
    config,
    JSON.stringify({
      mcpServers: { toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' } },
      gateway,
    }),
  );
  const child = spawn(
    process.execPath,
    [CLI, 'serve', '--config', config, '--http', '127.0.0.1:0'],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } },
  );
  children.push(child);
  let stderr = '';
  return new Promise((resolve, reject) => {
    child.stderr?.on('data', (chunk) => {
      stderr += String(chunk);
      const match = /listening on (http:\/\/127\.0\.0\.1:\d+\/mcp)/.exec(stderr);
      if (match) resolve(match[1] as string);
    });
    child.once('exit', () => reject(new Error(`the gateway exited: ${stderr}`)));
  });
}

/** A legacy (2025-11-25) session of the SDK 1.x client. */
async function connect(url: string): Promise<Client> {
  const client = new Client({ name: 'fairness-client', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  clients.push(client);
  return client;
}

const slow = (client: Client, n: number, ms: number) =>
  client.callTool({ name: 'tk__slow', arguments: { ms, n } });

/** A stateless (2026-07-28) tools/call through fetch; resolves to the parsed answer. */
async function statelessCall(url: string, n: number, ms: number): Promise<unknown> {
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'fetch', version: '1.0.0' },
  };
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'tk__slow',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: n,
      method: 'tools/call',
      params: { name: 'tk__slow', arguments: { ms, n }, _meta: meta },
    }),
  });
  const text = await response.text();
  const data = text.startsWith('{')
    ? text
    : (/^data: (.*)$/m.exec(text)?.[1] ?? JSON.stringify({ raw: text }));
  return JSON.parse(data);
}

describe('--http: idle legacy sessions', () => {
  it('are closed when idle past httpSessionIdleMs, so a new client is served, not refused', async () => {
    const url = await serveHttp({ httpMaxSessions: 2, httpSessionIdleMs: 1_000 });
    const first = await connect(url);
    await connect(url);
    // Full, and nobody idle long enough yet: the third is refused (503).
    await expect(connect(url)).rejects.toThrow(/503|Too many sessions/);
    // Idle past the limit (bounded wait): the idle sessions are closed before refusing.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const third = await connect(url);
    expect((await third.listTools()).tools.map((tool) => tool.name)).toContain('tk__slow');
    // An expired session is gone: its next request is answered 404 (a client starts anew).
    await expect(first.listTools()).rejects.toThrow(/404|Session not found/);
  }, 60_000);

  it('a session with a call in flight is not idle', async () => {
    const url = await serveHttp({ httpMaxSessions: 1, httpSessionIdleMs: 500 });
    const busyClient = await connect(url);
    const call = slow(busyClient, 1, 2_000);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await expect(connect(url)).rejects.toThrow(/503|Too many sessions/);
    expect(JSON.stringify(await call)).toContain('slow 1');
  }, 60_000);
});

describe('--http: one client cannot hold every call slot', () => {
  it('a legacy session over httpMaxCallsPerSession gets GATEWAY_HTTP_BUSY; another session runs at once', async () => {
    // Two upstream slots: without a per-session bound, the flood queues in front of the fresh call.
    const url = await serveHttp({ maxConcurrentCalls: 2, httpMaxCallsPerSession: 1 });
    const heavy = await connect(url);
    const fresh = await connect(url);
    const order: string[] = [];
    const flood = Array.from({ length: 6 }, (_, n) =>
      slow(heavy, n, 3_000).then(
        (result) => {
          order.push(result.isError === true ? 'heavy-error' : 'heavy');
          return result;
        },
        (error: unknown) => {
          order.push('heavy-refused');
          return error;
        },
      ),
    );
    // Let the flood's requests arrive first.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const answer = await slow(fresh, 99, 1);
    order.push('fresh');
    const outcomes = await Promise.all(flood);
    expect(JSON.stringify(answer)).toContain('slow 99');
    // The fresh call finished before any of the flood's running calls.
    expect(order.indexOf('fresh')).toBeLessThan(order.indexOf('heavy'));
    const refused = outcomes.filter((outcome) => String(outcome).includes('GATEWAY_HTTP_BUSY'));
    expect(refused).toHaveLength(5);
  }, 60_000);

  it('stateless calls over httpMaxStatelessCalls get GATEWAY_HTTP_BUSY', async () => {
    const url = await serveHttp({ httpMaxStatelessCalls: 2 });
    const answers = await Promise.all(
      Array.from({ length: 5 }, (_, n) => statelessCall(url, n + 1, 1_500)),
    );
    const busy = answers.filter((answer) => JSON.stringify(answer).includes('GATEWAY_HTTP_BUSY'));
    const ran = answers.filter((answer) => JSON.stringify(answer).includes('"slow '));
    expect(busy).toHaveLength(3);
    expect(ran).toHaveLength(2);
    // The share is given back: a later call runs.
    expect(JSON.stringify(await statelessCall(url, 9, 1))).toContain('slow 9');
  }, 60_000);
});

describe('--http fairness options', () => {
  it.each(['httpSessionIdleMs', 'httpMaxCallsPerSession', 'httpMaxStatelessCalls'])(
    '%s must be a positive integer',
    (key) => {
      expect(() => parseGatewayConfig({ mcpServers: {}, gateway: { [key]: 0 } })).toThrow(
        expect.objectContaining({ code: 'GATEWAY_CONFIG', details: { at: `gateway.${key}` } }),
      );
      expect(parseGatewayConfig({ mcpServers: {}, gateway: { [key]: 7 } }).gateway).toMatchObject({
        [key]: 7,
      });
    },
  );
});
