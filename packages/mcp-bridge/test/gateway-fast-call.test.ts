import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  InMemoryTransport,
  type JSONRPCMessage,
  Server,
  type Transport,
} from '@modelcontextprotocol/server';
import { AllowAllAuthorizer } from '@toolfence/tools';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import {
  type FastCallHandler,
  type FastCallOutcome,
  FastCallTransport,
} from '../src/gateway/fast-call-transport.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { isPlainCallToolResult, plainToolsCall } from '../src/gateway/plain-tools-call.js';
import { gatewayClient, initializeRequest, resultText } from './helpers.js';

// Issue 41: a plain `tools/call` on a 2025-11-25 stdio connection skips the SDK v2 server's
// per-message schema checks. Each plain shape is proven against a real SDK v2 server: the SDK
// accepts it and hands over (or sends back) an equal value.

/** A real SDK v2 server in a 2025-11-25 session whose tools/call handler answers `answer`. */
async function sdkServer() {
  const server = new Server({ name: 'sdk', version: '1.0.0' }, { capabilities: { tools: {} } });
  const state: { answer: unknown; seen: unknown[] } = { answer: { content: [] }, seen: [] };
  server.setRequestHandler('tools/call', (request) => {
    state.seen.push(request.params);
    return state.answer as never;
  });
  const [client, serverSide] = InMemoryTransport.createLinkedPair();
  const responses: JSONRPCMessage[] = [];
  client.onmessage = (message) => {
    responses.push(message);
  };
  await server.connect(serverSide);
  await client.start();
  /** Sends `message` and waits (bounded) for the response with its id, if one comes. */
  const exchange = async (message: unknown): Promise<JSONRPCMessage | undefined> => {
    responses.length = 0;
    await client.send(message as JSONRPCMessage);
    for (let turn = 0; turn < 200 && responses.length === 0; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
    }
    return responses[0];
  };
  await exchange(initializeRequest('init'));
  await client.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return { state, exchange, close: () => server.close() };
}

type Sdk = Awaited<ReturnType<typeof sdkServer>>;

/** A fresh SDK server for each test of the calling `describe`, closed after it. */
function sdkServerPerTest(): () => Sdk {
  let current: Sdk | undefined;
  beforeEach(async () => {
    current = await sdkServer();
  });
  afterEach(async () => {
    await current?.close();
    current = undefined;
  });
  return () => current as Sdk;
}

/** What the SDK hands its tools/call handler for `record`, or undefined when it refuses it. */
async function sdkParams(sdk: Sdk, record: unknown): Promise<unknown> {
  sdk.state.seen.length = 0;
  sdk.state.answer = { content: [] };
  await sdk.exchange(record);
  return sdk.state.seen[0];
}

/** The fast path's view of `record`: the params the gateway's handler would be given. */
function fastParams(record: unknown): unknown {
  const call = plainToolsCall(record);
  if (call === undefined) return undefined;
  return call.arguments === undefined
    ? { name: call.name }
    : { name: call.name, arguments: call.arguments };
}

const json = (value: unknown): unknown => JSON.parse(JSON.stringify(value));

