import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { InMemoryEventStore } from '@modelcontextprotocol/sdk/examples/shared/inMemoryEventStore.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';

/** Pagination behaviours of the fault server's tools/list. */
export type PagingMode = 'normal' | 'repeat' | 'endless' | 'malformed';

/** Knobs a test turns before a request. */
export interface FaultState {
  json: boolean;
  /** Accepted bearer token; undefined accepts any request. */
  validToken: string | undefined;
  /** Tokens seen in Authorization headers, in order. */
  tokensSeen: string[];
  /** Answer the next N requests that carry a session id with 404 and forget the session. */
  expireNext: number;
  paging: PagingMode;
  toolCount: number;
  pageSize: number;
  withOutputSchema: boolean;
  /** Methods in arrival order (POST bodies). */
  methods: string[];
  /** HTTP requests by method (GET, POST, DELETE). */
  httpMethods: string[];
  /** Milliseconds to wait before answering a tools/call of `slow-first-byte`. */
  firstByteDelayMs: number;
  /** Raw tool entries appended to the listing (answered like `echo`). */
  extraTools: Record<string, unknown>[];
  /** tools/call handlers running now, and the most seen at once. */
  inFlight: number;
  maxInFlight: number;
  /** Keep an event store and send `retry:` (milliseconds) so streams can be resumed. */
  resumableRetryMs: number | undefined;
  /** `Last-Event-ID` headers seen on GET requests. */
  lastEventIds: string[];
  /** Request headers of the last tools/call. */
  callHeaders: Record<string, string | string[] | undefined>;
  /**
   * Serve MCP 2026-07-28 (stateless): answer `server/discover`, then every request on a fresh
   * session-less server (the SDK 1.x server under it sees the header rewritten to 2025-11-25);
   * GET is refused with 405. Set at start.
   */
  modern: boolean;
  /**
   * Refuse the next `times` POSTs of JSON-RPC `method` with HTTP `status` (and `Retry-After` when
   * given); a refused tools/call is still counted in `calls`.
   */
  refuse:
    | { status: number; method: string; times: number; retryAfter?: string | undefined }
    | undefined;
}

export interface FaultHttpServer {
  readonly url: string;
  readonly state: FaultState;
  /** Server-side count of tools/call per tool name. */
  readonly calls: Map<string, number>;
  close(): Promise<void>;
}

function toolList(state: FaultState): Tool[] {
  const tools: Tool[] = [];
  for (let index = 0; index < state.toolCount; index++) {
    tools.push({
      name: `tool_${index}`,
      description: `Tool number ${index}`,
      inputSchema: {
        type: 'object',
        properties: { value: { type: 'string' }, count: { type: 'integer' } },
        required: ['value'],
      },
      ...(state.withOutputSchema
        ? {
            outputSchema: {
              type: 'object',
              properties: { value: { type: 'string' }, index: { type: 'integer', minimum: index } },
              required: ['value'],
            },
          }
        : {}),
    });
  }
  return tools;
}

/**
 * Tools answered with hand-written bytes (`text/event-stream`, or `application/json` in JSON
 * mode) instead of the SDK's transport, to test framing: `response` is the JSON-RPC answer.
 */
const FRAMING_FAULTS: Record<
  string,
  (response: string, json: boolean, args: { bytes?: number }) => (Buffer | number)[]
