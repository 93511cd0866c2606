// The gateway's downstream in both eras: MCP 2026-07-28 (stateless; an `ask` answered through an
// `input_required` result and a retry) and 2025-11-25 (a session; an `ask` answered through
// elicitation), with the SDK v2 client, the SDK 1.x client and raw JSON-RPC. Every approval covers
// one exact call: replayed for other arguments, reused, expired or forged, it is refused and the
// upstream server sees nothing.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as ClientV2, InMemoryTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport as InMemoryV1 } from '@modelcontextprotocol/sdk/inMemory.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { RiskPolicy } from '@toolfence/tools';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { GatewayConfigError } from '../src/gateway/errors.js';
import { parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { modernToolCaller } from './fixtures/modern-call.js';
import { serveLoopbackHttp } from './support/loopback-gateway-http.js';

const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
const MODERN = '2026-07-28';

let folder: string;
let callsFile: string;
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-gateway-eras-'));
  callsFile = join(folder, 'calls.jsonl');
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function serverCalls(): Promise<{ name: string; args: Record<string, unknown> }[]> {
  const text = await readFile(callsFile, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

async function auditLines(): Promise<Record<string, unknown>[]> {
  const text = await readFile(join(folder, 'audit.jsonl'), 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
}

async function startGateway(
  options: { approvalTimeoutMs?: number; maxSpentApprovals?: number } = {},
) {
  const gateway = new McpGateway({
    config: parseGatewayConfig({
      mcpServers: {
        toolkit: {
          command: process.execPath,
          args: [TOOLKIT],
          env: { CALLS_FILE: callsFile },
          namespace: 'tk',
        },
      },
    }),
    // Read-only runs, up to external publication asks, destructive is denied.
    authorizer: new RiskPolicy({ risk: { allowUpTo: 'read-only', askUpTo: 'paid-operation' } }),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    ...options,
  });
  open.push(gateway);
  await gateway.start();
  return gateway;
}

type Answer = (message: string) => boolean | Promise<boolean>;

/** The SDK v2 client, in-memory; `modern` negotiates 2026-07-28, else the 2025 handshake. */
async function v2Client(gateway: McpGateway, modern: boolean, answer?: Answer) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await gateway.connect(serverSide);
  const client = new ClientV2(
    { name: 'v2-client', version: '1.0.0' },
    {
      capabilities: answer === undefined ? {} : { elicitation: {} },
      ...(modern ? { versionNegotiation: { mode: 'auto' as const } } : {}),
    },
  );
  if (answer !== undefined) {
    client.setRequestHandler('elicitation/create', async (request) => ({
      action: 'accept',
      content: { approve: await answer(String(request.params.message)) },
    }));
  }
  await client.connect(clientSide);
  open.push(client);
  return client;
}

async function v1Client(gateway: McpGateway, answer?: Answer) {
  const [clientSide, serverSide] = InMemoryV1.createLinkedPair();
  await gateway.connect(serverSide);
  const client = new ClientV1(
    { name: 'v1-client', version: '1.0.0' },
    { capabilities: answer === undefined ? {} : { elicitation: {} } },
  );
  if (answer !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => ({
      action: 'accept',
      content: { approve: await answer(String(request.params.message)) },
    }));
  }
  await client.connect(clientSide);
  open.push(client);
  return client;
}

interface RpcReply {
  readonly result?: Record<string, unknown>;
  readonly error?: { code: number; message: string };
}

/** Raw 2026-07-28 JSON-RPC over an in-memory pair: every request carries the `_meta` envelope. */
async function rawModern(gateway: McpGateway, capabilities: Record<string, unknown>) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await gateway.connect(serverSide);
  const waiting = new Map<number, (reply: RpcReply) => void>();
  clientSide.onmessage = (message) => {
    const reply = message as { id?: number } & RpcReply;
    if (typeof reply.id === 'number') waiting.get(reply.id)?.(reply);
  };
  await clientSide.start();
  open.push(clientSide);
  let id = 0;
  return (params: Record<string, unknown>): Promise<RpcReply> => {
    id += 1;
    const sent = id;
    return new Promise((resolve) => {
      waiting.set(sent, resolve);
      void clientSide.send({
        jsonrpc: '2.0',
        id: sent,
        method: 'tools/call',
        params: {
          ...params,
          _meta: {
            'io.modelcontextprotocol/protocolVersion': MODERN,
            'io.modelcontextprotocol/clientCapabilities': capabilities,
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
          },
        },
      });
    });
  };
}

const text = (result: Record<string, unknown> | undefined) =>
  ((result?.content ?? []) as { type: string; text?: string }[])
    .map((block) => block.text ?? '')
    .join('');

const approve = { approval: { action: 'accept', content: { approve: true } } };
const publish = (id: string) => ({ name: 'tk__publish', arguments: { id } });

describe('the gateway downstream in MCP 2026-07-28 (modern, stateless)', () => {
  it('serves the SDK v2 client in modern mode: allow, deny, and an ask approved through input_required', async () => {
    const gateway = await startGateway();
    const prompts: string[] = [];
    const client = await v2Client(gateway, true, (message) => {
      prompts.push(message);
      return message.includes('"id": "m1"');
    });
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
    expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual([
      'tk__note',
      'tk__publish',
      'tk__slow',
      'tk__wipe',
    ]);
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'a' } }))).toBe(
      'note a',
    );
    const denied = await client.callTool({ name: 'tk__wipe', arguments: { confirm: true } });
    expect(denied.isError).toBe(true);
    expect(text(denied)).toMatch(/denied by the gateway's policy/);
    expect(text(await client.callTool({ name: 'tk__publish', arguments: { id: 'm1' } }))).toBe(
      'published m1',
    );
    const declined = await client.callTool({ name: 'tk__publish', arguments: { id: 'm2' } });
    expect(declined.isError).toBe(true);
    expect(text(declined)).toMatch(/not approved by the user/);
    expect(prompts).toHaveLength(2);
    expect(prompts[0]).toContain('covers exactly these, once');
    expect((await serverCalls()).map((call) => [call.name, call.args.id])).toEqual([
      ['note', 'a'],
      ['publish', 'm1'],
    ]);
    const audit = await auditLines();
    expect(audit.map((line) => [line.tool, line.outcome, line.approvedBy ?? null])).toEqual([
      ['tk__note', 'started', null],
      ['tk__note', 'ok', null],
      ['tk__wipe', 'denied', null],
      ['tk__publish', 'asked', null],
      ['tk__publish', 'started', 'user'],
      ['tk__publish', 'ok', 'user'],
      ['tk__publish', 'asked', null],
      ['tk__publish', 'declined', null],
    ]);
    expect(gateway.pendingApprovals).toBe(0);
  }, 30_000);

  it('denies an ask when the modern client declares no elicitation, without asking', async () => {
    const gateway = await startGateway();
    const call = await rawModern(gateway, {});
    const reply = await call({ name: 'tk__publish', arguments: { id: 'x' } });
    expect(reply.result?.resultType).not.toBe('input_required');
    expect(reply.result?.isError).toBe(true);
    expect(text(reply.result)).toMatch(/this client cannot ask the user.*nobody was asked/);
    expect((await auditLines()).at(-1)).toMatchObject({ outcome: 'no-approval-channel' });
    expect(gateway.pendingApprovals).toBe(0);
    expect(await serverCalls()).toEqual([]);
  }, 30_000);

  it('answers an ask with input_required whose requestState is an opaque handle, not the call', async () => {
    const gateway = await startGateway();
    const call = await rawModern(gateway, { elicitation: {} });
    const reply = await call({ name: 'tk__publish', arguments: { id: 'secret-id' } });
    expect(reply.result?.resultType).toBe('input_required');
    const state = reply.result?.requestState as string;
    // Sealed (AES-256-GCM): version, key id, sealed bytes; nothing of the call readable.
    expect(state).toMatch(/^tfa2\.[A-Za-z0-9_-]{11}\.[A-Za-z0-9_-]+$/);
    expect(Buffer.from(state.split('.')[2] as string, 'base64url').toString('latin1')).not.toMatch(
      /secret-id|publish/,
    );
    const requests = reply.result?.inputRequests as Record<string, { method: string }>;
    expect(requests.approval?.method).toBe('elicitation/create');
    expect(await serverCalls()).toEqual([]);
    const done = await call({
      name: 'tk__publish',
      arguments: { id: 'secret-id' },
      inputResponses: approve,
      requestState: state,
    });
    expect(text(done.result)).toBe('published secret-id');
  }, 30_000);

  type Replay = {
    readonly first: Record<string, unknown>;
    readonly retry: (state: string) => Record<string, unknown>;
    readonly refusal: RegExp;
    readonly outcome: string;
    readonly wait?: number;
    /** The retry presented the handle it was given, so the handle is spent. */
    readonly spends?: false;
  };
  it.each<[string, Replay]>([
    [
      'an approval replayed for different arguments',
      {
        first: publish('shown'),
        retry: (state) => ({ ...publish('swapped'), inputResponses: approve, requestState: state }),
        refusal: /given for other arguments/,
        outcome: 'approval-mismatch',
      },
    ],
    [
      'an approval replayed for one extra argument',
      {
        first: publish('shown'),
        retry: (state) => ({
          name: 'tk__publish',
          arguments: { id: 'shown', extra: true },
          inputResponses: approve,
          requestState: state,
        }),
        refusal: /given for other arguments/,
        outcome: 'approval-mismatch',
      },
    ],
    [
      'an approval replayed for another tool',
      {
        first: publish('n1'),
        retry: (state) => ({
          name: 'tk__wipe',
          arguments: { confirm: true },
          inputResponses: approve,
          requestState: state,
        }),
        refusal: /another tool/,
        outcome: 'approval-mismatch',
      },
    ],
    [
      'a forged requestState',
      {
        first: publish('n1'),
        retry: () => ({
          ...publish('n1'),
          inputResponses: approve,
          requestState: `tfa1.${'A'.repeat(43)}`,
        }),
        refusal: /not an approval this gateway issued/,
        outcome: 'approval-forged',
        spends: false,
      },
    ],
    [
      'inputResponses without a requestState',
      {
        first: publish('n1'),
        retry: () => ({ ...publish('n1'), inputResponses: approve }),
        refusal: /unknown to this gateway/,
        outcome: 'approval-unknown',
        spends: false,
      },
    ],
    [
      'an approval answered after it expired',
      {
        first: publish('n1'),
        retry: (state) => ({ ...publish('n1'), inputResponses: approve, requestState: state }),
        refusal: /expired/,
        outcome: 'approval-expired',
        wait: 300,
        // Expired is final: it is refused as expired again, nothing to spend.
        spends: false,
      },
    ],
  ])(
    'refuses %s, and the upstream sees nothing',
    async (_label, row) => {
      const gateway = await startGateway({ approvalTimeoutMs: 200 });
      const call = await rawModern(gateway, { elicitation: {} });
      const asked = await call(row.first);
      expect(asked.result?.resultType).toBe('input_required');
      if (row.wait !== undefined) await new Promise((resolve) => setTimeout(resolve, row.wait));
      const reply = await call(row.retry(asked.result?.requestState as string));
      expect(reply.result?.isError).toBe(true);
      expect(text(reply.result)).toMatch(row.refusal);
      expect(text(reply.result)).toMatch(/did not run/);
      expect(await serverCalls()).toEqual([]);
      expect((await auditLines()).at(-1)).toMatchObject({ decision: 'ask', outcome: row.outcome });
      if (row.spends === false) return;
      // The handle is spent either way: presenting it again is refused as used.
      const again = await call({
        ...publish('n1'),
        inputResponses: approve,
        requestState: asked.result?.requestState,
      });
      expect(text(again.result)).toMatch(/already used/);
      expect(await serverCalls()).toEqual([]);
    },
    30_000,
  );

  it('uses an approval once: 20 concurrent retries with one handle run the call once', async () => {
    const gateway = await startGateway();
    const call = await rawModern(gateway, { elicitation: {} });
    const asked = await call(publish('once'));
    const retry = {
      ...publish('once'),
      inputResponses: approve,
      requestState: asked.result?.requestState,
    };
    const answers = (await Promise.all(Array.from({ length: 20 }, () => call(retry)))).map(
      (reply) => text(reply.result),
    );
    expect(answers.filter((answer) => answer === 'published once')).toHaveLength(1);
    expect(answers.filter((answer) => /already used/.test(answer))).toHaveLength(19);
    expect((await serverCalls()).map((entry) => entry.name)).toEqual(['publish']);
  }, 30_000);

  it('races one honest retry against 19 with other arguments: at most the approved call runs', async () => {
    const gateway = await startGateway();
    const call = await rawModern(gateway, { elicitation: {} });
    const asked = await call(publish('approved'));
    const state = asked.result?.requestState;
    const retries = Array.from({ length: 20 }, (_, index) =>
      call({
        ...publish(index === 10 ? 'approved' : `swapped-${index}`),
        inputResponses: approve,
        requestState: state,
      }),
    );
    const answers = (await Promise.all(retries)).map((reply) => text(reply.result));
    const ran = (await serverCalls()).map((entry) => entry.args.id);
    expect(ran.length).toBeLessThanOrEqual(1);
    expect(ran.every((id) => id === 'approved')).toBe(true);
    expect(answers.filter((answer) => answer.startsWith('published'))).toHaveLength(ran.length);
    expect(answers.filter((answer) => /does not cover this call/.test(answer))).toHaveLength(
      20 - ran.length,
    );
  }, 30_000);

  it('refuses an approval given for the definition before it changed and was accepted again', async () => {
    const gateway = await startGateway();
    const call = await rawModern(gateway, { elicitation: {} });
    const asked = await call(publish('p'));
    const changed = (pins: PinStore) =>
      gateway.reload({
        config: parseGatewayConfig({
          mcpServers: {
            toolkit: {
              command: process.execPath,
              args: [TOOLKIT],
              env: {
                CALLS_FILE: callsFile,
                PUBLISH_DESCRIPTION: 'Publishes a note, now elsewhere.',
              },
              namespace: 'tk',
            },
          },
        }),
        pins,
      });
    const lock = join(folder, 'toolfence.lock.json');
    await changed(await PinStore.open(lock));
    expect(gateway.toolNames()).not.toContain('tk__publish');
    const pins = await PinStore.open(lock);
    expect(pins.accept('toolkit', 'publish', pendingDigest(pins, 'publish'))).toBe(true);
    await pins.save();
    await changed(await PinStore.open(lock));
    expect(gateway.toolNames()).toContain('tk__publish');
    const reply = await call({
      ...publish('p'),
      inputResponses: approve,
      requestState: asked.result?.requestState,
    });
    expect(text(reply.result)).toMatch(/another definition/);
    expect(await serverCalls()).toEqual([]);
  }, 30_000);

  it('refuses a retry whose answer declines, and one that answers something else', async () => {
    const gateway = await startGateway();
    const call = await rawModern(gateway, { elicitation: {} });
    for (const response of [
      { approval: { action: 'decline' } },
      { approval: { action: 'accept', content: { approve: 'yes' } } },
      { other: { action: 'accept', content: { approve: true } } },
    ]) {
      const asked = await call(publish('p'));
      const reply = await call({
        ...publish('p'),
        inputResponses: response,
        requestState: asked.result?.requestState,
      });
      expect(text(reply.result)).toMatch(/not approved by the user/);
    }
    expect(await serverCalls()).toEqual([]);
  }, 30_000);

  it('remembers at most maxSpentApprovals spent approvals; one more is refused (fails closed), never forgetting one', async () => {
    const gateway = await startGateway({ maxSpentApprovals: 2 });
    const call = await rawModern(gateway, { elicitation: {} });
    const states: string[] = [];
    for (const id of ['a', 'b', 'c']) {
      states.push((await call(publish(id))).result?.requestState as string);
    }
    for (const [index, id] of ['a', 'b'].entries()) {
      const ran = await call({
        ...publish(id),
        inputResponses: approve,
        requestState: states[index],
      });
      expect(text(ran.result)).toBe(`published ${id}`);
    }
    const full = await call({ ...publish('c'), inputResponses: approve, requestState: states[2] });
    expect(text(full.result)).toMatch(/cannot record that it was used.*fails closed/);
    expect((await auditLines()).at(-1)).toMatchObject({ outcome: 'approval-unavailable' });
    // The two spent ones are still remembered: neither runs again.
    const replay = await call({
      ...publish('a'),
      inputResponses: approve,
      requestState: states[0],
    });
    expect(text(replay.result)).toMatch(/already used/);
    expect((await serverCalls()).map((entry) => entry.args.id)).toEqual(['a', 'b']);
  }, 30_000);
});