/** Hostile records that look plain: each must take the SDK path (plainToolsCall undefined). */
const HOSTILE: readonly (readonly [string, string])[] = [
  [
    'an extra top-level key',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"x":1}',
  ],
  [
    'an extra params key',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","x":1}}',
  ],
  [
    'params._meta (a progress token)',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":1}}}',
  ],
  [
    'an empty params._meta',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","_meta":{}}}',
  ],
  [
    'a task-augmented call',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","task":{"ttl":1000}}}',
  ],
  [
    'a requestState',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","requestState":"s"}}',
  ],
  [
    'inputResponses',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","inputResponses":{}}}',
  ],
  [
    'a __proto__ key in arguments',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"__proto__":{"x":1}}}}',
  ],
  [
    'a __proto__ key in params',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","__proto__":{"arguments":{}}}}',
  ],
  [
    'a __proto__ key at the top',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"__proto__":{}}',
  ],
  ['a number as the name', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}'],
  ['null as the name', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":null}}'],
  ['no name', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}'],
  [
    'arguments an array',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":[1]}}',
  ],
  [
    'arguments a string',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":"{}"}}',
  ],
  [
    'arguments null',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":null}}',
  ],
  ['params an array', '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[{"name":"t"}]}'],
  ['no params', '{"jsonrpc":"2.0","id":1,"method":"tools/call"}'],
  ['a fractional id', '{"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"t"}}'],
  [
    'an id past the safe integers',
    '{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"t"}}',
  ],
  [
    'a huge id',
    `{"jsonrpc":"2.0","id":1${'0'.repeat(400)},"method":"tools/call","params":{"name":"t"}}`,
  ],
  ['a null id', '{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"t"}}'],
  ['an object id', '{"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"t"}}'],
  ['a boolean id', '{"jsonrpc":"2.0","id":true,"method":"tools/call","params":{"name":"t"}}'],
  ['no id (a notification)', '{"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}}'],
  ['jsonrpc missing', '{"id":1,"method":"tools/call","params":{"name":"t"}}'],
  ['jsonrpc 1.0', '{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"t"}}'],
  ['jsonrpc a number', '{"jsonrpc":2,"id":1,"method":"tools/call","params":{"name":"t"}}'],
  [
    'the method in capitals',
    '{"jsonrpc":"2.0","id":1,"method":"Tools/Call","params":{"name":"t"}}',
  ],
  [
    'the method with a trailing space',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call ","params":{"name":"t"}}',
  ],
  [
    'the method with a trailing NUL',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call\\u0000","params":{"name":"t"}}',
  ],
  [
    'the method in full-width letters',
    '{"jsonrpc":"2.0","id":1,"method":"ｔools/call","params":{"name":"t"}}',
  ],
  [
    'a result beside the method',
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"result":{}}',
  ],
];

