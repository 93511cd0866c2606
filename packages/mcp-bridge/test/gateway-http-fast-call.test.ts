// The HTTP front's fast path for a legacy session's plain tools/call (issue 41): every request,
// malformed and unusual ones included, is answered as the SDK path answers it. Each request is
// sent to the same gateway served twice, once with the fast path and once without it
// (`plainCallFastPath: false`: every request through the SDK's transport), and the two answers
// are compared: status, headers, and the body's bytes.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import { AllowAllAuthorizer } from '@toolfence/tools';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { CHILD_ENV, EVERYTHING_ENTRY } from './helpers.js';
import { serveLoopbackHttp } from './support/loopback-gateway-http.js';

const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
const LEGACY = '2025-11-25';
const ACCEPT = 'application/json, text/event-stream';

let folder: string;
let audit: string;
const open: { close(): Promise<void> }[] = [];
let fastUrl: string;
let sdkUrl: string;

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-http-fast-'));
  audit = join(folder, 'audit.jsonl');
  const gateway = new McpGateway({
    config: parseGatewayConfig({
      mcpServers: {
        toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' },
        // Tools whose results are not plain (an image, structured content): handed to the SDK.
        everything: {
          command: process.execPath,
          args: [EVERYTHING_ENTRY, 'stdio'],
          env: { ...CHILD_ENV },
        },
      },
    }),
    authorizer: new AllowAllAuthorizer(),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(audit, 16 * 1024 * 1024),
  });
  open.push(gateway);
  await gateway.start();
  fastUrl = (await serveLoopbackHttp(gateway, open, { maxSessions: 64 })).url;
  sdkUrl = (await serveLoopbackHttp(gateway, open, { maxSessions: 64, plainCallFastPath: false }))
    .url;
}, 60_000);
afterAll(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

/** An initialized legacy session of the front at `url`: its id. */
async function session(url: string): Promise<string> {
  const opened = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: ACCEPT },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: LEGACY,
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
      },
    }),
  });
  const id = opened.headers.get('mcp-session-id') as string;
  await opened.text();
  const initialized = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: ACCEPT,
      'mcp-session-id': id,
      'mcp-protocol-version': LEGACY,
    },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  await initialized.text();
  return id;
}

/** How one request is sent: its body text and headers (`$session` is the session's id). */
interface Sent {
  readonly body: string;
  readonly headers: Record<string, string>;
  readonly method?: string;
}

/** The answer as compared: status, the headers that carry meaning, the body's bytes. */
async function answer(url: string, sessionId: string, sent: Sent) {
  const headers = Object.fromEntries(
    Object.entries(sent.headers).map(([name, value]) => [
      name,
      value === '$session' ? sessionId : value,
    ]),
  );
  const response = await fetch(url, {
    method: sent.method ?? 'POST',
    headers,
    ...(sent.method === undefined || sent.method === 'POST' ? { body: sent.body } : {}),
  });
  const body = await response.text();
  const shown: Record<string, string | null> = {};
  for (const [name, value] of response.headers) {
    if (name === 'date' || name === 'keep-alive') continue;
    shown[name] = name === 'mcp-session-id' ? (value === sessionId ? '$session' : value) : value;
  }
  return { status: response.status, headers: shown, body };
}

const plainHeaders = {
  'content-type': 'application/json',
  accept: ACCEPT,
  'mcp-session-id': '$session',
  'mcp-protocol-version': LEGACY,
};
const call = (params: unknown, id: unknown = 7, more: Record<string, unknown> = {}) =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params, ...more });
const note = { name: 'tk__note', arguments: { id: 'n' } };
const sent = (body: string, headers: Record<string, string> = plainHeaders): Sent => ({
  body,
  headers,
});
const without = (name: string): Record<string, string> =>
  Object.fromEntries(Object.entries(plainHeaders).filter(([key]) => key !== name));

/** Sends `request` to both fronts, each on a session of its own; both answers. */
async function both(request: Sent) {
  const [fastSession, sdkSession] = await Promise.all([session(fastUrl), session(sdkUrl)]);
  const fast = await answer(fastUrl, fastSession, request);
  const sdk = await answer(sdkUrl, sdkSession, request);
  return { fast, sdk };
}

