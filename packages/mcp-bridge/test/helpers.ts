import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

/** The entry script of an installed package (resolved from this package). */
export function packageEntry(name: string, relative: string): string {
  return join(dirname(require.resolve(`${name}/package.json`)), relative);
}

export const EVERYTHING_ENTRY: string = packageEntry(
  '@modelcontextprotocol/server-everything',
  'dist/index.js',
);
export const FILESYSTEM_ENTRY: string = packageEntry(
  '@modelcontextprotocol/server-filesystem',
  'dist/index.js',
);

/** The GitHub reference server (`@modelcontextprotocol/server-github`, MCP 2024-11-05, SDK 1.0.1). */
export const GITHUB_ENTRY: string = packageEntry(
  '@modelcontextprotocol/server-github',
  'dist/index.js',
);

/** A minimal environment for child servers (nothing secret inherited). */
export const CHILD_ENV: Readonly<Record<string, string>> = Object.freeze({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
});

/** Approves loopback addresses only (tests never reach anything else). */
export function allowLoopback(_target: unknown, address: { readonly range: string }): boolean {
  return address.range === 'loopback';
}

import { type ChildProcess, spawn } from 'node:child_process';
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from 'node:http';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { stopProcess } from './fixtures/teardown.js';

/** The repository root (two levels above this package). */
export const REPO_ROOT: string = fileURLToPath(new URL('../../../', import.meta.url));
/** The preload that makes a bare `listen(port)` bind 127.0.0.1 (test/support/loopback-listen.mjs). */
export const LOOPBACK_LISTEN: string = fileURLToPath(
  new URL('./support/loopback-listen.mjs', import.meta.url),
);

/** A free TCP port on 127.0.0.1 (listened on once, then released). */
export async function freePort(): Promise<number> {
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

/** A running server-everything in Streamable HTTP mode on 127.0.0.1. */
export interface EverythingHttp {
  readonly url: string;
  readonly child: ChildProcess;
  close(): Promise<void>;
}

export async function startEverythingHttp(): Promise<EverythingHttp> {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    ['--import', LOOPBACK_LISTEN, EVERYTHING_ENTRY, 'streamableHttp'],
    { env: { ...CHILD_ENV, PORT: String(port) }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  await new Promise<void>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error('server-everything did not start')), 8000);
    const onData = (chunk: Buffer): void => {
      seen += chunk.toString();
      if (/listening|running/i.test(seen)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', () => reject(new Error('server-everything exited')));
  });
  child.stdout?.resume();
  child.stderr?.resume();
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    child,
    close: () => stopProcess(child),
  };
}

/** The SDK v2 test server (test/fixtures/v2-server.mjs). */
export const V2_SERVER: string = fileURLToPath(
  new URL('./fixtures/v2-server.mjs', import.meta.url),
);

/** A JSON-RPC message as a test server received it. */
export interface RecordedBody {
  readonly method?: string;
  readonly id?: unknown;
  readonly params?: {
    readonly _meta?: Readonly<Record<string, unknown>>;
    readonly protocolVersion?: string;
    readonly [key: string]: unknown;
  };
}

/** One request the v2 test server received over HTTP. */
export interface RecordedRequest {
  readonly method: string;
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body: RecordedBody | undefined;
}

/** A running SDK v2 test server over HTTP (`http`, `http-dual` or `http-legacy` mode). */
export interface V2Http {
  readonly url: string;
  /** Every request it received so far, in order. */
  log(): Promise<readonly RecordedRequest[]>;
  close(): Promise<void>;
}

export async function startV2Http(mode: 'http' | 'http-dual' | 'http-legacy'): Promise<V2Http> {
  const child = spawn(process.execPath, [V2_SERVER, mode], {
    env: { ...CHILD_ENV },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('the v2 server did not start')), 8000);
    child.stdout?.once('data', (chunk: Buffer) => {
      clearTimeout(timer);
      resolve((JSON.parse(chunk.toString()) as { url: string }).url);
    });
    child.once('exit', () => reject(new Error('the v2 server exited')));
  });
  return {
    url,
    async log() {
      const response = await fetch(url.replace(/\/mcp$/, '/__log'));
      return (await response.json()) as RecordedRequest[];
    },
    close: () => stopProcess(child),
  };
}