/** The gateway (see {@link startGateway}) served over Streamable HTTP on loopback. */
async function servedOverHttp() {
  return serveLoopbackHttp(await startGateway(), open);
}

describe('approvals over stateless HTTP (2026-07-28)', () => {
  it('binds an approval across requests: the same handle for other arguments is refused, the exact retry runs once', async () => {
    const http = await servedOverHttp();
    const call = modernToolCaller(http.url);
    const post = async (params: Record<string, unknown>): Promise<RpcReply> => {
      const reply = await call(params);
      expect(reply.sessionId).toBeNull();
      return reply;
    };
    const asked = await post(publish('over-http'));
    expect(asked.result?.resultType).toBe('input_required');
    const state = asked.result?.requestState;
    const other = await post({ ...publish('other'), inputResponses: approve, requestState: state });
    expect(text(other.result)).toMatch(/given for other arguments/);
    const again = await post(publish('over-http'));
    const exact = await post({
      ...publish('over-http'),
      inputResponses: approve,
      requestState: again.result?.requestState,
    });
    expect(text(exact.result)).toBe('published over-http');
    const replay = await post({
      ...publish('over-http'),
      inputResponses: approve,
      requestState: again.result?.requestState,
    });
    expect(text(replay.result)).toMatch(/already used/);
    expect((await serverCalls()).map((entry) => entry.args.id)).toEqual(['over-http']);
  }, 30_000);
});