describe('the plain tools/call request (issue 41)', () => {
  const sdk = sdkServerPerTest();

  it.each(HOSTILE)('sends %s to the SDK path', (_name, text) => {
    expect(plainToolsCall(JSON.parse(text))).toBeUndefined();
  });

  it('sends a record whose duplicate keys JSON.parse folds as the SDK sees it', async () => {
    // JSON.parse keeps the last of duplicate keys: the fast path and the SDK see the same object.
    const record = JSON.parse(
      '{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"a","name":"b"}}',
    );
    expect(fastParams(record)).toEqual({ name: 'b' });
    expect(await sdkParams(sdk(), record)).toEqual({ name: 'b' });
  });

  it.each([
    ['an object made with a null prototype', () => Object.assign(Object.create(null), plain())],
    [
      'arguments with a symbol key',
      () => ({ ...plain(), params: { name: 't', arguments: { [Symbol('s')]: 1 } } }),
    ],
    ['an inherited method', () => Object.assign(Object.create({ method: 'tools/call' }), plain())],
  ])('sends %s to the SDK path', (_name, make) => {
    expect(plainToolsCall(make())).toBeUndefined();
  });

  it.each([
    [
      'a call without arguments',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}',
    ],
    [
      'a string id',
      '{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"t","arguments":{}}}',
    ],
    [
      'an empty string id and name',
      '{"jsonrpc":"2.0","id":"","method":"tools/call","params":{"name":""}}',
    ],
    [
      'the largest safe id',
      '{"jsonrpc":"2.0","id":9007199254740991,"method":"tools/call","params":{"name":"t"}}',
    ],
    ['a negative id', '{"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{"name":"t"}}'],
    [
      'nested arguments',
      '{"params":{"arguments":{"a":[1,{"b":null}],"__proto__x":1},"name":"t"},"method":"tools/call","id":2,"jsonrpc":"2.0"}',
    ],
    [
      'a nested __proto__ key',
      '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"a":{"__proto__":{"x":1}}}}}',
    ],
  ])('takes %s as the SDK does: accepted, with equal params', async (_name, text) => {
    const record = JSON.parse(text);
    expect(fastParams(record)).toBeDefined();
    expect(json(await sdkParams(sdk(), JSON.parse(text)))).toEqual(json(fastParams(record)));
  });

  it('agrees with the SDK on generated records, hostile ones included', async () => {
    const key = fc.constantFrom(
      'jsonrpc',
      'id',
      'method',
      'params',
      'name',
      'arguments',
      '_meta',
      'x',
      '__proto__',
    );
    const value = fc.oneof(
      fc.constantFrom('2.0', 'tools/call', 'TOOLS/CALL', 't', '', null, true, 1.5, -1, 2 ** 53),
      fc.integer(),
      fc.string(),
      fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
      fc.array(fc.integer(), { maxLength: 2 }),
    );
    // Mostly plain members, now and then a hostile one, a missing one or an extra key.
    const mostly = <T>(plainValue: fc.Arbitrary<T>) =>
      fc.oneof({ arbitrary: plainValue, weight: 8 }, { arbitrary: value, weight: 1 });
    const rarely = <T>(arbitrary: fc.Arbitrary<T>) =>
      fc.oneof({ arbitrary: fc.constant(null), weight: 6 }, { arbitrary, weight: 1 });
    const params = fc
      .record(
        {
          name: mostly(fc.string()),
          arguments: mostly(
            fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 3 })),
          ),
          extra: rarely(fc.tuple(key, value)),
        },
        { requiredKeys: ['name', 'extra'] },
      )
      .map(({ extra, ...rest }) => (extra === null ? rest : { ...rest, extra }));
    const record = fc
      .record({
        jsonrpc: mostly(fc.constant('2.0')),
        id: mostly(fc.oneof(fc.integer(), fc.string({ maxLength: 6 }))),
        method: mostly(fc.constant('tools/call')),
        params: mostly(params),
        extra: rarely(fc.tuple(key, value)),
        drop: rarely(fc.constantFrom('jsonrpc', 'id', 'method', 'params')),
      })
      .map(({ extra, drop, ...shape }) => {
        const out: Record<string, unknown> = { ...shape };
        if (drop !== null) delete out[drop];
        if (extra !== null) out.extra = extra;
        return out;
      });
    // Built as JSON text and parsed, as the transport gives them (own keys, `__proto__` an own key).
    const text = (shape: Record<string, unknown>): string => {
      const members: string[] = [];
      for (const [name, member] of Object.entries(shape)) {
        if (name === 'extra') {
          const [extraKey, extraValue] = member as [string, unknown];
          members.push(`${JSON.stringify(extraKey)}:${JSON.stringify(extraValue) ?? 'null'}`);
        } else if (
          name === 'params' &&
          typeof member === 'object' &&
          member !== null &&
          !Array.isArray(member)
        ) {
          members.push(`"params":${text(member as Record<string, unknown>)}`);
        } else members.push(`${JSON.stringify(name)}:${JSON.stringify(member) ?? 'null'}`);
      }
      return `{${members.join(',')}}`;
    };
    let plainSeen = 0;
    await fc.assert(
      fc.asyncProperty(record, async (shape) => {
        const source = text(shape as Record<string, unknown>);
        const fast = fastParams(JSON.parse(source));
        if (fast === undefined) return;
        plainSeen += 1;
        expect(json(await sdkParams(sdk(), JSON.parse(source)))).toEqual(json(fast));
      }),
      { numRuns: 400, seed: 41 },
    );
    // The property saw plain records, not only refused ones.
    expect(plainSeen).toBeGreaterThan(10);
  }, 120_000);
});

function plain(): Record<string, unknown> {
  return { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 't', arguments: {} } };
}

