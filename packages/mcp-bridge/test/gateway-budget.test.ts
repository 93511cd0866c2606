// The gateway's call budgets in one process (`gateway.budget` with the default `memory` URL), and
// a redis:// budget whose Redis cannot be reached: every limit enforced, a refused call explained.
// Then (issue 35 item 3) cancelled calls: a real SDK v2 upstream counts its runs (it ignores
// cancellation, as an upstream that already started the work does); a bounded race loop cancels
// calls at random points; the upstream's count never exceeds maxCalls, nor its runs in progress
// maxConcurrent, with the memory and with a real Redis budget.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { type CallBudget, RiskPolicy } from '@toolfence/tools';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { gatewayBudget } from '../src/gateway/gateway-budget.js';
import { type GatewayBudgetSettings, parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { type RedisServer, startRedis } from './fixtures/redis-server.js';

const TOOLKIT = fileURLToPath(new URL('./fixtures/gateway-toolkit-server.mjs', import.meta.url));
const COUNTING = fileURLToPath(new URL('./fixtures/run-counting-server.mjs', import.meta.url));

let folder: string;
let callsFile: string;
const open: { close(): Promise<void> }[] = [];

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-gateway-budget-'));
  callsFile = join(folder, 'calls.jsonl');
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

async function serverCalls(): Promise<string[]> {
  const text = await readFile(callsFile, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => (JSON.parse(line) as { name: string }).name);
}

/** Upstream servers by name, each with the namespace its offered tools start with. */
type Servers = Record<string, { readonly namespace: string } & Record<string, unknown>>;

const toolkit = (): Servers => ({
  toolkit: {
    command: process.execPath,
    args: [TOOLKIT],
    env: { CALLS_FILE: callsFile },
    namespace: 'tk',
  },
});

async function start(
  budget: Record<string, unknown>,
  warnings: string[] = [],
  servers: Servers = toolkit(),
  settings: Record<string, unknown> = {},
) {
  const config = parseGatewayConfig({ mcpServers: servers, gateway: { ...settings, budget } });
  const serverOf = (tool: string): string | undefined =>
    Object.entries(servers).find(([, server]) => tool.startsWith(`${server.namespace}__`))?.[0];
  const built = await gatewayBudget(
    config.gateway.budget as GatewayBudgetSettings,
    serverOf,
    (message) => warnings.push(message),
  );
  open.push(built);
  const gateway = new McpGateway({
    config,
    // Read-only runs, destructive is denied.
    authorizer: new RiskPolicy({ risk: { allowUpTo: 'read-only', askUpTo: 'paid-operation' } }),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    budget: built.reserver,
  });
  open.push(gateway);
  await gateway.start();
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await gateway.connect(serverSide);
  const client = new Client({ name: 'budget-client', version: '1.0.0' });
  await client.connect(clientSide);
  open.push(client);
  return Object.assign(client, { budget: built.reserver });
}

const text = (result: Record<string, unknown>) =>
  (result.content as { type: string; text?: string }[]).map((block) => block.text ?? '').join('');

const over = (tool: string, limit: string) =>
  `The call to ${tool} is over the gateway's call budget (${limit}), so it did not run.`;

describe('gateway.budget', () => {
  it('holds the gateway-wide maxCalls; a call the policy denies is not counted', async () => {
    const client = await start({ maxCalls: 2 });
    const denied = await client.callTool({ name: 'tk__wipe', arguments: { confirm: true } });
    expect(text(denied)).toContain("denied by the gateway's policy");
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'a' } }))).toBe(
      'note a',
    );
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'b' } }))).toBe(
      'note b',
    );
    const third = await client.callTool({ name: 'tk__note', arguments: { id: 'c' } });
    expect(third.isError).toBe(true);
    expect(text(third)).toBe(over('tk__note', 'maxCalls 2 used up'));
    expect(await serverCalls()).toEqual(['note', 'note']);
    const audit = (await readFile(join(folder, 'audit.jsonl'), 'utf8')).trim().split('\n');
    // Each call that ran has its `started` line, written before it went upstream.
    expect(audit.map((line) => JSON.parse(line).outcome)).toEqual([
      'denied',
      'started',
      'ok',
      'started',
      'ok',
      'over-budget',
    ]);
  }, 30_000);

  it('counts perTool limits per tool: one tool used up leaves the other', async () => {
    const client = await start({ perTool: { maxCalls: 1 } });
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'a' } }))).toBe(
      'note a',
    );
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'b' } }))).toBe(
      over('tk__note', 'maxCalls 1 used up'),
    );
    expect(
      (await client.callTool({ name: 'tk__slow', arguments: { ms: 1, n: 1 } })).isError,
    ).not.toBe(true);
    expect(await serverCalls()).toEqual(['note', 'slow']);
  }, 30_000);

  it('counts perServer limits across the tools of one server', async () => {
    const client = await start({ perServer: { maxCalls: 2 } });
    await client.callTool({ name: 'tk__note', arguments: { id: 'a' } });
    await client.callTool({ name: 'tk__slow', arguments: { ms: 1, n: 1 } });
    const third = await client.callTool({ name: 'tk__note', arguments: { id: 'c' } });
    expect(text(third)).toBe(over('tk__note', 'maxCalls 2 used up'));
    expect(await serverCalls()).toEqual(['note', 'slow']);
  }, 30_000);

  it('holds maxConcurrent: a second call while one runs is refused, and runs after it ends', async () => {
    const client = await start({ maxConcurrent: 1 });
    const running = client.callTool({ name: 'tk__slow', arguments: { ms: 2_000, n: 1 } });
    // Wait until the slow call holds its slot (no sleep guessing how long that takes).
    const usage = client.budget as CallBudget;
    while (usage.scopeUsage('gateway').active === 0) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const refused = await client.callTool({ name: 'tk__note', arguments: { id: 'x' } });
    expect(text(refused)).toBe(over('tk__note', 'maxConcurrent 1 running'));
    expect((await running).isError).not.toBe(true);
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'y' } }))).toBe(
      'note y',
    );
  }, 30_000);

  it('fails closed when a redis:// budget cannot be reached, and says so at start', async () => {
    const warnings: string[] = [];
    const client = await start(
      { url: 'redis://127.0.0.1:1', maxCalls: 5, timeoutMs: 300 },
      warnings,
    );
    expect(warnings).toEqual([
      'gateway.budget: Redis cannot be reached yet; calls are refused (fail closed) until it can',
    ]);
    const refused = await client.callTool({ name: 'tk__note', arguments: { id: 'a' } });
    expect(text(refused)).toBe(
      over('tk__note', 'the shared budget store cannot be reached, and the gateway fails closed'),
    );
    expect(await serverCalls()).toEqual([]);
  }, 30_000);

  it('runs calls without a budget when Redis cannot be reached and onUnavailable is allow', async () => {
    const client = await start({
      url: 'redis://127.0.0.1:1',
      maxCalls: 5,
      timeoutMs: 300,
      onUnavailable: 'allow',
    });
    expect(text(await client.callTool({ name: 'tk__note', arguments: { id: 'a' } }))).toBe(
      'note a',
    );
  }, 30_000);
});

