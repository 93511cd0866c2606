import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createMcpHandler,
  isLegacyRequest,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import type { McpGateway } from '../gateway/mcp-gateway.js';

/** Options of {@link serveGatewayHttp}. */
export interface GatewayHttpOptions {
  /** Address to listen on (`127.0.0.1`, `::1`, or another one when `token` is set). */
  readonly host: string;
  /** Port; 0 picks a free one. */
  readonly port: number;
  /** Every request must carry `Authorization: Bearer <token>` when set. */
  readonly token: string | undefined;
  /** Legacy (2025-11-25) sessions open at once; an initialize beyond it is answered 503. */
  readonly maxSessions: number;
  /** True when `host` is a loopback address (then the Host header is checked too). */
  readonly loopback: boolean;
}

/** Largest request body accepted, in bytes (4 MiB, the SDK transports' own default). */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer ([^\s]+)$/i.exec(header ?? '');
  if (match === null) return false;
  const given = Buffer.from(match[1] as string, 'utf8');
  const expected = Buffer.from(token, 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function rpcError(status: number, code: number, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json' },
  });
}

/** Reads at most {@link MAX_BODY_BYTES}; `undefined` when the body is larger. */
async function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

async function writeResponse(response: Response, out: ServerResponse): Promise<void> {
  out.writeHead(response.status, Object.fromEntries(response.headers));
  if (response.body === null) {
    out.end();
    return;
  }
  const reader = response.body.getReader();
  out.once('close', () => {
    reader.cancel().catch(() => undefined);
  });
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    out.write(value);
  }
  out.end();
}

/**
 * Serves the gateway over Streamable HTTP at `http://<host>:<port>/mcp`, in both eras on the SDK
 * v2 server: a request carrying the 2026-07-28 `_meta` envelope is served statelessly (one
 * server instance per request, `createMcpHandler`; `subscriptions/listen` streams hear of tool
 * changes), and 2025-11-25 traffic gets sessions (`Mcp-Session-Id`, one gateway connection per
 * session, so approvals are asked of the session that made the call). Resolves once listening.
 */
export async function serveGatewayHttp(
  gateway: McpGateway,
  options: GatewayHttpOptions,
): Promise<{ readonly url: string; readonly close: () => Promise<void> }> {
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();
  let allowedHosts: string[] = [];
  const modern = createMcpHandler(() => gateway.downstreamServer('modern'), {
    legacy: 'reject',
    maxRequestBodySize: MAX_BODY_BYTES,
  });
  const unsubscribe = gateway.onToolsChanged(() => modern.notify.toolsChanged());

  const legacy = async (request: Request, parsedBody: unknown): Promise<Response> => {
    const sessionId = request.headers.get('mcp-session-id');
    const existing = sessionId === null ? undefined : sessions.get(sessionId);
    if (existing !== undefined) return existing.handleRequest(request, { parsedBody });
    if (sessionId !== null) return rpcError(404, -32001, 'Session not found');
    if (request.method !== 'POST') {
      return rpcError(405, -32000, 'Start a session with an initialize POST');
    }
    if (sessions.size >= options.maxSessions) {
      return rpcError(503, -32000, 'Too many sessions (gateway.httpMaxSessions)');
    }
    const created: WebStandardStreamableHTTPServerTransport =
      new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, created);
        },
        onsessionclosed: (id) => {
          sessions.delete(id);
        },
        maxRequestBodySize: MAX_BODY_BYTES,
      });
    created.onclose = () => {
      if (created.sessionId !== undefined) sessions.delete(created.sessionId);
    };
    await gateway.downstreamServer('legacy').connect(created);
    const response = await created.handleRequest(request, { parsedBody });
    // A first request that did not start a session leaves nothing behind.
    if (created.sessionId === undefined || !sessions.has(created.sessionId)) {
      await created.close().catch(() => undefined);
    }
    return response;
  };

  const handle = async (incoming: IncomingMessage, out: ServerResponse): Promise<void> => {
    if (new URL(incoming.url ?? '/', 'http://gateway.invalid').pathname !== '/mcp') {
      out.writeHead(404).end();
      return;
    }
    if (
      options.token !== undefined &&
      !bearerMatches(incoming.headers.authorization, options.token)
    ) {
      out.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'application/json' });
      out.end(JSON.stringify({ error: 'a bearer token is required' }));
      return;
    }
    // DNS rebinding: on loopback, the Host must name the address and port listened on.
    if (options.loopback && !allowedHosts.includes(incoming.headers.host ?? '')) {
      await writeResponse(rpcError(403, -32000, 'Invalid Host header'), out);
      return;
    }
    const method = incoming.method ?? 'GET';
    const body = method === 'POST' ? await readBody(incoming) : Buffer.alloc(0);
    if (body === undefined) {
      await writeResponse(rpcError(413, -32000, 'The request body is over 4 MiB'), out);
      return;
    }
    const headers = new Headers();
    for (const [name, value] of Object.entries(incoming.headers)) {
      if (typeof value === 'string') headers.set(name, value);
      else if (Array.isArray(value)) headers.set(name, value.join(', '));
    }
    const abort = new AbortController();
    out.once('close', () => abort.abort());
    const request = new Request(`http://${incoming.headers.host ?? 'gateway.invalid'}/mcp`, {
      method,
      headers,
      signal: abort.signal,
      ...(method === 'POST' ? { body: new Uint8Array(body) } : {}),
    });
    let parsedBody: unknown;
    if (body.length > 0) {
      try {
        parsedBody = JSON.parse(body.toString('utf8'));
      } catch {
        parsedBody = undefined;
      }
    }
    const response =
      parsedBody === undefined && method === 'POST'
        ? rpcError(400, -32700, 'Parse error: the body is not JSON')
        : (await isLegacyRequest(request, parsedBody))
          ? await legacy(request, parsedBody)
          : await modern.fetch(request, { parsedBody });
    await writeResponse(response, out);
  };
  const server = createServer((request, response) => {
    handle(request, response).catch(() => {
      if (!response.headersSent) response.writeHead(500);
      response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  allowedHosts = [`${shown}:${address.port}`, `localhost:${address.port}`];
  return {
    url: `http://${shown}:${address.port}/mcp`,
    close: async () => {
      unsubscribe();
      await modern.close().catch(() => undefined);
      await Promise.all([...sessions.values()].map((transport) => transport.close()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