describe('the plain tools/call result (issue 41)', () => {
  const sdk = sdkServerPerTest();

  /** The result the SDK sends for a handler answer of `result`, or undefined on an error. */
  async function sdkResult(result: unknown): Promise<unknown> {
    sdk().state.answer = result;
    const response = await sdk().exchange({
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/call',
      params: { name: 't' },
    });
    return response !== undefined && 'result' in response ? response.result : undefined;
  }

  it.each([
    ['a text block', { content: [{ type: 'text', text: 'hi' }] }],
    ['no block', { content: [] }],
    ['an error', { content: [{ type: 'text', text: 'no' }], isError: true }],
    ['isError false', { content: [], isError: false }],
    [
      'structured content',
      { content: [{ type: 'text', text: '{}' }], structuredContent: { a: [1, { b: null }] } },
    ],
    ['an empty text', { content: [{ type: 'text', text: '' }] }],
  ])('sends %s as the SDK would', async (_name, result) => {
    expect(isPlainCallToolResult(result)).toBe(true);
    expect(json(await sdkResult(result))).toEqual(json(result));
  });

  it.each([
    ['no content', { isError: true }],
    ['an image block', { content: [{ type: 'image', data: 'AA==', mimeType: 'image/png' }] }],
    [
      'a text block with annotations',
      { content: [{ type: 'text', text: 'a', annotations: { priority: 1 } }] },
    ],
    ['a text block with _meta', { content: [{ type: 'text', text: 'a', _meta: {} }] }],
    ['a text block whose text is a number', { content: [{ type: 'text', text: 1 }] }],
    ['a result _meta', { content: [], _meta: { a: 1 } }],
    ['an extra key', { content: [], extra: 1 }],
    ['isError a string', { content: [], isError: 'yes' }],
    ['structured content an array', { content: [], structuredContent: [1] }],
    ['structured content null', { content: [], structuredContent: null }],
    [
      'structured content with an own __proto__',
      { content: [], structuredContent: JSON.parse('{"__proto__":{"a":1}}') },
    ],
    ['content not an array', { content: { type: 'text', text: 'a' } }],
    ['a sparse content array', { content: Object.assign([], { 1: { type: 'text', text: 'a' } }) }],
    ['an input-required result', { resultType: 'input_required', inputRequests: {} }],
  ])('hands %s to the SDK', (_name, result) => {
    expect(isPlainCallToolResult(result)).toBe(false);
  });

  it('agrees with the SDK on generated results', async () => {
    const block = fc.oneof(
      { arbitrary: fc.record({ type: fc.constant('text'), text: fc.string() }), weight: 8 },
      {
        arbitrary: fc.record(
          { type: fc.constantFrom('text', 'image'), text: fc.oneof(fc.string(), fc.integer()) },
          { requiredKeys: ['type'] },
        ),
        weight: 1,
      },
      {
        arbitrary: fc.record({
          type: fc.constant('text'),
          text: fc.string(),
          annotations: fc.record({ priority: fc.double() }),
        }),
        weight: 1,
      },
    );
    const result = fc.record(
      {
        content: fc.oneof(
          { arbitrary: fc.array(block, { maxLength: 3 }), weight: 8 },
          { arbitrary: fc.constant(null), weight: 1 },
        ),
        isError: fc.oneof(
          { arbitrary: fc.boolean(), weight: 4 },
          { arbitrary: fc.constant('x'), weight: 1 },
        ),
        structuredContent: fc.oneof(
          {
            arbitrary: fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 })),
            weight: 4,
          },
          { arbitrary: fc.jsonValue({ maxDepth: 1 }), weight: 1 },
        ),
      },
      { requiredKeys: ['content'] },
    );
    let plainSeen = 0;
    await fc.assert(
      fc.asyncProperty(result, async (value) => {
        if (!isPlainCallToolResult(value)) return;
        plainSeen += 1;
        expect(json(await sdkResult(value))).toEqual(json(value));
      }),
      { numRuns: 300, seed: 41 },
    );
    expect(plainSeen).toBeGreaterThan(10);
  }, 120_000);
});

/** A transport pair end the test drives by hand: what the wrapper sends, and a way to deliver. */
function fakeInner() {
  const sent: JSONRPCMessage[] = [];
  const inner: Transport = {
    start: async () => undefined,
    send: async (message) => {
      sent.push(message);
    },
    close: async () => {
      inner.onclose?.();
    },
  };
  return {
    inner,
    sent,
    deliver: (message: unknown) => inner.onmessage?.(message as JSONRPCMessage),
  };
}