describe('serve --http: the fast path of a plain tools/call (issue 41)', () => {
  it('serves a plain call without the SDK transport or a request context, and a call with _meta with them', async () => {
    const handled = vi.spyOn(WebStandardStreamableHTTPServerTransport.prototype, 'handleRequest');
    const built = vi.spyOn(
      Server.prototype as unknown as { buildContext: (...args: unknown[]) => unknown },
      'buildContext',
    );
    try {
      const sessionId = await session(fastUrl);
      handled.mockClear();
      built.mockClear();
      const plain = await answer(fastUrl, sessionId, sent(call(note)));
      expect(JSON.parse(plain.body)).toMatchObject({
        id: 7,
        result: { content: [{ text: 'note n' }] },
      });
      expect(handled).not.toHaveBeenCalled();
      expect(built).not.toHaveBeenCalled();
      const traced = await answer(fastUrl, sessionId, sent(call({ ...note, _meta: {} })));
      expect(JSON.parse(traced.body)).toMatchObject({
        id: 7,
        result: { content: [{ text: 'note n' }] },
      });
      expect(handled).toHaveBeenCalledTimes(1);
      expect(built).toHaveBeenCalledTimes(1);
    } finally {
      handled.mockRestore();
      built.mockRestore();
    }
  }, 30_000);

  it.each<[string, Sent]>([
    ['a plain call', sent(call(note))],
    ['a plain call with a string id', sent(call(note, 'a "quoted" id ✓'))],
    ['a plain call without arguments', sent(call({ name: 'tk__note' }))],
    [
      'a call whose arguments fail the schema',
      sent(call({ name: 'tk__note', arguments: { id: 7 } })),
    ],
    [
      'a call whose result is an image (handed back to the SDK)',
      sent(call({ name: 'everything__get-tiny-image', arguments: {} })),
    ],
    [
      'a call whose result has structured content',
      sent(
        call({ name: 'everything__get-structured-content', arguments: { location: 'New York' } }),
      ),
    ],
    ['a call to a tool that is not offered', sent(call({ name: 'tk__nothing', arguments: {} }))],
    [
      'a call naming a session that does not exist',
      sent(call(note), { ...plainHeaders, 'mcp-session-id': 'no-such-session' }),
    ],
    ['a call without a session id', sent(call(note), without('mcp-session-id'))],
    ['a call without Accept', sent(call(note), without('accept'))],
    [
      'a call accepting JSON only',
      sent(call(note), { ...plainHeaders, accept: 'application/json' }),
    ],
    [
      'a call accepting event streams only',
      sent(call(note), { ...plainHeaders, accept: 'text/event-stream' }),
    ],
    [
      'a call with a text/plain body',
      sent(call(note), { ...plainHeaders, 'content-type': 'text/plain' }),
    ],
    ['a call without a content type', sent(call(note), without('content-type'))],
    [
      'a call whose content type has a charset',
      sent(call(note), { ...plainHeaders, 'content-type': 'application/json; charset=utf-8' }),
    ],
    [
      'a call whose content type is upper case',
      sent(call(note), { ...plainHeaders, 'content-type': 'APPLICATION/JSON' }),
    ],
    ['a call without a protocol version header', sent(call(note), without('mcp-protocol-version'))],
    [
      'a call with an unsupported protocol version',
      sent(call(note), { ...plainHeaders, 'mcp-protocol-version': '1999-01-01' }),
    ],
    [
      'a call with an older supported protocol version',
      sent(call(note), { ...plainHeaders, 'mcp-protocol-version': '2025-06-18' }),
    ],
    [
      'a call with the 2026-07-28 protocol version',
      sent(call(note), { ...plainHeaders, 'mcp-protocol-version': '2026-07-28' }),
    ],
    ['a batch of one plain call', sent(`[${call(note)}]`)],
    ['a batch of two plain calls', sent(`[${call(note, 1)},${call(note, 2)}]`)],
    [
      'a tools/call notification (no id)',
      sent(JSON.stringify({ jsonrpc: '2.0', method: 'tools/call', params: note })),
    ],
    ['a call with _meta', sent(call({ ...note, _meta: {} }))],
    ['a call with a progress token', sent(call({ ...note, _meta: { progressToken: 'p' } }))],
    ['a task-augmented call', sent(call({ ...note, task: { ttl: 1000 } }))],
    ['a call with an id beyond a safe integer', sent(call(note, 2 ** 60))],
    ['a call with a fractional id', sent(call(note, 1.5))],
    ['a call with a null id', sent(call(note, null))],
    ['a call with an object id', sent(call(note, { x: 1 }))],
    ['a call with a huge string id', sent(call(note, 'i'.repeat(100_000)))],
    ['a call with an extra top-level key', sent(call(note, 7, { extra: true }))],
    ['a call with jsonrpc 1.0', sent(call(note, 7, { jsonrpc: '1.0' }))],
    [
      'a call with a __proto__ argument',
      sent(call(note).replace('{"id":"n"}', '{"__proto__":{"x":1},"id":"n"}')),
    ],
    [
      'a call with duplicate keys',
      sent(
        call(note).replace('"method":"tools/call"', '"method":"tools/list","method":"tools/call"'),
      ),
    ],
    ['a call with params not an object', sent(call('note'))],
    ['a call whose name is not a string', sent(call({ name: 5, arguments: {} }))],
    [
      'an unknown method',
      sent(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/nothing', params: {} })),
    ],
    ['a body that is not JSON', sent('{"jsonrpc":')],
    [
      'a body over 4 MiB',
      sent(call({ name: 'tk__note', arguments: { id: 'x'.repeat(4 * 1024 * 1024) } })),
    ],
    [
      'a GET with the session',
      { body: '', headers: { ...plainHeaders, accept: 'application/json' }, method: 'GET' },
    ],
  ])(
    'answers %s as the SDK path does',
    async (_name, request) => {
      const { fast, sdk } = await both(request);
      expect(fast).toEqual(sdk);
    },
    30_000,
  );

  it('answers a call to a closed session as the SDK path does', async () => {
    const answers = [];
    for (const url of [fastUrl, sdkUrl]) {
      const sessionId = await session(url);
      const closed = await answer(url, sessionId, {
        body: '',
        headers: plainHeaders,
        method: 'DELETE',
      });
      expect(closed.status).toBe(200);
      answers.push(await answer(url, sessionId, sent(call(note))));
    }
    expect(answers[0]).toEqual(answers[1]);
    expect(answers[0]?.status).toBe(404);
  }, 30_000);

  /** The audit lines of `tool` written after the first `from` lines. */
  const auditLines = async () =>
    (await readFile(audit, 'utf8').catch(() => '')).split('\n').filter((line) => line !== '');
  const auditOf = async (tool: string, from: number) =>
    (await auditLines())
      .slice(from)
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.tool === tool);
  const auditLength = async () => (await auditLines()).length;
  const until = async (done: () => Promise<boolean>) => {
    for (let tries = 0; !(await done()); tries++) {
      if (tries > 400) throw new Error('gave up waiting');
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  };

  it('does not answer a call cancelled in flight, and audits it as the SDK path does', async () => {
    const audited: unknown[] = [];
    for (const url of [fastUrl, sdkUrl]) {
      const sessionId = await session(url);
      const from = await auditLength();
      const client = new AbortController();
      let settled = false;
      const pending = fetch(url, {
        method: 'POST',
        headers: { ...plainHeaders, 'mcp-session-id': sessionId },
        body: call({ name: 'tk__slow', arguments: { ms: 1500, n: 1 } }, 41),
        signal: client.signal,
      }).then(
        () => {
          settled = true;
        },
        () => undefined,
      );
      // The call is on its way to the upstream (which answers after 1.5 s).
      const outcomes = async () => (await auditOf('tk__slow', from)).map((line) => line.outcome);
      await until(async () => (await outcomes()).includes('started'));
      const cancelled = await answer(url, sessionId, {
        body: JSON.stringify({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: 41, reason: 'no longer wanted' },
        }),
        headers: plainHeaders,
      });
      expect(cancelled.status).toBe(202);
      await until(async () => (await outcomes()).length > 1);
      // The call has ended: an answer would be on its way by now.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(settled).toBe(false);
      client.abort();
      await pending;
      audited.push(await outcomes());
    }
    expect(audited[0]).toEqual(audited[1]);
    expect(audited[0]).toEqual(['started', 'ambiguous']);
  }, 30_000);

  it('ends a call in flight when its session is deleted, as the SDK path does', async () => {
    const ended = [];
    for (const url of [fastUrl, sdkUrl]) {
      const sessionId = await session(url);
      const from = await auditLength();
      const pending = answer(
        url,
        sessionId,
        sent(call({ name: 'tk__slow', arguments: { ms: 1500, n: 2 } }, 42)),
      );
      await until(async () => (await auditOf('tk__slow', from)).length > 0);
      const deleted = await answer(url, sessionId, {
        body: '',
        headers: plainHeaders,
        method: 'DELETE',
      });
      expect(deleted.status).toBe(200);
      ended.push(await pending);
    }
    expect(ended[0]).toEqual(ended[1]);
  }, 30_000);

  it('answers and audits generated plain calls as the SDK path does', async () => {
    const [fastSession, sdkSession] = await Promise.all([session(fastUrl), session(sdkUrl)]);
    const lines = async () =>
      (await auditLines()).map((line) => {
        // The session differs (one per connection); time and chain per line.
        const {
          time: _time,
          previous: _previous,
          hash: _hash,
          session: _session,
          ...rest
        } = JSON.parse(line);
        return rest as Record<string, unknown>;
      });
    const id = fc.oneof(fc.string(), fc.integer(), fc.constant(Number.MAX_SAFE_INTEGER));
    const args = fc.oneof(
      fc.record({ id: fc.string() }),
      fc.record({ id: fc.jsonValue() }),
      fc.dictionary(fc.string(), fc.jsonValue(), { maxKeys: 4 }),
    );
    const tool = fc.constantFrom('tk__note', 'tk__publish', 'tk__nothing');
    await fc.assert(
      fc.asyncProperty(id, tool, args, async (callId, name, callArgs) => {
        const request = sent(call({ name, arguments: callArgs }, callId));
        const fast = await answer(fastUrl, fastSession, request);
        const before = (await lines()).length;
        const sdk = await answer(sdkUrl, sdkSession, request);
        expect(fast).toEqual(sdk);
        const written = await lines();
        expect(written.slice(before)).toEqual(
          written.slice(before - (written.length - before), before),
        );
      }),
      { numRuns: 40 },
    );
  }, 120_000);
});
