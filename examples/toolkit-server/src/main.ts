/**
 * Runs the example toolkit over stdio (default) or Streamable HTTP on 127.0.0.1
 * (`--http [port]`; prints `listening <url>` as its first line of stdout).
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createToolkitServer, TRANSPORT_LIMITS } from './toolkit-server.ts';

// TOOLKIT_SEARCH_DESCRIPTION changes a tool's definition (the gateway demo's rug pull).
const options =
  process.env.TOOLKIT_SEARCH_DESCRIPTION === undefined
    ? {}
    : { searchDescription: process.env.TOOLKIT_SEARCH_DESCRIPTION };

const mode = process.argv[2] ?? '--stdio';

if (mode === '--stdio') {
  // The SDK's default read buffer (10 MiB) holds about 7.4 MiB of attachments; size it for ours.
  await createToolkitServer(options).connect(
    new StdioServerTransport(process.stdin, process.stdout, {
      maxBufferSize: TRANSPORT_LIMITS.stdioMaxBufferSize,
    }),
  );
} else if (mode === '--http') {
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer(async (request, response) => {
    if (new URL(request.url ?? '/', 'http://127.0.0.1').pathname !== '/mcp') {
      response.writeHead(404).end();
      return;
    }
    const sessionId = request.headers['mcp-session-id'];
    let transport = typeof sessionId === 'string' ? transports.get(sessionId) : undefined;
    if (transport === undefined) {
      if (sessionId !== undefined) {
        response.writeHead(404, { 'content-type': 'application/json' });
        response.end(
          JSON.stringify({
            jsonrpc: '2.0',
            error: { code: -32001, message: 'Session not found' },
            id: null,
          }),
        );
        return;
      }
      const created: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        // The SDK's default body limit (4 MiB) holds about 2.9 MiB of attachments.
        maxRequestBodySize: TRANSPORT_LIMITS.httpMaxRequestBodySize,
        onsessioninitialized: (id): void => {
          transports.set(id, created);
        },
      });
      created.onclose = () => {
        if (created.sessionId) transports.delete(created.sessionId);
      };
      await createToolkitServer(options).connect(created);
      transport = created;
    }
    await transport.handleRequest(request, response);
  });
  const port = Number(process.argv[3] ?? 0);
  http.listen(port, '127.0.0.1', () => {
    const { port: bound } = http.address() as AddressInfo;
    process.stdout.write(`listening http://127.0.0.1:${bound}/mcp\n`);
  });
  const stop = () => http.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
} else {
  process.stderr.write('usage: toolkit-server [--stdio | --http [port]]\n');
  process.exitCode = 2;
}