/** A handler whose calls wait until the test settles them. */
function fakeHandler(ready = true) {
  const calls: { name: string; signal: AbortSignal; settle: (outcome: FastCallOutcome) => void }[] =
    [];
  const handler: FastCallHandler = {
    ready: () => ready,
    call: (call, signal) =>
      new Promise((resolve, reject) => {
        calls.push({
          name: call.name,
          signal,
          settle: (outcome) => (outcome.ok ? resolve(outcome.value) : reject(outcome.error)),
        });
      }),
    replay: (call, outcome) =>
      ({
        jsonrpc: '2.0',
        id: call.id,
        method: 'tools/call',
        params: { name: call.name, _meta: { replayed: outcome.ok } },
      }) as JSONRPCMessage,
  };
  return { handler, calls };
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('FastCallTransport (issue 41)', () => {
  it('answers a plain call itself, and hands every other message to the SDK', async () => {
    const { inner, sent, deliver } = fakeInner();
    const { handler, calls } = fakeHandler();
    const fast = new FastCallTransport(inner, handler);
    const toSdk: unknown[] = [];
    fast.onmessage = (message) => toSdk.push(message);
    await fast.start();
    deliver({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 't', arguments: { a: 1 } },
    });
    deliver({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    deliver({
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/call',
      params: { name: 't', _meta: { progressToken: 1 } },
    });
    expect(calls.map((call) => call.name)).toEqual(['t']);
    expect(toSdk).toHaveLength(2);
    calls[0]?.settle({ ok: true, value: { content: [{ type: 'text', text: 'ok' }] } });
    await settled();
    expect(sent).toEqual([
      { result: { content: [{ type: 'text', text: 'ok' }] }, jsonrpc: '2.0', id: 1 },
    ]);
  });

  it('hands a call to the SDK while the connection is not ready (no initialized session)', async () => {
    const { inner, deliver } = fakeInner();
    const { handler, calls } = fakeHandler(false);
    const fast = new FastCallTransport(inner, handler);
    const toSdk: unknown[] = [];
    fast.onmessage = (message) => toSdk.push(message);
    await fast.start();
    deliver(plain());
    expect(calls).toHaveLength(0);
    expect(toSdk).toHaveLength(1);
  });

  it('hands a second call reusing an id in flight to the SDK', async () => {
    const { inner, deliver } = fakeInner();
    const { handler, calls } = fakeHandler();
    const fast = new FastCallTransport(inner, handler);
    const toSdk: unknown[] = [];
    fast.onmessage = (message) => toSdk.push(message);
    await fast.start();
    deliver(plain());
    deliver(plain());
    expect(calls).toHaveLength(1);
    expect(toSdk).toHaveLength(1);
  });

  it.each([
    [
      'a result it does not take as plain',
      { ok: true, value: { content: [{ type: 'image', data: 'AA==', mimeType: 'image/png' }] } },
    ],
    ['a throw', { ok: false, error: new Error('boom') }],
  ] as const)('replays %s through the SDK instead of answering', async (_name, outcome) => {
    const { inner, sent, deliver } = fakeInner();
    const { handler, calls } = fakeHandler();
    const fast = new FastCallTransport(inner, handler);
    const toSdk: unknown[] = [];
    fast.onmessage = (message) => toSdk.push(message);
    await fast.start();
    deliver(plain());
    calls[0]?.settle(outcome);
    await settled();
    expect(sent).toEqual([]);
    expect(toSdk).toEqual([
      {
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: 't', _meta: { replayed: outcome.ok } },
      },
    ]);
  });

  it.each([
    ['a numeric id', 1, { requestId: 1, reason: 'user' }, true],
    ['a string id', 'a', { requestId: 'a' }, true],
    ['another id', 1, { requestId: 2 }, false],
    ['the same id as a string', 1, { requestId: '1' }, false],
    ['a reason that is not a string', 1, { requestId: 1, reason: 5 }, false],
  ] as const)(
    'aborts a call on notifications/cancelled naming %s, and never answers it',
    async (_name, id, params, aborts) => {
      const { inner, sent, deliver } = fakeInner();
      const { handler, calls } = fakeHandler();
      const fast = new FastCallTransport(inner, handler);
      const toSdk: unknown[] = [];
      fast.onmessage = (message) => toSdk.push(message);
      await fast.start();
      deliver({ ...plain(), id });
      const cancel = { jsonrpc: '2.0', method: 'notifications/cancelled', params };
      deliver(cancel);
      // The SDK hears the notification too (it cancels what it runs of that id).
      expect(toSdk).toEqual([cancel]);
      expect(calls[0]?.signal.aborted).toBe(aborts);
      calls[0]?.settle({ ok: true, value: { content: [] } });
      await settled();
      expect(sent).toHaveLength(aborts ? 0 : 1);
    },
  );

  it('aborts every call in flight when the connection closes, and answers none', async () => {
    const { inner, sent, deliver } = fakeInner();
    const { handler, calls } = fakeHandler();
    const fast = new FastCallTransport(inner, handler);
    let closed = 0;
    fast.onclose = () => {
      closed += 1;
    };
    await fast.start();
    deliver(plain());
    deliver({ ...plain(), id: 2 });
    await fast.close();
    expect(closed).toBe(1);
    expect(calls.map((call) => call.signal.aborted)).toEqual([true, true]);
    for (const call of calls) call.settle({ ok: true, value: { content: [] } });
    await settled();
    expect(sent).toEqual([]);
  });
});

// The gateway end to end: a plain call and the same call made non-plain (an empty `_meta`, so
// the SDK path) answer the same and are audited the same.
const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));

