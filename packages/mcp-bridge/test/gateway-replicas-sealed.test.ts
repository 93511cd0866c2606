import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as ClientV2, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { digestOf } from '../src/gateway/canonical-json.js';
import { GATEWAY_SINGLE_PRINCIPAL } from '../src/gateway/identity/gateway-principal.js';
import { ApprovalSeal } from '../src/gateway/sealed-approval.js';
import {
  jsonLines,
  type Replica,
  startReplica as startReplicaIn,
  stopReplicas,
} from './fixtures/gateway-replica.js';
import { modernToolCaller } from './fixtures/modern-call.js';
import { type PostgresServer, startPostgres } from './fixtures/postgres-server.js';
import { type RedisServer, startRedis } from './fixtures/redis-server.js';
import {
  type ProxyPick,
  type RoundRobinProxy,
  type Routed,
  startRoundRobinProxy,
} from './fixtures/round-robin-proxy.js';

const CLI = fileURLToPath(new URL('../dist/bin/main.js', import.meta.url));
const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
const SEAL_KEY = randomBytes(32);
const MODERN = '2026-07-28';
/** The replicas' approval timeout: long enough for a loaded machine, short enough to expire. */
const APPROVAL_TIMEOUT_MS = 6_000;

let postgres: PostgresServer;
let redis: RedisServer;
let database: string;
let folder: string;
let callsFile: string;
let proxy: RoundRobinProxy | undefined;
const replicas: Replica[] = [];
const closers: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  expect(existsSync(CLI)).toBe(true);
  [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
}, 60_000);
afterAll(async () => {
  await Promise.all([postgres?.stop(), redis?.stop()]);
}, 30_000);
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-sealed-replicas-'));
  callsFile = join(folder, 'calls.jsonl');
  database = await postgres.createDatabase();
}, 30_000);
afterEach(async () => {
  for (const item of closers.splice(0).reverse()) await item.close().catch(() => undefined);
  await stopReplicas(replicas);
  await proxy?.close();
  proxy = undefined;
  await rm(folder, { recursive: true, force: true });
}, 30_000);

/** One replica on the shared back ends, with the shared sealing key in its environment. */
async function startReplica(name: string, approvals: string): Promise<Replica> {
  const replica = await startReplicaIn({
    home: join(folder, name),
    policy: { kind: 'rules', rules: [{ tool: 'tk__publish', decision: 'ask' }], default: 'allow' },
    config: {
      mcpServers: {
        toolkit: {
          command: process.execPath,
          args: [TOOLKIT],
          env: { CALLS_FILE: callsFile },
          namespace: 'tk',
        },
      },
      gateway: {
        pins: database,
        approvals,
        audit: 'audit.jsonl',
        approvalTimeoutMs: APPROVAL_TIMEOUT_MS,
      },
    },
    env: { TOOLFENCE_SEAL_KEY: SEAL_KEY.toString('hex') },
    upstream: 'toolkit',
  });
  replicas.push(replica);
  return replica;
}

/** The round-robin proxy in front of `targets`, closed after the test. */
async function startProxy(
  targets: readonly string[],
  pick?: ProxyPick,
): Promise<{ url: string; routed: Routed[] }> {
  proxy = await startRoundRobinProxy(targets, pick);
  return proxy;
}

function upstreamCalls(): Promise<{ name: string; args: Record<string, unknown> }[]> {
  return jsonLines(callsFile);
}

function auditOf(replica: Replica): Promise<Record<string, unknown>[]> {
  return jsonLines(replica.audit);
}

const textOf = (result: Record<string, unknown> | undefined): string =>
  ((result?.content ?? []) as { text?: string }[]).map((block) => block.text ?? '').join('');

/** A raw 2026-07-28 `tools/call` through `url` (one request; the proxy picks the replica). */
const rawCaller = modernToolCaller;

const approve = { approval: { action: 'accept', content: { approve: true } } };
const publish = (id: string) => ({ name: 'tk__publish', arguments: { id } });

/** Flips one byte inside the sealed bytes of a `requestState`. */
function tamper(state: string): string {
  const [version, key, body] = state.split('.') as [string, string, string];
  const bytes = Buffer.from(body, 'base64url');
  bytes[20] = (bytes[20] as number) ^ 0x01;
  return `${version}.${key}.${bytes.toString('base64url')}`;
}