> = {
  // A UTF-8 byte-order mark before the first field (an SSE stream may start with one).
  'sse-bom': (response) => [Buffer.from(`\uFEFFdata: ${response}\n\n`)],
  // Keep-alive comment lines with no blank line between them, every 50 ms for `bytes` ms.
  'sse-keepalive': (response, _json, args) => [
    ...Array.from({ length: Math.ceil((args.bytes ?? 1000) / 50) }, () => [
      Buffer.from(': keep-alive\n'),
      50,
    ]).flat(),
    Buffer.from(`data: ${response}\n\n`),
  ],
  // `bytes` bytes of 1 KiB comment lines with no blank line between them, then the answer.
  'sse-comment-flood': (response, _json, args) => [
    Buffer.from(`: ${'c'.repeat(1021)}\n`.repeat(Math.ceil((args.bytes ?? 1024) / 1024))),
    Buffer.from(`data: ${response}\n\n`),
  ],
  // The answer with a byte that is not UTF-8 (0xff) inside its text.
  'invalid-utf8': (response, json) => {
    const [head, tail] = response.split('"invalid-utf8-here"') as [string, string];
    const body = Buffer.concat([
      Buffer.from(`${head}"`),
      Buffer.from([0xff]),
      Buffer.from(`"${tail}`),
    ]);
    return json ? [body] : [Buffer.from('data: '), body, Buffer.from('\n\n')];
  },
  // A byte-order mark before the body: allowed at the start of an SSE stream, not before JSON.
  'bom-first': (response, json) => [
    Buffer.from(json ? `\uFEFF${response}` : `\uFEFFdata: ${response}\n\n`),
  ],
  // An empty batch instead of the answer.
  'empty-batch': (_response, json) => [Buffer.from(json ? '[]' : 'data: []\n\n')],
};

const FIXED_TOOLS: Tool[] = [
  'echo',
  'drop',
  'huge',
  'complex',
  'many-tokens',
  'trailing',
  'slow',
  'slow-first-byte',
  'trickle',
  'malformed',
  'close-stream',
  'declared-huge',
  'redirect',
  ...Object.keys(FRAMING_FAULTS),
].map((name) => ({
  name,
  description: `fault tool ${name}`,
  inputSchema: {
    type: 'object',
    properties: { text: { type: 'string' }, bytes: { type: 'integer' } },
  },
}));

/** How many fixed fault tools every listing starts with. */
export const FIXED_TOOL_COUNT: number = FIXED_TOOLS.length;

/**
 * A fault-injecting MCP server: the SDK's low-level `Server` behind the SDK's Streamable HTTP
 * server transport, with faults injected at the HTTP layer (drops, trailing garbage, trickle,
 * 401 and 404 answers). Counts every tools/call server-side.
 */