describe('the gateway fast path (issue 41)', () => {
  let folder: string;
  const open: { close(): Promise<void> }[] = [];
  beforeEach(async () => {
    folder = await mkdtemp(join(tmpdir(), 'toolfence-fast-call-'));
  });
  afterEach(async () => {
    for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
    await rm(folder, { recursive: true, force: true });
  });

  async function start() {
    const audit = join(folder, 'audit.jsonl');
    const gateway = new McpGateway({
      config: parseGatewayConfig({
        mcpServers: { toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' } },
      }),
      authorizer: new AllowAllAuthorizer(),
      pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
      audit: new AuditLog(audit, 1024 * 1024),
    });
    open.push(gateway);
    await gateway.start();
    const lines = async () =>
      (await readFile(audit, 'utf8'))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as Record<string, unknown>);
    return { client: await gatewayClient(gateway, open), lines };
  }

  /** An audit line without what differs between two calls (time, chain). */
  const comparable = (line: Record<string, unknown> | undefined) => {
    const { time: _time, previous: _previous, hash: _hash, ...rest } = line ?? {};
    return rest;
  };

  it('serves a plain call without the SDK server building a request context, and a call with _meta with it', async () => {
    const { client } = await start();
    // The SDK server builds a context for each request it dispatches (Server.buildContext).
    const built = vi.spyOn(
      Server.prototype as unknown as { buildContext: (...args: unknown[]) => unknown },
      'buildContext',
    );
    try {
      expect(resultText(await client.callTool({ name: 'tk__note', arguments: { id: 'a' } }))).toBe(
        'note a',
      );
      expect(built).not.toHaveBeenCalled();
      expect(
        resultText(await client.callTool({ name: 'tk__note', arguments: { id: 'b' }, _meta: {} })),
      ).toBe('note b');
      expect(built).toHaveBeenCalledTimes(1);
    } finally {
      built.mockRestore();
    }
  }, 60_000);

  it.each([
    ['a call that runs', { name: 'tk__note', arguments: { id: 'n1' } }],
    ['a call with wrong arguments', { name: 'tk__note', arguments: { id: 7 } }],
    ['a call to a tool that is not offered', { name: 'tk__nothing', arguments: {} }],
  ])(
    'answers and audits %s as the SDK path does',
    async (_name, params) => {
      const { client, lines } = await start();
      const fast = await client.callTool(params);
      const before = (await lines()).length;
      const sdk = await client.callTool({ ...params, _meta: {} });
      expect(sdk).toEqual(fast);
      const written = await lines();
      expect(written.length).toBe(before * 2);
      expect(written.slice(before).map(comparable)).toEqual(
        written.slice(0, before).map(comparable),
      );
    },
    60_000,
  );

  it.each([
    ['on the fast path', {}],
    ['on the SDK path', { _meta: {} }],
  ])(
    'aborts a cancelled call %s: not answered, audited as the SDK path audits it',
    async (_name, extra) => {
      const { client, lines } = await start();
      const controller = new AbortController();
      const call = client.callTool(
        { name: 'tk__slow', arguments: { ms: 20_000, n: 1 }, ...extra },
        undefined,
        {
          signal: controller.signal,
        },
      );
      setTimeout(() => controller.abort('stop'), 300);
      await expect(call).rejects.toThrow();
      // The gateway ends the call (its upstream request is cancelled) well before the tool would.
      for (
        let turn = 0;
        turn < 200 && !(await lines()).some((line) => line.outcome !== 'started');
        turn++
      ) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const last = (await lines()).at(-1);
      expect(last?.outcome).not.toBe('ok');
      expect(last?.outcome).not.toBe('started');
      // And a later call still works on the same connection.
      expect(resultText(await client.callTool({ name: 'tk__note', arguments: { id: 'n2' } }))).toBe(
        'note n2',
      );
    },
    60_000,
  );
});
