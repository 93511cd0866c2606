// The client's own bounds against a hostile legacy Streamable HTTP server (real loopback
// servers): answers the client owes and bodies it does not need can never hold it up.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { McpClient, type McpClientOptions } from '../src/client/mcp-client.js';
import { TransportTimeoutError } from '../src/transport/errors.js';
import { allowLoopback } from './helpers.js';

type Message = {
  jsonrpc: '2.0';
  id?: string | number;
  method?: string;
  params?: { protocolVersion?: string };
};
type Handler = (message: Message, res: ServerResponse, req: IncomingMessage) => boolean | undefined;

interface LegacyServer {
  readonly url: string;
  readonly server: Server;
  readonly sockets: Set<Socket>;
  maxSockets: number;
  readonly methods: string[];
  readonly httpMethods: string[];
}

const servers: LegacyServer[] = [];
const clients: McpClient[] = [];

afterEach(async () => {
  for (const client of clients.splice(0)) await client.close();
  for (const { server } of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

function json(res: ServerResponse, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(200, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/**
 * A legacy server (session `s`): refuses server/discover (-32601), answers initialize and
 * tools/list (one tool `t`); `handle` goes first for any POST body, and `onGet` for a GET (405 by
 * default).
 */
async function legacyServer(
  handle: Handler = () => undefined,
  onGet?: (res: ServerResponse) => void,
  onDelete?: (res: ServerResponse) => void,
): Promise<LegacyServer> {
  const state: LegacyServer = {
    url: '',
    server: undefined as unknown as Server,
    sockets: new Set(),
    maxSockets: 0,
    methods: [],
    httpMethods: [],
  };
  const server = createServer((req, res) => {
    state.httpMethods.push(req.method ?? '');
    if (req.method === 'GET') {
      if (onGet === undefined) res.writeHead(405).end();
      else onGet(res);
      return;
    }
    if (req.method === 'DELETE') {
      if (onDelete === undefined) res.writeHead(200).end();
      else onDelete(res);
      return;
    }
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
    });
    req.on('end', () => {
      const message = JSON.parse(body) as Message;
      state.methods.push(message.method ?? ('result' in message ? 'result' : 'error'));
      if (handle(message, res, req) === true) return;
      if (message.method === 'server/discover') {
        json(res, { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'nf' } });
      } else if (message.method === 'initialize') {
        json(
          res,
          {
            jsonrpc: '2.0',
            id: message.id,
            result: {
              protocolVersion: message.params?.protocolVersion,
              capabilities: { tools: {} },
              serverInfo: { name: 'hostile', version: '1' },
            },
          },
          { 'mcp-session-id': 's' },
        );
      } else if (message.method === 'tools/list') {
        json(res, {
          jsonrpc: '2.0',
          id: message.id,
          result: { tools: [{ name: 't', inputSchema: { type: 'object' } }] },
        });
      } else if (message.method === 'tools/call') {
        json(res, {
          jsonrpc: '2.0',
          id: message.id,
          result: { content: [{ type: 'text', text: 'ok' }] },
        });
      } else {
        res.writeHead(202).end();
      }
    });
  });
  server.on('connection', (socket) => {
    state.sockets.add(socket);
    state.maxSockets = Math.max(state.maxSockets, state.sockets.size);
    socket.on('close', () => state.sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  Object.assign(state, { server, url: `http://127.0.0.1:${port}/mcp` });
  servers.push(state);
  return state;
}

function client(url: string, options: Partial<McpClientOptions> = {}): McpClient {
  const made = new McpClient({
    url,
    allowNonPublic: allowLoopback,
    standaloneStream: false,
    ...options,
  } as McpClientOptions);
  clients.push(made);
  return made;
}

/** Headers at once, then a body that never ends (a byte every `everyMs`, or none at all). */
function endless(res: ServerResponse, status: number, everyMs: number | undefined): void {
  res.writeHead(status, { 'content-type': 'text/plain' });
  res.flushHeaders();
  if (everyMs === undefined) return;
  const timer = setInterval(() => res.write(' '), everyMs);
  res.on('close', () => clearInterval(timer));
}

describe('answers to notifications/initialized that never end', () => {
  it.each([
    [202, 500],
    [202, undefined],
    [200, 500],
    [200, undefined],
  ])(
    'status %i (a byte every %s ms): the handshake does not wait for the body',
    async (status, every) => {
      const server = await legacyServer((message, res) => {
        if (message.method !== 'notifications/initialized') return undefined;
        endless(res, status, every);
        return true;
      });
      const mcp = client(server.url, { openTimeoutMs: 1000, readTimeoutMs: 2000 });
      const started = Date.now();
      const tools = await mcp.tools();
      expect(tools.map((tool) => tool.name)).toEqual(['t']);
      expect(Date.now() - started).toBeLessThan(1500);
    },
  );

  it.each([
    [500, 500],
    [404, undefined],
    [429, 500],
    [401, undefined],
  ])(
    'an error status %i with an endless body fails the handshake at once',
    async (status, every) => {
      const server = await legacyServer((message, res) => {
        if (message.method !== 'notifications/initialized') return undefined;
        endless(res, status, every);
        return true;
      });
      const mcp = client(server.url, { openTimeoutMs: 1000, readTimeoutMs: 60_000 });
      const started = Date.now();
      await expect(mcp.tools()).rejects.toBeInstanceOf(Error);
      expect(Date.now() - started).toBeLessThan(1500);
    },
  );

  it('a handshake notification whose answer never starts fails within openTimeoutMs', async () => {
    const server = await legacyServer((message) => message.method === 'notifications/initialized');
    // readTimeoutMs (the wait for headers) is far longer: openTimeoutMs bounds the handshake.
    const mcp = client(server.url, { openTimeoutMs: 800, readTimeoutMs: 60_000 });
    const started = Date.now();
    const error = await mcp.tools().then(
      () => undefined,
      (failure: unknown) => failure,
    );
    expect(Date.now() - started).toBeLessThan(3000);
    const cause = (error as { cause?: unknown }).cause ?? error;
    expect(cause).toBeInstanceOf(TransportTimeoutError);
    expect((cause as TransportTimeoutError).details).toMatchObject({
      method: 'notifications/initialized',
      openTimeoutMs: 800,
    });
  });

  it('a 4xx JSON error body that never ends is dropped after readTimeoutMs', async () => {
    const server = await legacyServer((message, res) => {
      if (message.method !== 'initialize') return undefined;
      res.writeHead(400, { 'content-type': 'application/json' });
      res.write('{"jsonrpc":"2.0",');
      const timer = setInterval(() => res.write(' '), 200);
      res.on('close', () => clearInterval(timer));
      return true;
    });
    const mcp = client(server.url, { openTimeoutMs: 60_000, readTimeoutMs: 1000 });
    const started = Date.now();
    await expect(mcp.tools()).rejects.toBeInstanceOf(Error);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});

describe('close() and the session DELETE', () => {
  it('returns promptly when the DELETE answer drips forever, and the DELETE was sent', async () => {
    const server = await legacyServer(undefined, undefined, (res) => {
      endless(res, 200, 200);
      res.write(' ');
    });
    const mcp = client(server.url, { openTimeoutMs: 2000, readTimeoutMs: 3000 });
    await mcp.tools();
    const started = Date.now();
    await mcp.close();
    expect(Date.now() - started).toBeLessThan(1000);
    expect(server.httpMethods).toContain('DELETE');
  });

  it('gives a DELETE that is never answered at most min(readTimeoutMs, 5 s)', async () => {
    const server = await legacyServer(undefined, undefined, () => undefined);
    const mcp = client(server.url, { openTimeoutMs: 2000, readTimeoutMs: 700 });
    await mcp.tools();
    const started = Date.now();
    await mcp.close();
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(600);
    expect(took).toBeLessThan(2000);
  });

  it('rejects a call in flight at once, before the DELETE', async () => {
    const server = await legacyServer(
      (message) => message.method === 'tools/call',
      undefined,
      () => undefined,
    );
    const mcp = client(server.url, { openTimeoutMs: 2000, readTimeoutMs: 3000 });
    await mcp.tools();
    const call = mcp.callTool('t', {}).then(
      () => 'resolved',
      () => 'rejected',
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    const closing = mcp.close();
    const settledFirst = await Promise.race([
      call,
      new Promise((resolve) => setTimeout(() => resolve('pending'), 500)),
    ]);
    expect(settledFirst).toBe('rejected');
    await closing;
  });
});

describe("the server's requests are answered within maxConcurrentRequests", () => {
  it('a flood of pings on the standalone stream opens at most maxConcurrentRequests answer POSTs', async () => {
    const count = 500;
    let held = 0;
    const server = await legacyServer(
      (message) => {
        if (message.method !== undefined) return undefined;
        held++; // an answer: its POST is never answered
        return true;
      },
      (res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        let events = '';
        for (let index = 0; index < count; index++) {
          events += `data: ${JSON.stringify({ jsonrpc: '2.0', id: index, method: 'ping' })}\n\n`;
        }
        res.write(events);
      },
    );
    const warnings: unknown[][] = [];
    const dropped: unknown[] = [];
    const mcp = client(server.url, {
      standaloneStream: true,
      readTimeoutMs: 30_000,
      maxConcurrentRequests: 4,
      logger: {
        warn: (...args: unknown[]) => warnings.push(args),
        debug: (message: string, details?: unknown) => {
          if (message.startsWith('Dropped a server request')) dropped.push(details);
        },
      },
    });
    await mcp.connect();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(held).toBe(4);
    // initialize/tools connections, the GET stream and 4 answers
    expect(server.maxSockets).toBeLessThanOrEqual(4 + 3);
    expect(warnings[0]?.[1]).toMatchObject({
      reason: 'server-request-limit',
      method: 'ping',
      maxConcurrentRequests: 4,
    });
    expect(dropped.length).toBe(count - 4 - 1);
  });

  it('an ordinary server gets every ping answered when it takes the answers', async () => {
    const count = 200;
    const answered = new Set<unknown>();
    const server = await legacyServer(
      (message, res) => {
        if (message.method !== undefined) return undefined;
        answered.add(message.id);
        res.writeHead(202).end();
        return true;
      },
      (res) => {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        let index = 0;
        const timer = setInterval(() => {
          res.write(`data: ${JSON.stringify({ jsonrpc: '2.0', id: index++, method: 'ping' })}\n\n`);
          if (index === count) clearInterval(timer);
        }, 2);
        res.on('close', () => clearInterval(timer));
      },
    );
    const mcp = client(server.url, { standaloneStream: true, maxConcurrentRequests: 8 });
    await mcp.connect();
    for (let waited = 0; answered.size < count && waited < 100; waited++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    expect(answered.size).toBe(count);
  });
});

describe('maxInputPrompts over a legacy server', () => {
  it('bounds the sampling requests tied to one tools/call (its SSE stream), answering the rest with an error', async () => {
    const errors: unknown[] = [];
    const server = await legacyServer((message, res) => {
      if (message.method === undefined && 'error' in message) {
        errors.push((message as { error?: unknown }).error);
        res.writeHead(202).end();
        return true;
      }
      if (message.method !== 'tools/call') return undefined;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let index = 0; index < 20; index++) {
        res.write(
          `data: ${JSON.stringify({
            jsonrpc: '2.0',
            id: `s${index}`,
            method: 'sampling/createMessage',
            params: {
              messages: [{ role: 'user', content: { type: 'text', text: 'spend' } }],
              maxTokens: 10,
            },
          })}\n\n`,
        );
      }
      setTimeout(
        () =>
          res.end(
            `data: ${JSON.stringify({ jsonrpc: '2.0', id: message.id, result: { content: [{ type: 'text', text: 'ok' }] } })}\n\n`,
          ),
        500,
      );
      return true;
    });
    let asked = 0;
    const mcp = client(server.url, {
      maxInputPrompts: 2,
      maxConcurrentRequests: 32,
      sampling: {
        handler: async () => {
          asked++;
          return { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' };
        },
      },
    });
    const first = await mcp.callTool('t', {});
    expect(first.content).toEqual([{ type: 'text', text: 'ok' }]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(asked).toBe(2);
    expect(errors).toHaveLength(18);
    expect(errors[0]).toMatchObject({ code: -32600, data: { maxInputPrompts: 2 } });
    // The next call has an allowance of its own.
    await mcp.callTool('t', {});
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(asked).toBe(4);
  });
});
