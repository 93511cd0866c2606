import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/run-cli.js';

const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
const CLI = fileURLToPath(new URL('../dist/cli/main.js', import.meta.url));
const TOKEN = 'a-test-token-of-32-characters-xx';

let folder: string;
let callsFile: string;
const children: ChildProcess[] = [];
const clients: Client[] = [];
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-gateway-http-'));
  callsFile = join(folder, 'calls.jsonl');
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

async function serveHttp(gateway: Record<string, unknown> = {}): Promise<string> {
  const config = join(folder, 'toolfence.json');
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
      },
      gateway,
    }),
  );
  const child = spawn(
    process.execPath,
    [CLI, 'serve', '--config', config, '--http', '127.0.0.1:0'],
    {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    },
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

async function connect(url: string, token?: string, approve?: boolean) {
  const client = new Client(
    { name: 'http-client', version: '1.0.0' },
    { capabilities: approve === undefined ? {} : { elicitation: {} } },
  );
  if (approve !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, () => ({
      action: 'accept',
      content: { approve },
    }));
  }
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), {
      ...(token === undefined
        ? {}
        : { requestInit: { headers: { authorization: `Bearer ${token}` } } }),
    }),
  );
  clients.push(client);
  return client;
}

const text = (result: Record<string, unknown>) =>
  (result.content as { type: string; text?: string }[]).map((block) => block.text ?? '').join('');

describe('toolfence-mcp serve --http', () => {
  it('serves Streamable HTTP sessions, each asked its own approvals', async () => {
    const url = await serveHttp();
    const yes = await connect(url, undefined, true);
    const no = await connect(url, undefined, false);
    expect((await yes.listTools()).tools.map((tool) => tool.name)).toContain('tk__note');
    expect(text(await yes.callTool({ name: 'tk__note', arguments: { id: 'h' } }))).toBe('note h');
    const [approved, declined] = await Promise.all([
      yes.callTool({ name: 'tk__publish', arguments: { id: 'p1' } }),
      no.callTool({ name: 'tk__publish', arguments: { id: 'p2' } }),
    ]);
    expect(text(approved)).toBe('published p1');
    expect(declined.isError).toBe(true);
    const seen = (await readFile(callsFile, 'utf8'))
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(seen.map((call) => [call.name, call.args.id])).toEqual([
      ['note', 'h'],
      ['publish', 'p1'],
    ]);
  }, 60_000);

  it('requires the bearer token when one is configured', async () => {
    const url = await serveHttp({ httpToken: TOKEN });
    await expect(connect(url)).rejects.toThrow();
    await expect(connect(url, `${TOKEN.slice(0, -1)}y`)).rejects.toThrow();
    const client = await connect(url, TOKEN);
    expect((await client.listTools()).tools.length).toBeGreaterThan(0);
    const bare = await fetch(url, { method: 'POST', body: '{}' });
    expect(bare.status).toBe(401);
  }, 60_000);

  it('refuses a request whose Host is not the loopback address it listens on (DNS rebinding)', async () => {
    const url = new URL(await serveHttp());
    const { request } = await import('node:http');
    const status = await new Promise<number>((resolve, reject) => {
      const sent = request(
        {
          host: url.hostname,
          port: url.port,
          path: '/mcp',
          method: 'POST',
          headers: {
            host: 'attacker.example',
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
          },
        },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      sent.on('error', reject);
      sent.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: '2025-11-25',
            capabilities: {},
            clientInfo: { name: 'x', version: '1' },
          },
        }),
      );
    });
    expect(status).toBe(403);
  }, 60_000);

  it('refuses a body over 4 MiB (413) and a body that is not JSON (400), in either era', async () => {
    const url = await serveHttp();
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    };
    const big = await fetch(url, {
      method: 'POST',
      headers,
      body: `"${'x'.repeat(4 * 1024 * 1024)}"`,
    });
    expect(big.status).toBe(413);
    const broken = await fetch(url, { method: 'POST', headers, body: '{"jsonrpc":' });
    expect(broken.status).toBe(400);
    // Just under the limit is read (and then judged by the protocol, not refused for size).
    const under = await fetch(url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'ping',
        params: { pad: 'x'.repeat(1024) },
      }),
    });
    expect(under.status).not.toBe(413);
  }, 60_000);

  it('requires the bearer token of a modern (2026-07-28) request too', async () => {
    const url = await serveHttp({ httpToken: TOKEN });
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'server/discover',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    });
    const headers = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'server/discover',
    };
    expect((await fetch(url, { method: 'POST', headers, body })).status).toBe(401);
    const allowed = await fetch(url, {
      method: 'POST',
      headers: { ...headers, authorization: `Bearer ${TOKEN}` },
      body,
    });
    expect(allowed.status).toBe(200);
    const answer = (await allowed.json()) as { result?: { supportedVersions?: string[] } };
    expect(answer.result?.supportedVersions).toContain('2026-07-28');
  }, 60_000);

  it('refuses an initialize beyond gateway.httpMaxSessions', async () => {
    const url = await serveHttp({ httpMaxSessions: 1 });
    await connect(url);
    await expect(connect(url)).rejects.toThrow();
  }, 60_000);

  it.each([
    ['off loopback without a token', ['--http', '0.0.0.0:0'], {}, /needs a bearer token/],
    ['a malformed address', ['--http', 'localhost'], {}, /--http takes HOST:PORT/],
    ['a short token', ['--http', '0.0.0.0:0'], { TOOLFENCE_GATEWAY_TOKEN: 'short' }, /at least 16/],
  ])('refuses to start %s', async (_label, flags, env, message) => {
    const config = join(folder, 'toolfence.json');
    await writeFile(config, JSON.stringify({ mcpServers: {} }));
    const err: string[] = [];
    const code = await runCli(['serve', '--config', config, ...flags], {
      out: () => undefined,
      err: (chunk) => err.push(chunk),
      env,
      cwd: folder,
    });
    expect(code).not.toBe(0);
    expect(err.join('')).toMatch(message);
  });
});
