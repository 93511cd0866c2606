import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { McpGateway } from '../gateway/mcp-gateway.js';

/** Options of {@link serveGatewayHttp}. */
export interface GatewayHttpOptions {
  /** Address to listen on (`127.0.0.1`, `::1`, or another one when `token` is set). */
  readonly host: string;
  /** Port; 0 picks a free one. */
  readonly port: number;
  /** Every request must carry `Authorization: Bearer <token>` when set. */
  readonly token: string | undefined;
  /** Sessions open at once; an initialize beyond it is answered 503. */
  readonly maxSessions: number;
  /** True when `host` is a loopback address (then the Host header is checked too). */
  readonly loopback: boolean;
}

/** Largest request body accepted, in bytes (4 MiB, the SDK transport's own default). */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

function bearerMatches(header: string | undefined, token: string): boolean {
  const match = /^Bearer ([^\s]+)$/i.exec(header ?? '');
  if (match === null) return false;
  const given = Buffer.from(match[1] as string, 'utf8');
  const expected = Buffer.from(token, 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function rpcError(response: ServerResponse, status: number, code: number, message: string): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/**
 * Serves the gateway over Streamable HTTP (MCP 2025-11-25 sessions, on the SDK 1.x server
 * transport) at `http://<host>:<port>/mcp`: one gateway connection per session, so approvals are
 * asked of the session that made the call. Resolves once listening.
 */
export async function serveGatewayHttp(
  gateway: McpGateway,
  options: GatewayHttpOptions,
): Promise<{ readonly url: string; readonly close: () => Promise<void> }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let allowedHosts: string[] = [];
  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    if (new URL(request.url ?? '/', 'http://gateway.invalid').pathname !== '/mcp') {
      response.writeHead(404).end();
      return;
    }
    if (
      options.token !== undefined &&
      !bearerMatches(request.headers.authorization, options.token)
    ) {
      response.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: 'a bearer token is required' }));
      return;
    }
    const sessionId = request.headers['mcp-session-id'];
    const transport = typeof sessionId === 'string' ? sessions.get(sessionId) : undefined;
    if (transport === undefined) {
      if (sessionId !== undefined) {
        rpcError(response, 404, -32001, 'Session not found');
        return;
      }
      if (request.method !== 'POST') {
        rpcError(response, 405, -32000, 'Start a session with an initialize POST');
        return;
      }
      if (sessions.size >= options.maxSessions) {
        rpcError(response, 503, -32000, 'Too many sessions (gateway.httpMaxSessions)');
        return;
      }
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, created);
        },
        onsessionclosed: (id) => {
          sessions.delete(id);
        },
        maxRequestBodySize: MAX_BODY_BYTES,
        ...(options.loopback ? { enableDnsRebindingProtection: true, allowedHosts } : {}),
      });
      await gateway.connect(created);
      await created.handleRequest(request, response);
      // A first request that did not start a session leaves nothing behind.
      if (created.sessionId === undefined || !sessions.has(created.sessionId)) {
        await created.close().catch(() => undefined);
      }
      return;
    }
    await transport.handleRequest(request, response);
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
      await Promise.all([...sessions.values()].map((transport) => transport.close()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