export async function startFaultHttpServer(
  init: Partial<FaultState> = {},
): Promise<FaultHttpServer> {
  const state: FaultState = {
    json: false,
    validToken: undefined,
    tokensSeen: [],
    expireNext: 0,
    paging: 'normal',
    toolCount: 0,
    pageSize: 100,
    withOutputSchema: false,
    methods: [],
    httpMethods: [],
    firstByteDelayMs: 0,
    extraTools: [],
    inFlight: 0,
    maxInFlight: 0,
    resumableRetryMs: undefined,
    lastEventIds: [],
    callHeaders: {},
    modern: false,
    refuse: undefined,
    ...init,
  };
  const calls = new Map<string, number>();
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  let currentResponse: ServerResponse | undefined;

  function makeServer(): Server {
    const server = new Server({ name: 'fault', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, (request) => {
      const all = [...FIXED_TOOLS, ...(state.extraTools as Tool[]), ...toolList(state)];
      const cursor = request.params?.cursor;
      if (state.paging === 'repeat') return { tools: [], nextCursor: 'same' };
      if (state.paging === 'malformed') return { tools: 'not-an-array' } as never;
      if (state.paging === 'endless') {
        return { tools: [], nextCursor: `c${Number((cursor ?? 'c0').slice(1)) + 1}` };
      }
      const start = cursor === undefined ? 0 : Number(cursor);
      const page = all.slice(start, start + state.pageSize);
      const next = start + state.pageSize < all.length ? String(start + state.pageSize) : undefined;
      return { tools: page, ...(next === undefined ? {} : { nextCursor: next }) };
    });
    server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
      const name = request.params.name;
      calls.set(name, (calls.get(name) ?? 0) + 1);
      const args = (request.params.arguments ?? {}) as { text?: string; bytes?: number };
      switch (name) {
        case 'drop': {
          currentResponse?.socket?.destroy();
          await new Promise((resolve) => setTimeout(resolve, 50));
          return { content: [{ type: 'text', text: 'never seen' }] };
        }
        case 'close-stream':
          // End the SSE stream mid-call (SEP-1699 polling); the client resumes with Last-Event-ID.
          extra.closeSSEStream?.();
          await new Promise((resolve) => setTimeout(resolve, 50));
          return { content: [{ type: 'text', text: 'resumed' }] };
        case 'internal-error':
          // The SDK answers a handler's plain Error with JSON-RPC -32603 (internal error).
          throw new Error('the handler crashed');
        case 'invalid-params':
          throw Object.assign(new Error('bad params'), { code: -32602 });
        case 'noisy-params':
          // A server's message with terminal escapes, a carriage return and 5,000 characters.
          throw Object.assign(
            new Error(`url: Invalid URL\r\u001b[2KAll good, ignore this\u202e${'x'.repeat(5000)}`),
            { code: -32602 },
          );
        case 'huge':
          return { content: [{ type: 'text', text: 'x'.repeat(args.bytes ?? 1024) }] };
        case 'complex': {
          let nested: unknown = 1;
          for (let depth = 0; depth < 100; depth++) nested = { a: nested };
          return { content: [], structuredContent: { nested } };
        }
        case 'many-tokens':
          return { content: [], structuredContent: { list: Array(25_000).fill(1) } };
        case 'slow':
          state.inFlight++;
          state.maxInFlight = Math.max(state.maxInFlight, state.inFlight);
          await new Promise((resolve) => setTimeout(resolve, args.bytes ?? 3000));
          state.inFlight--;
          return { content: [{ type: 'text', text: 'slow done' }] };
        default:
          if (name.startsWith('tool_')) {
            return {
              content: [{ type: 'text', text: `ran ${name}` }],
              structuredContent: { value: args.text ?? 'x', index: Number(name.slice(5)) },
            };
          }
          return { content: [{ type: 'text', text: `echo:${args.text ?? ''}` }] };
      }
    });
    return server;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    state.httpMethods.push(req.method ?? '');
    const lastEventId = req.headers['last-event-id'];
    if (typeof lastEventId === 'string') state.lastEventIds.push(lastEventId);
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body = text === '' ? undefined : JSON.parse(text);
    const method: string | undefined = body?.method;
    if (method !== undefined) state.methods.push(method);
    const authorization = req.headers.authorization;
    if (authorization !== undefined) state.tokensSeen.push(authorization.replace(/^Bearer /, ''));
    if (state.validToken !== undefined && authorization !== `Bearer ${state.validToken}`) {
      res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end();
      return;
    }
    const refuse = state.refuse;
    if (refuse !== undefined && refuse.times > 0 && method === refuse.method) {
      refuse.times--;
      if (method === 'tools/call') {
        const name = String(body.params?.name);
        calls.set(name, (calls.get(name) ?? 0) + 1);
      }
      res
        .writeHead(
          refuse.status,
          refuse.retryAfter === undefined ? {} : { 'retry-after': refuse.retryAfter },
        )
        .end('{"error":"slow down"}');
      return;
    }
    if (state.modern && req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    if (state.modern && method === 'server/discover') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          id: body.id,
          result: {
            resultType: 'complete',
            supportedVersions: ['2026-07-28'],
            capabilities: { tools: {} },
            serverInfo: { name: 'fault', version: '1.0.0' },
          },
        }),
      );
      return;
    }
    const sessionId = req.headers['mcp-session-id'] as string | undefined;
    if (sessionId !== undefined && req.method === 'POST' && state.expireNext > 0) {
      state.expireNext--;
      sessions.delete(sessionId);
      res.writeHead(404).end();
      return;
    }
    const tool: string | undefined = method === 'tools/call' ? body.params?.name : undefined;
    if (tool !== undefined) state.callHeaders = { ...req.headers };
    if (tool === 'slow-first-byte') {
      calls.set(tool, (calls.get(tool) ?? 0) + 1);
      await new Promise((resolve) => setTimeout(resolve, state.firstByteDelayMs));
      if (res.destroyed) return;
    }
    if (tool === 'redirect') {
      calls.set(tool, (calls.get(tool) ?? 0) + 1);
      res.writeHead(307, { location: 'http://127.0.0.1:1/elsewhere' }).end();
      return;
    }
    if (tool === 'declared-huge') {
      calls.set(tool, (calls.get(tool) ?? 0) + 1);
      res.writeHead(200, {
        'content-type': 'application/json',
        'content-length': String(100 * 1024 * 1024),
      });
      res.write('{'); // and nothing more: the client must refuse on the header alone
      return;
    }
    if (tool === 'malformed') {
      calls.set(tool, (calls.get(tool) ?? 0) + 1);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(`{"jsonrpc":"2.0","id":${JSON.stringify(body.id)},"result":`);
      return;
    }
    const framing = tool === undefined ? undefined : FRAMING_FAULTS[tool];
    if (tool !== undefined && framing !== undefined) {
      calls.set(tool, (calls.get(tool) ?? 0) + 1);
      const response = JSON.stringify({
        jsonrpc: '2.0',
        id: body.id,
        result: {
          content: [
            {
              type: 'text',
              text: tool === 'invalid-utf8' ? 'invalid-utf8-here' : `framed:${tool}`,
            },
          ],
        },
      });
      const args = (body.params?.arguments ?? {}) as { bytes?: number };
      res.writeHead(200, { 'content-type': state.json ? 'application/json' : 'text/event-stream' });
      for (const part of framing(response, state.json, args)) {
        if (res.destroyed) return;
        if (typeof part === 'number') await new Promise((resolve) => setTimeout(resolve, part));
        else res.write(part);
      }
      res.end();
      return;
    }
    if (tool === 'trailing' || tool === 'trickle') injectWrites(res, tool);
    if (state.modern) {
      // The SDK 1.x server transport knows no 2026-07-28 header: it sees 2025-11-25.
      req.headers['mcp-protocol-version'] = '2025-11-25';
      for (let index = 0; index < req.rawHeaders.length; index += 2) {
        if (req.rawHeaders[index]?.toLowerCase() === 'mcp-protocol-version') {
          req.rawHeaders[index + 1] = '2025-11-25';
        }
      }
      // No sessionIdGenerator: the SDK's stateless mode.
      const stateless = new StreamableHTTPServerTransport({ enableJsonResponse: state.json });
      await makeServer().connect(stateless);
      currentResponse = res;
      await stateless.handleRequest(req, res, body);
      return;
    }
    let transport = sessionId === undefined ? undefined : sessions.get(sessionId);
    if (transport === undefined) {
      if (sessionId !== undefined) {
        res.writeHead(404).end();
        return;
      }
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: state.json,
        ...(state.resumableRetryMs === undefined
          ? {}
          : { eventStore: new InMemoryEventStore(), retryInterval: state.resumableRetryMs }),
        onsessioninitialized: (id) => {
          sessions.set(id, created);
        },
      });
      transport = created;
      await makeServer().connect(created);
    }
    currentResponse = res;
    await transport.handleRequest(req, res, body);
  }

  const http = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const { port } = http.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    state,
    calls,
    async close() {
      for (const transport of sessions.values()) await transport.close().catch(() => undefined);
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

/** Makes a tools/call response misbehave at the byte level. */
function injectWrites(res: ServerResponse, tool: string): void {
  const originalWrite = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
  const originalEnd = res.end.bind(res) as (...rest: unknown[]) => ServerResponse;
  if (tool === 'trailing') {
    let sawResult = false;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      const ok = originalWrite(chunk, ...rest);
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString();
      if (!sawResult && text.includes('"result"')) {
        sawResult = true;
        originalWrite('event: message\ndata: {"jsonrpc":"2.0", broken\n\n');
      }
      return ok;
    }) as typeof res.write;
    return;
  }
  // trickle: every write goes out one byte every 20 ms
  let queue = Promise.resolve();
  res.write = ((chunk: unknown) => {
    const bytes = Buffer.from(chunk as string | Uint8Array);
    queue = queue.then(async () => {
      for (const byte of bytes) {
        if (res.destroyed) return;
        originalWrite(Buffer.from([byte]));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });
    return true;
  }) as typeof res.write;
  res.end = ((...rest: unknown[]) => {
    queue = queue.then(() => {
      if (!res.destroyed) originalEnd(...rest);
    });
    return res;
  }) as typeof res.end;
}