interface RunLine {
  readonly event: 'start' | 'end';
  readonly running: number;
}

async function runs(runsFile: string): Promise<RunLine[]> {
  const text = await readFile(runsFile, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunLine);
}

/** A small seeded generator (mulberry32), so a failing row can be replayed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const ROUNDS = 8;
const PER_ROUND = 5;

/**
 * ROUNDS rounds of PER_ROUND concurrent calls; each works 20-120 ms upstream and most are
 * cancelled by the client after 0-80 ms. Returns when every run the upstream started ended.
 */
async function raceCancels(client: Client, runsFile: string, seed: number): Promise<RunLine[]> {
  const next = random(seed);
  for (let round = 0; round < ROUNDS; round += 1) {
    await Promise.all(
      Array.from({ length: PER_ROUND }, async () => {
        const controller = new AbortController();
        const ms = 20 + Math.floor(next() * 100);
        if (next() < 0.8) {
          setTimeout(() => controller.abort(), Math.floor(next() * 80));
        }
        await client
          .callTool({ name: 'rc__work', arguments: { ms } }, undefined, {
            signal: controller.signal,
          })
          .catch(() => undefined);
      }),
    );
  }
  // Every run the upstream started ends within its 120 ms (bounded wait, no timing assertion).
  for (let attempt = 0; attempt < 200; attempt += 1) {
    const lines = await runs(runsFile);
    const started = lines.filter((line) => line.event === 'start').length;
    if (lines.length === 2 * started) return lines;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('the upstream runs did not end');
}

describe('a cancelled call keeps counting against the gateway budget', () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  }, 20_000);
  afterAll(async () => {
    await redis?.stop();
  });
  const counting = (runsFile: string): Servers => ({
    counter: {
      command: process.execPath,
      args: [COUNTING],
      env: { RUNS_FILE: runsFile },
      namespace: 'rc',
    },
  });
  const backends: [string, () => Record<string, unknown>][] = [
    ['memory', () => ({})],
    ['redis', () => ({ url: redis.url, keyPrefix: `cancel-${randomUUID()}` })],
  ];

  it.for(backends)(
    'perTool.maxCalls bounds the upstream runs (%s budget)',
    { timeout: 60_000 },
    async ([, backend]) => {
      const runsFile = join(folder, 'runs.jsonl');
      const client = await start(
        { ...backend(), perTool: { maxCalls: 3 } },
        [],
        counting(runsFile),
      );
      const lines = await raceCancels(client, runsFile, 353);
      const started = lines.filter((line) => line.event === 'start').length;
      expect(started).toBeGreaterThan(0);
      expect(started).toBeLessThanOrEqual(3);
    },
  );

  it('refunds a call cancelled before it was sent: it waited for the upstream connection', async () => {
    const runsFile = join(folder, 'runs.jsonl');
    const servers = counting(runsFile);
    const config = { perTool: { maxCalls: 2 } };
    // One call at a time on the upstream connection: the second waits for its turn.
    const client = await start(config, [], servers, { maxConcurrentCalls: 1 });
    const usage = client.budget as CallBudget;
    const first = client.callTool({ name: 'rc__work', arguments: { ms: 2_000 } });
    while (!(await runs(runsFile)).some((line) => line.event === 'start')) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const controller = new AbortController();
    const waiting = client
      .callTool({ name: 'rc__work', arguments: { ms: 1 } }, undefined, {
        signal: controller.signal,
      })
      .catch(() => undefined);
    while (usage.scopeUsage('tool:rc__work').calls < 2) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    controller.abort();
    await waiting;
    await first;
    // The cancelled call never left: it was refunded, so one more call fits in maxCalls 2.
    expect(usage.scopeUsage('tool:rc__work')).toEqual({ calls: 1, active: 0 });
    expect(text(await client.callTool({ name: 'rc__work', arguments: { ms: 1 } }))).toBe('done');
    expect((await runs(runsFile)).filter((line) => line.event === 'start')).toHaveLength(2);
  }, 30_000);

  it.for(backends)(
    'maxConcurrent bounds the runs in progress upstream (%s budget)',
    { timeout: 60_000 },
    async ([, backend]) => {
      // The hold (5 s) outlasts the longest run (120 ms) with a wide margin for a loaded machine,
      // so a cancelled call's slot is never reused while the upstream still runs it.
      const runsFile = join(folder, 'runs.jsonl');
      const client = await start(
        { ...backend(), maxConcurrent: 1, cancelHoldMs: 5_000 },
        [],
        counting(runsFile),
      );
      const lines = await raceCancels(client, runsFile, 357);
      expect(lines.some((line) => line.event === 'start')).toBe(true);
      expect(Math.max(...lines.map((line) => line.running))).toBeLessThanOrEqual(1);
    },
  );
});
