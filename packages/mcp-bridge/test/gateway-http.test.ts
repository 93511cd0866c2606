import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli } from '../src/cli/run-cli.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { startServeHttp } from './fixtures/serve-http.js';
import { stopProcess } from './fixtures/teardown.js';
import { initializeRequest } from './helpers.js';

const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
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
  await Promise.all(children.splice(0).map((child) => stopProcess(child)));
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
  const served = await startServeHttp(['--config', config, '--http', '127.0.0.1:0']);
  children.push(served.child);
  return served.url;
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
    // The scheme is case-insensitive and one or more spaces (not tabs) may follow it (RFC 9110,
    // 11.4); the token itself is compared exactly.
    const initialize = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'spaces', version: '1.0.0' },
      },
    });
    const post = (authorization: string) =>
      fetch(url, {
        method: 'POST',
        headers: {
          authorization,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: initialize,
      }).then((response) => response.status);
    expect(await post(`Bearer  ${TOKEN}`)).toBe(200);
    expect(await post(`bearer ${TOKEN}`)).toBe(200);
    expect(await post(`Bearer\t${TOKEN}`)).toBe(401);
    expect(await post(`Bearer ${TOKEN}x`)).toBe(401);
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
      sent.end(JSON.stringify(initializeRequest()));
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

  /** Sends `head` then `parts` on a raw connection; resolves with what came back when it closed. */
  const raw = async (url: string, head: string, parts: readonly string[], cut: boolean) => {
    const { port } = new URL(url);
    const socket = netConnect(Number(port), '127.0.0.1');
    await once(socket, 'connect');
    let answer = '';
    socket.on('data', (chunk: Buffer) => {
      answer += chunk.toString('latin1');
    });
    socket.on('error', () => undefined);
    socket.write(head);
    for (const part of parts) socket.write(part);
    if (cut) socket.destroy();
    else socket.end();
    if (!socket.destroyed) await once(socket, 'close');
    return answer;
  };
  const post = (host: string, extra: string) =>
    `POST /mcp HTTP/1.1\r\nhost: ${host}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n${extra}\r\n`;

  it.each<[string, (url: string, host: string) => Promise<string>, string | undefined]>([
    [
      'a body over 4 MiB in 64 KiB chunks of a chunked upload (no length given)',
      (url, host) =>
        raw(
          url,
          post(host, 'transfer-encoding: chunked\r\n'),
          [...Array.from({ length: 66 }, () => `10000\r\n${'x'.repeat(0x10000)}\r\n`), '0\r\n\r\n'],
          false,
        ),
      'HTTP/1.1 413',
    ],
    [
      'a client that goes away in the middle of its body',
      (url, host) => raw(url, post(host, 'content-length: 1000\r\n'), ['{"jsonrpc":"2.0",'], true),
      undefined,
    ],
    [
      'a body shorter than its content-length, then the client ends its side',
      (url, host) => raw(url, post(host, 'content-length: 1000\r\n'), ['{"jsonrpc":"2.0"}'], false),
      undefined,
    ],
  ])(
    'reads a request body bounded and safely: %s; the gateway goes on serving',
    async (_name, send, status) => {
      const url = await serveHttp();
      const answer = await send(url, new URL(url).host);
      if (status !== undefined) expect(answer.startsWith(status)).toBe(true);
      else expect(answer).not.toMatch(/^HTTP\/1\.1 200/);
      const client = await connect(url);
      expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('tk__note');
      if (status === undefined) return;
      // Over keep-alive: a request over the limit is answered 413, and the next one is served.
      const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
      const statuses = await new Promise<number[]>((resolve, reject) => {
        const got: number[] = [];
        const next = (body: string) =>
          new Promise<void>((done) => {
            const request = httpRequest(
              url,
              {
                method: 'POST',
                agent: keepAlive,
                headers: {
                  'content-type': 'application/json',
                  accept: 'application/json, text/event-stream',
                },
              },
              (response) => {
                got.push(response.statusCode ?? 0);
                response.resume();
                response.once('end', () => done());
              },
            );
            request.once('error', reject);
            request.end(body);
          });
        next(`"${'x'.repeat(4 * 1024 * 1024)}"`)
          .then(() => next('{"jsonrpc":'))
          .then(() => resolve(got), reject);
      });
      keepAlive.destroy();
      expect(statuses).toEqual([413, 400]);
    },
    60_000,
  );

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

// Shared by several clients: idle legacy sessions expire and are closed before a new client is
// refused, and one client's flood of slow calls is bounded (a busy answer) so another client's
// call runs. Outcomes are checked by order and by answer, never by elapsed time.
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

describe('--http: listen streams', () => {
  it('one more subscriptions/listen stream than gateway.httpMaxListenStreams gets GATEWAY_HTTP_BUSY naming the option', async () => {
    const url = await serveHttp({ httpMaxListenStreams: 1 });
    const target = new URL(url);
    const body = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'subscriptions/listen',
      params: {
        notifications: { toolsListChanged: true },
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
        },
      },
    });
    const opened: { destroy(): void }[] = [];
    /** Opens a stream; resolves to its first chunk (the stream stays open). */
    const listen = () =>
      new Promise<string>((resolve, reject) => {
        const request = httpRequest(
          {
            host: target.hostname,
            port: target.port,
            path: target.pathname,
            method: 'POST',
            headers: {
              'content-type': 'application/json',
              accept: 'application/json, text/event-stream',
              'mcp-protocol-version': '2026-07-28',
              'mcp-method': 'subscriptions/listen',
            },
          },
          (response) => response.once('data', (chunk: Buffer) => resolve(String(chunk))),
        );
        opened.push(request);
        request.once('error', reject);
        request.end(body);
      });
    try {
      expect(await listen()).toContain('notifications/subscriptions/acknowledged');
      const refused = await listen();
      expect(refused).toContain('GATEWAY_HTTP_BUSY');
      expect(refused).toContain('"option":"gateway.httpMaxListenStreams"');
    } finally {
      for (const request of opened) request.destroy();
    }
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