describe('the HTTP front (serve --http)', () => {
  const LEGACY = '2025-11-25';
  async function legacySession(url: string) {
    const post = (body: unknown, sessionId?: string) =>
      fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          ...(sessionId === undefined
            ? {}
            : { 'mcp-session-id': sessionId, 'mcp-protocol-version': LEGACY }),
        },
        body: JSON.stringify(body),
      });
    const opened = await post({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: LEGACY,
        capabilities: { elicitation: {} },
        clientInfo: { name: 'raw', version: '1' },
      },
    });
    const sessionId = opened.headers.get('mcp-session-id') as string;
    await opened.text();
    await (await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, sessionId)).text();
    let id = 0;
    return (params: Record<string, unknown>) => {
      id += 1;
      return post({ jsonrpc: '2.0', id, method: 'tools/call', params }, sessionId);
    };
  }

  it('builds one web Request per request in either era, with an abort signal only for a modern one', async () => {
    const http = await servedOverHttp();
    const Original = globalThis.Request;
    let built = 0;
    let signalled = 0;
    // fetch builds its own requests with undici's class, not this global: only the gateway's count.
    globalThis.Request = class extends Original {
      constructor(input: Request | string | URL, init?: RequestInit) {
        super(input, init);
        built += 1;
        if (init?.signal !== undefined) signalled += 1;
      }
    };
    try {
      const modern = await modernToolCaller(http.url)({ name: 'tk__note', arguments: { id: 'm' } });
      expect(text(modern.result)).toBe('note m');
      expect({ built, signalled }).toEqual({ built: 1, signalled: 1 });
      built = 0;
      signalled = 0;
      // initialize, notifications/initialized: two requests; the plain tools/call of the session
      // is served on the fast path, which builds none (issue 41).
      const call = await legacySession(http.url);
      const answer = await (await call({ name: 'tk__note', arguments: { id: 'l' } })).text();
      expect(answer).toContain('note l');
      expect({ built, signalled }).toEqual({ built: 2, signalled: 0 });
      // A call with `_meta` goes through the SDK's transport: one more.
      const traced = await call({ name: 'tk__note', arguments: { id: 'm' }, _meta: {} });
      expect(await traced.text()).toContain('note m');
      expect({ built, signalled }).toEqual({ built: 3, signalled: 0 });
    } finally {
      globalThis.Request = Original;
    }
  }, 30_000);

  it('answers a call whose stream ends with its answer as application/json; a stream with more stays a stream', async () => {
    const http = await servedOverHttp();
    const call = await legacySession(http.url);
    const alone = await call({ name: 'tk__note', arguments: { id: 'j' } });
    expect(alone.headers.get('content-type')).toBe('application/json');
    const body = await alone.text();
    expect(alone.headers.get('content-length')).toBe(String(Buffer.byteLength(body)));
    const answer = JSON.parse(body) as { id: number; result: Record<string, unknown> };
    expect(answer.id).toBe(1);
    expect(text(answer.result)).toBe('note j');
    // Two calls in one POST: the stream does not end with its first answer, so it stays a stream.
    const both = await fetch(http.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': alone.headers.get('mcp-session-id') as string,
        'mcp-protocol-version': LEGACY,
      },
      body: JSON.stringify(
        ['k', 'l'].map((id, index) => ({
          jsonrpc: '2.0',
          id: 10 + index,
          method: 'tools/call',
          params: { name: 'tk__note', arguments: { id } },
        })),
      ),
    });
    expect(both.headers.get('content-type')).toBe('text/event-stream');
    const events = (await both.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)) as { id: number; result: Record<string, unknown> });
    expect(events.map((event) => `${event.id} ${text(event.result)}`).sort()).toEqual([
      '10 note k',
      '11 note l',
    ]);
    expect((await serverCalls()).map((entry) => entry.args.id).sort()).toEqual(['j', 'k', 'l']);
  }, 30_000);
});