/** A scripted HTTP MCP endpoint: `answer` decides each reply; every request is recorded. */
export async function scripted(
  answer: (
    body: RecordedBody,
    headers: IncomingHttpHeaders,
    index: number,
  ) => { status: number; body?: unknown },
): Promise<{
  url: string;
  requests: { body: RecordedBody; headers: IncomingHttpHeaders }[];
  close(): Promise<void>;
}> {
  const requests: { body: RecordedBody; headers: IncomingHttpHeaders }[] = [];
  const server: Server = createHttpServer((req, res) => {
    let text = '';
    req.on('data', (chunk: Buffer) => {
      text += chunk.toString();
    });
    req.on('end', () => {
      const body = text === '' ? undefined : JSON.parse(text);
      requests.push({ body, headers: req.headers });
      const reply = answer(body, req.headers, requests.length - 1);
      if (reply.body === undefined) {
        res.writeHead(reply.status);
        res.end();
        return;
      }
      res.writeHead(reply.status, { 'content-type': 'application/json' });
      // A Buffer is sent byte for byte (for bodies that are not valid UTF-8 or JSON).
      res.end(Buffer.isBuffer(reply.body) ? reply.body : JSON.stringify(reply.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * A legacy (2025-11-25) SDK 1.x client connected in memory to `gateway`; with `answer`, it
 * declares elicitation and answers each approval prompt with it. Pushed to `open` for closing.
 */
export async function gatewayClient(
  gateway: { connect(transport: unknown): Promise<void> },
  open: { close(): Promise<void> }[],
  answer?: (message: string) => boolean,
) {
  const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
  const { InMemoryTransport } = await import('@modelcontextprotocol/sdk/inMemory.js');
  const { ElicitRequestSchema } = await import('@modelcontextprotocol/sdk/types.js');
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await gateway.connect(serverSide);
  const client = new Client(
    { name: 'test-client', version: '1.0.0' },
    { capabilities: answer === undefined ? {} : { elicitation: {} } },
  );
  if (answer !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, (request) => ({
      action: 'accept',
      content: { approve: answer(String(request.params.message)) },
    }));
  }
  await client.connect(clientSide);
  open.push(client);
  return client;
}

/** The text blocks of a `tools/call` result, joined. */
export const resultText = (result: Record<string, unknown>): string =>
  (result.content as { type: string; text?: string }[]).map((block) => block.text ?? '').join('');

/** A raw JSON-RPC reply (what a raw 2026-07-28 caller below gets back). */
export interface RawReply {
  readonly result?: Record<string, unknown>;
  readonly error?: { code: number; message: string };
}

/** The `_meta` envelope of a raw MCP 2026-07-28 request. */
const modernMeta = (capabilities: Record<string, unknown>) => ({
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': capabilities,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
});

/**
 * Raw 2026-07-28 `tools/call` requests over stateless Streamable HTTP (no session), each carrying
 * the `_meta` envelope and the matching `Mcp-*` headers.
 */
export function modernHttpCaller(
  url: string,
  capabilities: Record<string, unknown>,
): (params: Record<string, unknown>) => Promise<RawReply> {
  let id = 0;
  return async (params) => {
    id += 1;
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tools/call',
        'mcp-name': String(params.name),
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id,
        method: 'tools/call',
        params: { ...params, _meta: modernMeta(capabilities) },
      }),
    });
    return (await response.json()) as RawReply;
  };
}

/**
 * Raw 2026-07-28 `tools/call` requests over an in-memory stdio-shaped pair connected to
 * `gateway` (one connection); the client side is pushed to `open` for closing.
 */
export async function modernStdioCaller(
  gateway: { connect(transport: never): Promise<void> },
  open: { close(): Promise<void> }[],
  capabilities: Record<string, unknown>,
): Promise<(params: Record<string, unknown>) => Promise<RawReply>> {
  const { InMemoryTransport } = await import('@modelcontextprotocol/client');
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await gateway.connect(serverSide as never);
  const waiting = new Map<number, (reply: RawReply) => void>();
  clientSide.onmessage = (message) => {
    const reply = message as { id?: number } & RawReply;
    if (typeof reply.id === 'number') waiting.get(reply.id)?.(reply);
  };
  await clientSide.start();
  open.push(clientSide);
  let id = 0;
  return (params) => {
    id += 1;
    const sent = id;
    return new Promise((resolve) => {
      waiting.set(sent, resolve);
      void clientSide.send({
        jsonrpc: '2.0',
        id: sent,
        method: 'tools/call',
        params: { ...params, _meta: modernMeta(capabilities) },
      });
    });
  };
}

/** The text blocks of a raw JSON-RPC result, joined. */
export const rawText = (reply: RawReply): string =>
  ((reply.result?.content ?? []) as { text?: string }[]).map((block) => block.text ?? '').join('');

/**
 * A plain 2025-11-25 `initialize` request (no client capabilities), as a client sends it first.
 * `id` defaults to 1.
 */
export function initializeRequest(id: string | number = 1): Record<string, unknown> {
  return {
    jsonrpc: '2.0',
    id,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'test', version: '1.0.0' },
    },
  };
}
