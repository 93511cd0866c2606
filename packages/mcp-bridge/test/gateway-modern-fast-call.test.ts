import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Client as ClientV2, InMemoryTransport } from '@modelcontextprotocol/client';
import { type JSONRPCMessage, Server, type Transport } from '@modelcontextprotocol/server';
import { AllowAllAuthorizer, RiskPolicy, sameJsonValue as sameJsonValueOf } from '@toolfence/tools';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { GatewayConfigError } from '../src/gateway/errors.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { ENVELOPE_COMPARE, McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { StdioFrontTransport } from '../src/gateway/stdio-front-transport.js';
import { resultText } from './helpers.js';

// Issue 41: a plain 2026-07-28 `tools/call` on `toolfence-mcp serve`'s stdio front, whose `_meta`
// is exactly an envelope the SDK v2 server already accepted on the connection, skips the SDK
// server's per-message checks. Every answer is compared, byte for byte, with the same lines sent
// on a connection whose fast path is off (`plainCallFastPath: false`: the SDK path).

const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
const VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const INFO_KEY = 'io.modelcontextprotocol/clientInfo';
const CAPS_KEY = 'io.modelcontextprotocol/clientCapabilities';

let folder: string;
let gateway: McpGateway;
let auditPath: string;
/** The `_meta` the SDK v2 client (2026-07-28 mode) sends on its `tools/call`. */
let envelope: Record<string, unknown>;
const open: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-modern-fast-call-'));
  auditPath = join(folder, 'audit.jsonl');
  gateway = new McpGateway({
    config: parseGatewayConfig({
      mcpServers: { toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' } },
    }),
    authorizer: new AllowAllAuthorizer(),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(auditPath, 64 * 1024 * 1024),
  });
  await gateway.start();
  // What a real SDK v2 client sends: its envelope is the ordinary one.
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const seen: JSONRPCMessage[] = [];
  const recording: Transport = serverSide;
  const start = recording.start.bind(recording);
  recording.start = async () => {
    await start();
    const deliver = recording.onmessage;
    recording.onmessage = (message, extra) => {
      seen.push(message);
      deliver?.(message, extra);
    };
  };
  await gateway.connect(recording);
  const client = new ClientV2(
    { name: 'v2-client', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  await client.connect(clientSide);
  open.push(client);
  expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
  await client.callTool({ name: 'tk__note', arguments: { id: 'probe' } });
  const call = seen.find((message) => 'method' in message && message.method === 'tools/call') as
    | { params: { _meta: Record<string, unknown> } }
    | undefined;
  envelope = call?.params._meta as Record<string, unknown>;
  expect(Object.keys(envelope).sort()).toEqual([CAPS_KEY, INFO_KEY, VERSION_KEY]);
}, 60_000);

afterAll(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await gateway.close();
  await rm(folder, { recursive: true, force: true });
});