describe('the gateway downstream in MCP 2025-11-25 (legacy sessions)', () => {
  it('serves the SDK v2 client in legacy mode and asks through elicitation', async () => {
    const gateway = await startGateway();
    const prompts: string[] = [];
    const client = await v2Client(gateway, false, (message) => {
      prompts.push(message);
      return message.includes('"id": "l1"');
    });
    expect(client.getNegotiatedProtocolVersion()).toBe('2025-11-25');
    expect(text(await client.callTool({ name: 'tk__publish', arguments: { id: 'l1' } }))).toBe(
      'published l1',
    );
    const declined = await client.callTool({ name: 'tk__publish', arguments: { id: 'l2' } });
    expect(declined.isError).toBe(true);
    expect(prompts).toHaveLength(2);
    expect((await serverCalls()).map((call) => call.args.id)).toEqual(['l1']);
  }, 30_000);

  it('asks again for every call: an approval never carries over to the next one', async () => {
    const gateway = await startGateway();
    let asked = 0;
    const client = await v1Client(gateway, () => {
      asked += 1;
      return asked === 1;
    });
    expect(text(await client.callTool({ name: 'tk__publish', arguments: { id: 's' } }))).toBe(
      'published s',
    );
    const second = await client.callTool({ name: 'tk__publish', arguments: { id: 's' } });
    expect(second.isError).toBe(true);
    expect(asked).toBe(2);
    expect((await serverCalls()).map((call) => call.args.id)).toEqual(['s']);
  }, 30_000);

  it('refuses an approval answered after approvalTimeoutMs', async () => {
    const gateway = await startGateway({ approvalTimeoutMs: 200 });
    const client = await v1Client(gateway, async () => {
      await new Promise((resolve) => setTimeout(resolve, 600));
      return true;
    });
    const result = await client.callTool({ name: 'tk__publish', arguments: { id: 'late' } });
    expect(result.isError).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await serverCalls()).toEqual([]);
  }, 30_000);

  it('ignores a modern approval a legacy client sends in its params, and asks its user', async () => {
    const gateway = await startGateway();
    const modern = await rawModern(gateway, { elicitation: {} });
    const state = (await modern(publish('shown'))).result?.requestState as string;
    let asked = 0;
    const client = await v1Client(gateway, () => {
      asked += 1;
      return false;
    });
    const result = await client.callTool({
      ...publish('swapped'),
      inputResponses: approve,
      requestState: state,
    } as never);
    expect(result.isError).toBe(true);
    expect(asked).toBe(1);
    expect(await serverCalls()).toEqual([]);
  }, 30_000);
});