describe.each([
  ['Redis', () => redis.url],
  ['PostgreSQL', () => database],
])('two replicas sharing the sealing key and a %s approval store', (_store, approvals) => {
  it('honours an approval answered through the other replica exactly once (SDK v2 client, 2026-07-28)', {
    timeout: 120_000,
  }, async () => {
    const pair = await Promise.all([
      startReplica('a', approvals()),
      startReplica('b', approvals()),
    ]);
    expect(pair[0]?.stderr()).not.toMatch(/random key of this process/);
    const { url, routed } = await startProxy(pair.map((replica) => replica.url));
    const client = new ClientV2(
      { name: 'v2-modern', version: '1.0.0' },
      { capabilities: { elicitation: {} }, versionNegotiation: { mode: 'auto' as const } },
    );
    const prompts: string[] = [];
    client.setRequestHandler('elicitation/create', async (request) => {
      prompts.push(String(request.params.message));
      return { action: 'accept', content: { approve: true } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(url)));
    closers.push(client);
    expect(client.getNegotiatedProtocolVersion()).toBe(MODERN);
    const result = await client.callTool({ name: 'tk__publish', arguments: { id: 'across' } });
    expect(textOf(result as Record<string, unknown>)).toBe('published across');
    expect(prompts).toHaveLength(1);
    // The ask and its retry went to different replicas; the upstream ran the call once.
    const calls = routed.filter((entry) => entry.method === 'tools/call');
    expect(calls).toHaveLength(2);
    expect(calls[0]?.target).not.toBe(calls[1]?.target);
    expect((await upstreamCalls()).map((call) => call.args.id)).toEqual(['across']);
    const asked = await auditOf(pair[calls[0]?.target as number] as Replica);
    const ran = await auditOf(pair[calls[1]?.target as number] as Replica);
    expect(asked.map((line) => line.outcome)).toEqual(['asked']);
    expect(ran.map((line) => [line.outcome, line.approvedBy])).toEqual([
      ['started', 'user'],
      ['ok', 'user'],
    ]);

    // The same approval presented again, on either replica, is refused: single use is shared.
    const call = rawCaller(url);
    const first = await call(publish('raw'));
    const state = first.result?.requestState as string;
    expect(first.result?.resultType).toBe('input_required');
    const honoured = await call({
      ...publish('raw'),
      inputResponses: approve,
      requestState: state,
    });
    expect(textOf(honoured.result)).toBe('published raw');
    for (let index = 0; index < 2; index += 1) {
      const again = await call({ ...publish('raw'), inputResponses: approve, requestState: state });
      expect(textOf(again.result)).toMatch(/already used.*did not run/);
    }
    const rawCalls = routed.filter((entry) => entry.method === 'tools/call').slice(2);
    expect(new Set(rawCalls.slice(1).map((entry) => entry.target)).size).toBe(2);
    expect((await upstreamCalls()).map((entry) => entry.args.id)).toEqual(['across', 'raw']);
  });
});

describe('approvals refused across two replicas', () => {
  let url: string;
  let pair: Replica[];

  /** The pin of `tk__publish` as the replicas recorded it (the ask's audit line). */
  const publishPin = async (): Promise<string> => {
    const lines = [...(await auditOf(pair[0] as Replica)), ...(await auditOf(pair[1] as Replica))];
    return lines.find((line) => line.tool === 'tk__publish')?.pin as string;
  };
  const sealFor = (principal: string, id: string, pin: string, key: Buffer = SEAL_KEY) =>
    new ApprovalSeal({ keys: { current: key }, ttlMs: 60_000 }).seal({
      principal,
      tool: 'tk__publish',
      pin,
      argumentsDigest: digestOf({ id }),
    });

  type Row = readonly [
    string,
    (state: string, pin: string) => Promise<string> | string,
    string,
    RegExp,
  ];
  it.for<Row>([
    [
      'a forged requestState (sealed under a key the replicas do not hold)',
      (_state, pin) => sealFor(GATEWAY_SINGLE_PRINCIPAL, 'x', pin, randomBytes(32)),
      'approval-unknown',
      /unknown to this gateway/,
    ],
    [
      'a tampered requestState (one sealed byte flipped)',
      (state) => tamper(state),
      'approval-forged',
      /not an approval this gateway issued, or it was altered/,
    ],
    [
      'a replayed requestState (honoured once, presented again)',
      async (state) => {
        const honoured = await rawCaller(url)({
          ...publish('x'),
          inputResponses: approve,
          requestState: state,
        });
        expect(textOf(honoured.result)).toBe('published x');
        return state;
      },
      'approval-replayed',
      /already used/,
    ],
    [
      'an expired requestState',
      async (state) => {
        await new Promise((resolve) => setTimeout(resolve, APPROVAL_TIMEOUT_MS + 500));
        return state;
      },
      'approval-expired',
      /expired before the call was retried/,
    ],
    [
      'an other-principal requestState (sealed with the right key for another person)',
      (_state, pin) => sealFor('https://issuer.example|mallory', 'x', pin),
      'approval-other-principal',
      /given to another caller/,
    ],
    [
      'a requestState given for other arguments',
      (_state, pin) => sealFor(GATEWAY_SINGLE_PRINCIPAL, 'other', pin),
      'approval-mismatch',
      /given for other arguments/,
    ],
  ])(
    'refuses %s, and the upstream sees nothing more',
    {
      timeout: 120_000,
    },
    async ([_label, make, outcome, refusal]) => {
      pair = await Promise.all([startReplica('a', redis.url), startReplica('b', redis.url)]);
      ({ url } = await startProxy(pair.map((replica) => replica.url)));
      const call = rawCaller(url);
      const asked = await call(publish('x'));
      expect(asked.result?.resultType).toBe('input_required');
      const presented = await make(asked.result?.requestState as string, await publishPin());
      const before = (await upstreamCalls()).length;
      const reply = await call({
        ...publish('x'),
        inputResponses: approve,
        requestState: presented,
      });
      expect(reply.result?.isError).toBe(true);
      expect(textOf(reply.result)).toMatch(refusal);
      expect(textOf(reply.result)).toMatch(/did not run/);
      expect((await upstreamCalls()).length).toBe(before);
      const outcomes = [
        ...(await auditOf(pair[0] as Replica)),
        ...(await auditOf(pair[1] as Replica)),
      ].map((line) => line.outcome);
      expect(outcomes).toContain(outcome);
    },
  );
});

describe('a legacy (2025-11-25) session behind the round-robin balancer', () => {
  it('lists and calls through both replicas in one session (SDK 1.x client)', {
    timeout: 120_000,
  }, async () => {
    const pair = await Promise.all([startReplica('a', redis.url), startReplica('b', redis.url)]);
    const { url, routed } = await startProxy(pair.map((replica) => replica.url));
    const client = new ClientV1({ name: 'v1-legacy', version: '1.0.0' }, { capabilities: {} });
    await client.connect(new TransportV1(new URL(url)));
    closers.push(client);
    expect(client.getServerVersion()?.name).toBe('toolfence-gateway');
    for (let index = 0; index < 2; index += 1) {
      const tools = await client.listTools();
      expect(tools.tools.map((tool) => tool.name)).toContain('tk__note');
    }
    for (let index = 0; index < 4; index += 1) {
      const result = await client.callTool({ name: 'tk__note', arguments: { id: `n${index}` } });
      expect(result.isError).not.toBe(true);
    }
    const session = routed.find((entry) => entry.session !== undefined)?.session;
    expect(session).toMatch(/^tfs1\./);
    // The session's requests were served by both replicas, every one under the same id.
    const sessionRequests = routed.filter((entry) => entry.httpMethod === 'POST' && entry.session);
    expect(new Set(sessionRequests.map((entry) => entry.session))).toEqual(new Set([session]));
    for (const method of ['tools/list', 'tools/call']) {
      const targets = routed
        .filter((entry) => entry.method === method)
        .map((entry) => entry.target);
      expect(new Set(targets)).toEqual(new Set([0, 1]));
    }
    expect((await upstreamCalls()).filter((entry) => entry.name === 'note')).toHaveLength(4);
  });

  it('fails closed when an elicitation round trip is split between replicas: the call ends as not approved, nothing runs', {
    timeout: 120_000,
  }, async () => {
    const pair = await Promise.all([startReplica('a', redis.url), startReplica('b', redis.url)]);
    // The client's answer to an elicitation (a JSON-RPC response, no method) is sent to the
    // replica that did not run the call; the call goes to the replica that opened the session
    // (which holds its flow labels: on the other, a resumed session is judged as one whose labels
    // were dropped, and the flow guard denies the publish before anything is asked); everything
    // else goes round robin.
    const { url, routed } = await startProxy(
      pair.map((replica) => replica.url),
      (before, body) => {
        const method = (body as { method?: unknown }).method;
        if (method === 'tools/call') {
          return before.find((entry) => entry.method === 'initialize')?.target;
        }
        if (method !== undefined) return undefined;
        if ((body as { result?: unknown }).result === undefined) return undefined;
        const call = before.filter((entry) => entry.method === 'tools/call').at(-1);
        return call === undefined ? undefined : 1 - call.target;
      },
    );
    let asked = 0;
    const client = new ClientV1(
      { name: 'v1-legacy', version: '1.0.0' },
      { capabilities: { elicitation: {} } },
    );
    client.setRequestHandler(ElicitRequestSchema, async () => {
      asked += 1;
      return { action: 'accept', content: { approve: true } };
    });
    await client.connect(new TransportV1(new URL(url)));
    closers.push(client);
    const result = await client.callTool(
      { name: 'tk__publish', arguments: { id: 'moved' } },
      undefined,
      { timeout: 60_000 },
    );
    // The prompt or its answer did not reach the replica running the call: not approved, fail
    // closed (the client may not even have been asked: the prompt left on a replica without the
    // session's listening stream).
    expect(asked).toBeLessThanOrEqual(1);
    expect(result.isError).toBe(true);
    expect(textOf(result as Record<string, unknown>)).toMatch(/not approved by the user/);
    // Any answer the client sent went to the replica that did not run the call.
    const call = routed.filter((entry) => entry.method === 'tools/call').at(-1);
    expect(call).toBeDefined();
    const answers = routed.filter((entry) => entry.httpMethod === 'POST' && !entry.method);
    expect(answers.every((entry) => entry.target !== call?.target)).toBe(true);
    const audits = [...(await auditOf(pair[0] as Replica)), ...(await auditOf(pair[1] as Replica))];
    expect(
      audits.filter((line) => line.tool === 'tk__publish').map((line) => line.outcome),
    ).toEqual(['declined']);
    expect((await upstreamCalls()).filter((entry) => entry.name === 'publish')).toEqual([]);
  });

  it('judges a session resumed on the replica that did not open it as dropped: a sink call there is denied, nothing runs', {
    timeout: 120_000,
  }, async () => {
    const pair = await Promise.all([startReplica('a', redis.url), startReplica('b', redis.url)]);
    // The call goes to the replica that did not take the initialize.
    const { url, routed } = await startProxy(
      pair.map((replica) => replica.url),
      (before, body) => {
        if ((body as { method?: unknown }).method !== 'tools/call') return undefined;
        const opener = before.find((entry) => entry.method === 'initialize')?.target;
        return opener === undefined ? undefined : 1 - opener;
      },
    );
    const client = new ClientV1(
      { name: 'v1-legacy', version: '1.0.0' },
      { capabilities: { elicitation: {} } },
    );
    let asked = 0;
    client.setRequestHandler(ElicitRequestSchema, async () => {
      asked += 1;
      return { action: 'accept', content: { approve: true } };
    });
    await client.connect(new TransportV1(new URL(url)));
    closers.push(client);
    const result = await client.callTool({ name: 'tk__publish', arguments: { id: 'elsewhere' } });
    expect(result.isError).toBe(true);
    expect(textOf(result as Record<string, unknown>)).toMatch(/not held by this process/);
    expect(asked).toBe(0);
    const opener = routed.find((entry) => entry.method === 'initialize')?.target;
    expect(routed.find((entry) => entry.method === 'tools/call')?.target).toBe(1 - (opener ?? 0));
    expect((await upstreamCalls()).filter((entry) => entry.name === 'publish')).toEqual([]);
  });
});