/** One stdio connection to `on` (serve's own front), driven line by line. */
async function connection(fastPath: boolean, on: McpGateway = gateway) {
  const stdin = new PassThrough();
  const stdout = new PassThrough();
  const lines: string[] = [];
  let rest = '';
  stdout.on('data', (chunk: Buffer) => {
    rest += chunk.toString('utf8');
    for (let index = rest.indexOf('\n'); index !== -1; index = rest.indexOf('\n')) {
      lines.push(rest.slice(0, index));
      rest = rest.slice(index + 1);
    }
  });
  await on.connect(new StdioFrontTransport({ stdin, stdout }), {
    plainCallFastPath: fastPath,
  });
  open.push({ close: async () => void stdin.end() });
  const answered = (id: unknown, from: number) =>
    lines.slice(from).some((line) => (JSON.parse(line) as { id?: unknown }).id === id);
  return {
    lines,
    send(text: string) {
      stdin.write(`${text}\n`);
    },
    /** Waits for the answer to `id` among the lines written from index `from` on. */
    async until(id: unknown, from = 0) {
      for (let turn = 0; turn < 600 && !answered(id, from); turn++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      expect(answered(id, from)).toBe(true);
    },
  };
}

const request = (id: unknown, method: string, params: unknown) =>
  JSON.stringify({ jsonrpc: '2.0', id, method, params });

/** The opening of a 2026-07-28 connection, then a plain call (the SDK learns the envelope). */
async function opened(fastPath: boolean, on: McpGateway = gateway, meta = envelope) {
  const link = await connection(fastPath, on);
  link.send(request('d', 'server/discover', { _meta: meta }));
  await link.until('d');
  link.send(request('o', 'tools/call', { name: 'tk__note', arguments: { id: 'o' }, _meta: meta }));
  await link.until('o');
  return link;
}

/** The lines both connections wrote after `texts` and a closing plain call, sorted. */
async function answersOf(texts: readonly string[]): Promise<[string[], string[]]> {
  const both: string[][] = [];
  for (const fastPath of [true, false]) {
    const link = await opened(fastPath);
    const before = link.lines.length;
    for (const text of texts) link.send(text);
    link.send(
      request('end', 'tools/call', { name: 'tk__note', arguments: { id: 'e' }, _meta: envelope }),
    );
    await link.until('end', before);
    // What the SDK path answers after the closing call (a refusal it queued) has arrived too.
    await new Promise((resolve) => setTimeout(resolve, 150));
    both.push(link.lines.slice(before).sort());
  }
  return [both[0] as string[], both[1] as string[]];
}

const withMeta = (meta: unknown, extra: Record<string, unknown> = {}) =>
  request(7, 'tools/call', { name: 'tk__note', arguments: { id: 'x' }, ...extra, _meta: meta });
const changed = (key: string, value: unknown) => () => ({ ...envelope, [key]: value });
const without = (key: string) => () => {
  const copy = { ...envelope };
  delete copy[key];
  return copy;
};

describe('unusual 2026-07-28 calls on the stdio front (issue 41)', () => {
  const rows: [string, () => string][] = [
    ['an ordinary call', () => withMeta(envelope)],
    ['a legacy protocol version', () => withMeta(changed(VERSION_KEY, '2025-11-25')())],
    ['an unsupported protocol version', () => withMeta(changed(VERSION_KEY, '2027-01-01')())],
    ['a version that is not a string', () => withMeta(changed(VERSION_KEY, 20260728)())],
    ['no protocol version', () => withMeta(without(VERSION_KEY)())],
    ['no client capabilities', () => withMeta(without(CAPS_KEY)())],
    ['no client info', () => withMeta(without(INFO_KEY)())],
    ['client info a string', () => withMeta(changed(INFO_KEY, 'client')())],
    ['client info without a version', () => withMeta(changed(INFO_KEY, { name: 'v2-client' })())],
    ['client capabilities an array', () => withMeta(changed(CAPS_KEY, [])())],
    ['other client capabilities', () => withMeta(changed(CAPS_KEY, { elicitation: {} })())],
    ['a log level', () => withMeta({ ...envelope, 'io.modelcontextprotocol/logLevel': 'debug' })],
    [
      'an invalid log level',
      () => withMeta({ ...envelope, 'io.modelcontextprotocol/logLevel': 9 }),
    ],
    ['a progress token', () => withMeta({ ...envelope, progressToken: 'p' })],
    ['trace context', () => withMeta({ ...envelope, traceparent: '00-1-2-01' })],
    ['an empty _meta', () => withMeta({})],
    ['a _meta array', () => withMeta([envelope])],
    ['a _meta string', () => withMeta('envelope')],
    [
      'no _meta (a legacy-shaped call)',
      () => request(7, 'tools/call', { name: 'tk__note', arguments: { id: 'x' } }),
    ],
    ['a requestState', () => withMeta(envelope, { requestState: 'forged' })],
    [
      'inputResponses',
      () => withMeta(envelope, { inputResponses: { approve: { action: 'accept' } } }),
    ],
    ['a task', () => withMeta(envelope, { task: { ttl: 1000 } })],
    ['a name that is not a string', () => request(7, 'tools/call', { name: 7, _meta: envelope })],
    ['no name', () => request(7, 'tools/call', { arguments: {}, _meta: envelope })],
    [
      'arguments an array',
      () => request(7, 'tools/call', { name: 'tk__note', arguments: ['x'], _meta: envelope }),
    ],
    [
      'an id that is not an integer',
      () =>
        request(7.5, 'tools/call', { name: 'tk__note', arguments: { id: 'x' }, _meta: envelope }),
    ],
    [
      'a null id',
      () =>
        request(null, 'tools/call', { name: 'tk__note', arguments: { id: 'x' }, _meta: envelope }),
    ],
    ['an id in flight reused', () => `${withMeta(envelope)}\n${withMeta(envelope)}`],
    [
      'jsonrpc 1.0',
      () =>
        JSON.stringify({
          jsonrpc: '1.0',
          id: 7,
          method: 'tools/call',
          params: { name: 'tk__note', arguments: { id: 'x' }, _meta: envelope },
        }),
    ],
    [
      'an own __proto__ in arguments',
      () =>
        `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"tk__note","arguments":{"__proto__":{"id":"x"}},"_meta":${JSON.stringify(envelope)}}}`,
    ],
    [
      'an own __proto__ in _meta',
      () =>
        `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"tk__note","_meta":{"__proto__":{}, ${JSON.stringify(envelope).slice(1)}}}`,
    ],
    [
      'a duplicate _meta, the last one empty',
      () =>
        `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"tk__note","arguments":{"id":"x"},"_meta":${JSON.stringify(envelope)},"_meta":{}}}`,
    ],
    [
      'wrong arguments for the tool',
      () => request(7, 'tools/call', { name: 'tk__note', arguments: { id: 1 }, _meta: envelope }),
    ],
    [
      'a tool that is not offered',
      () => request(7, 'tools/call', { name: 'tk__nothing', _meta: envelope }),
    ],
    [
      'the envelope as a notification',
      () =>
        JSON.stringify({
          jsonrpc: '2.0',
          method: 'tools/call',
          params: { name: 'tk__note', _meta: envelope },
        }),
    ],
  ];
  it.each(rows)(
    'answers %s byte for byte as the SDK path',
    async (_name, text) => {
      const [fast, sdk] = await answersOf([text()]);
      expect(fast).toEqual(sdk);
    },
    60_000,
  );

  it('serves the ordinary call without the SDK server building a request context', async () => {
    const link = await opened(true);
    const built = vi.spyOn(
      Server.prototype as unknown as { buildContext: (...args: unknown[]) => unknown },
      'buildContext',
    );
    try {
      link.send(withMeta(envelope));
      await link.until(7);
      expect(built).not.toHaveBeenCalled();
      link.send(withMeta({ ...envelope, traceparent: '00-1-2-01' }).replace('"id":7', '"id":8'));
      await link.until(8);
      expect(built).toHaveBeenCalledTimes(1);
    } finally {
      built.mockRestore();
    }
    const answer = JSON.parse(link.lines.at(-1) as string) as { result: Record<string, unknown> };
    expect(answer.result.resultType).toBe('complete');
    expect(resultText(answer.result as never)).toBe('note x');
  }, 60_000);
});

describe('a cancelled 2026-07-28 call on the stdio front (issue 41)', () => {
  it.each([
    ['on the fast path', true],
    ['on the SDK path', false],
  ])(
    'is not answered %s, and the connection goes on',
    async (_name, fastPath) => {
      const link = await opened(fastPath);
      const from = link.lines.length;
      link.send(
        request('slow', 'tools/call', {
          name: 'tk__slow',
          arguments: { ms: 20_000, n: 1 },
          _meta: envelope,
        }),
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      link.send(
        JSON.stringify({
          jsonrpc: '2.0',
          method: 'notifications/cancelled',
          params: { requestId: 'slow', reason: 'stop' },
        }),
      );
      link.send(withMeta(envelope));
      await link.until(7, from);
      // The gateway ends the call (its upstream request is cancelled) long before the tool would.
      await new Promise((resolve) => setTimeout(resolve, 300));
      const ids = link.lines.slice(from).map((line) => (JSON.parse(line) as { id?: unknown }).id);
      expect(ids).toEqual([7]);
      // Its audit line says it ended (not ok), long before the tool's 20 s would have passed.
      const ended = async () =>
        (await readFile(auditPath, 'utf8'))
          .trim()
          .split('\n')
          .map((line) => JSON.parse(line) as { tool?: string; outcome?: string })
          .filter((line) => line.tool === 'tk__slow' && line.outcome !== 'started');
      const before = fastPath ? 0 : 1;
      for (let turn = 0; turn < 200 && (await ended()).length <= before; turn++) {
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const lines = await ended();
      expect(lines.length).toBe(before + 1);
      expect(lines.at(-1)?.outcome).not.toBe('ok');
    },
    60_000,
  );
});

describe('a 2026-07-28 ask on the stdio front (issue 41)', () => {
  it('is answered input_required and its retry served as on the SDK path', async () => {
    const asking = new McpGateway({
      config: parseGatewayConfig({
        mcpServers: { toolkit: { command: process.execPath, args: [TOOLKIT], namespace: 'tk' } },
      }),
      // Publishing asks: the call's result is input_required, which the fast path hands back.
      authorizer: new RiskPolicy({ risk: { allowUpTo: 'read-only', askUpTo: 'paid-operation' } }),
      pins: await PinStore.open(join(folder, 'asking.lock.json')),
      audit: new AuditLog(join(folder, 'asking.jsonl'), 1024 * 1024),
    });
    open.push(asking);
    await asking.start();
    const meta = { ...envelope, [CAPS_KEY]: { elicitation: { form: {} } } };
    const answers: Record<string, unknown>[][] = [];
    for (const fastPath of [true, false]) {
      const link = await opened(fastPath, asking, meta);
      const publish = { name: 'tk__publish', arguments: { id: 'p' }, _meta: meta };
      let from = link.lines.length;
      link.send(request('ask', 'tools/call', publish));
      await link.until('ask', from);
      const asked = JSON.parse(link.lines.at(-1) as string) as {
        result: {
          resultType: string;
          requestState: string;
          inputRequests: Record<string, unknown>;
        };
      };
      expect(asked.result.resultType).toBe('input_required');
      const key = Object.keys(asked.result.inputRequests)[0] as string;
      from = link.lines.length;
      link.send(
        request('retry', 'tools/call', {
          ...publish,
          requestState: asked.result.requestState,
          inputResponses: { [key]: { action: 'accept', content: { approve: true } } },
        }),
      );
      await link.until('retry', from);
      const retried = JSON.parse(link.lines.at(-1) as string) as Record<string, unknown>;
      // The handle is sealed afresh for each ask: the rest of the answer is compared.
      const { requestState: _state, ...rest } = asked.result;
      answers.push([rest, retried]);
    }
    expect(answers[0]).toEqual(answers[1]);
    const retried = (answers[0] as Record<string, unknown>[])[1] as { result: never };
    expect(resultText(retried.result)).toBe('published p');
  }, 60_000);
});

describe('generated plain 2026-07-28 calls (issue 41)', () => {
  it('answer and audit as the SDK path does', async () => {
    const id = fc.oneof(fc.string({ maxLength: 8 }), fc.integer());
    const args = fc.oneof(
      fc.record({ id: fc.string({ maxLength: 12 }) }),
      fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
    );
    const call = fc.record(
      {
        id,
        name: fc.constantFrom('tk__note', 'tk__nothing', 'tk__note'),
        arguments: args,
      },
      { requiredKeys: ['id', 'name'] },
    );
    const audit = async () =>
      (await readFile(auditPath, 'utf8'))
        .trim()
        .split('\n')
        .map((line) => {
          // Each connection is its own flow session; the rest of a line is the call's.
          const {
            time: _t,
            previous: _p,
            hash: _h,
            session: _s,
            ...rest
          } = JSON.parse(line) as Record<string, unknown>;
          return rest;
        });
    const fast = await opened(true);
    const sdk = await opened(false);
    await fc.assert(
      fc.asyncProperty(call, async ({ id: callId, name, arguments: callArgs }) => {
        const text = request(callId, 'tools/call', {
          name,
          ...(callArgs === undefined ? {} : { arguments: callArgs }),
          _meta: envelope,
        });
        const answers: string[] = [];
        const lines: Record<string, unknown>[][] = [];
        for (const link of [fast, sdk]) {
          const before = (await audit()).length;
          const count = link.lines.length;
          link.send(text);
          await link.until(callId, count);
          answers.push(...link.lines.slice(count));
          lines.push((await audit()).slice(before));
        }
        expect(answers[0]).toBe(answers[1]);
        expect(lines[0]).toEqual(lines[1]);
      }),
      { numRuns: 25 },
    );
  }, 120_000);

  it.each([
    ['an unknown key', { fastPath: false }, /^Unknown McpGateway\.connect option "fastPath"/],
    [
      'a misspelled key',
      { plainCallFastpath: false },
      /Unknown McpGateway\.connect option "plainCallFastpath" \(did you mean "plainCallFastPath"\?\)/,
    ],
    ['null', null, /^McpGateway\.connect options must be an object/],
    ['an array', [], /^McpGateway\.connect options must be an object/],
    [
      'a plainCallFastPath that is not true or false',
      { plainCallFastPath: 'no' },
      /plainCallFastPath/,
    ],
  ])('refuses connect options that are %s', async (_name, options, message) => {
    const [, serverSide] = InMemoryTransport.createLinkedPair();
    const connecting = gateway.connect(serverSide, options as never);
    await expect(connecting).rejects.toThrow(GatewayConfigError);
    await expect(connecting).rejects.toThrow(message);
  });

  it('compares envelopes strictly', () => {
    const sameJsonValue = (left: unknown, right: unknown) =>
      sameJsonValueOf(left, right, ENVELOPE_COMPARE);
    expect(sameJsonValue(envelope, structuredClone(envelope))).toBe(true);
    expect(sameJsonValue({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(sameJsonValue({ a: null }, {})).toBe(false);
    expect(sameJsonValue([1], { 0: 1 })).toBe(false);
    expect(sameJsonValue({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(sameJsonValue(Object.create({ a: 1 }), {})).toBe(false);
  });

  it.each([
    ['exactly at the envelope depth limit (32)', 32, true],
    ['one level past the envelope depth limit (33)', 33, false],
  ])('compares an envelope whose deepest object is %s', (_name, deepest, expected) => {
    const deep = (): unknown => {
      let value: unknown = { leaf: 'x' };
      // The outer object is at depth 0: `deepest` more levels put the innermost one at `deepest`.
      for (let level = 0; level < deepest; level++) value = { next: value };
      return value;
    };
    expect(sameJsonValueOf(deep(), deep(), ENVELOPE_COMPARE)).toBe(expected);
  });
});