describe('McpGateway options', () => {
  it.each<[string, Record<string, unknown>, string]>([
    ['an unknown key', { approvalTimeout: 1000 }, 'approvalTimeout'],
    ['a zero approvalTimeoutMs', { approvalTimeoutMs: 0 }, 'approvalTimeoutMs'],
    ['a fractional approvalTimeoutMs', { approvalTimeoutMs: 1.5 }, 'approvalTimeoutMs'],
    [
      'an approvalTimeoutMs over the timer limit',
      { approvalTimeoutMs: 2 ** 31 },
      'approvalTimeoutMs',
    ],
    ['a zero maxPendingApprovals', { maxPendingApprovals: 0 }, 'maxPendingApprovals'],
    ['a string maxPendingApprovals', { maxPendingApprovals: '10' }, 'maxPendingApprovals'],
    ['a zero maxSpentApprovals', { maxSpentApprovals: 0 }, 'maxSpentApprovals'],
    ['a maxSpentApprovals over 10,000,000', { maxSpentApprovals: 10_000_001 }, 'maxSpentApprovals'],
    ['a maxRequestStateChars of zero', { maxRequestStateChars: 0 }, 'maxRequestStateChars'],
    ['sealKeys of 16 bytes', { sealKeys: { current: new Uint8Array(16) } }, 'sealKey'],
  ])('refuses %s with GATEWAY_CONFIG naming the option', async (_label, extra, option) => {
    const build = async () =>
      new McpGateway({
        config: parseGatewayConfig({ mcpServers: {} }),
        authorizer: new RiskPolicy(),
        pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
        audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
        ...extra,
      });
    const error = await build().catch((caught: unknown) => caught);
    expect(GatewayConfigError.isInstance(error)).toBe(true);
    expect((error as GatewayConfigError).details).toEqual({ option });
  });

  it('accepts an approvalTimeoutMs at the timer limit', async () => {
    const gateway = new McpGateway({
      config: parseGatewayConfig({ mcpServers: {} }),
      authorizer: new RiskPolicy(),
      pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
      audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
      approvalTimeoutMs: 2 ** 31 - 1,
      maxPendingApprovals: 1_000_000,
    });
    await gateway.close();
  });
});

/** The digest `pin --show` prints for a pending tool (what an acceptance names). */
function pendingDigest(pins: PinStore, tool: string): string {
  return pins.pending().find((entry) => entry.tool === tool)?.pin.sha256 ?? 'none';
}
