// Issue 35 item 3: a cancelled call is counted and keeps its concurrency slot while the upstream
// may still be running it. A real SDK v2 upstream counts its runs (it ignores cancellation, as an
// upstream that already started the work does); a bounded race loop cancels calls at random
// points through the gateway; the upstream's own count never exceeds maxCalls, nor its runs in
// progress maxConcurrent, with the memory and with the Redis budget.
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { AllowAllAuthorizer } from '@toolfence/tools';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { AuditLog } from '../src/gateway/audit-log.js';
import { gatewayBudget } from '../src/gateway/gateway-budget.js';
import { type GatewayBudgetSettings, parseGatewayConfig } from '../src/gateway/gateway-config.js';
import { McpGateway } from '../src/gateway/mcp-gateway.js';
import { PinStore } from '../src/gateway/pin-store.js';
import { type RedisServer, startRedis } from './fixtures/redis-server.js';

const UPSTREAM = fileURLToPath(new URL('./fixtures/run-counting-server.mjs', import.meta.url));

let redis: RedisServer;
let folder: string;
let runsFile: string;
const open: { close(): Promise<void> }[] = [];

beforeAll(async () => {
  redis = await startRedis();
}, 20_000);
afterAll(async () => {
  await redis?.stop();
});
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-budget-cancel-'));
  runsFile = join(folder, 'runs.jsonl');
});
afterEach(async () => {
  for (const item of open.splice(0).reverse()) await item.close().catch(() => undefined);
  await rm(folder, { recursive: true, force: true });
});

interface RunLine {
  readonly event: 'start' | 'end';
  readonly running: number;
}

async function runs(): Promise<RunLine[]> {
  const text = await readFile(runsFile, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as RunLine);
}

async function start(budget: Record<string, unknown>) {
  const config = parseGatewayConfig({
    mcpServers: {
      counter: {
        command: process.execPath,
        args: [UPSTREAM],
        env: { RUNS_FILE: runsFile },
        namespace: 'rc',
      },
    },
    gateway: { budget },
  });
  const built = await gatewayBudget(config.gateway.budget as GatewayBudgetSettings, (tool) =>
    tool.startsWith('rc__') ? 'counter' : undefined,
  );
  open.push(built);
  const gateway = new McpGateway({
    config,
    authorizer: new AllowAllAuthorizer(),
    pins: await PinStore.open(join(folder, 'toolfence.lock.json')),
    audit: new AuditLog(join(folder, 'audit.jsonl'), 1024 * 1024),
    budget: built.reserver,
  });
  open.push(gateway);
  await gateway.start();
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await gateway.connect(serverSide);
  const client = new Client({ name: 'cancel-client', version: '1.0.0' });
  await client.connect(clientSide);
  open.push(client);
  return client;
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
async function raceCancels(client: Client, seed: number): Promise<RunLine[]> {
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
    const lines = await runs();
    const started = lines.filter((line) => line.event === 'start').length;
    if (lines.length === 2 * started) return lines;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('the upstream runs did not end');
}

const backends: [string, () => Record<string, unknown>][] = [
  ['memory', () => ({})],
  ['redis', () => ({ url: redis.url, keyPrefix: `cancel-${randomUUID()}` })],
];

describe('a cancelled call keeps counting against the gateway budget', () => {
  it.for(backends)(
    'perTool.maxCalls bounds the upstream runs (%s budget)',
    { timeout: 60_000 },
    async ([, backend]) => {
      const client = await start({ ...backend(), perTool: { maxCalls: 3 } });
      const lines = await raceCancels(client, 353);
      const started = lines.filter((line) => line.event === 'start').length;
      expect(started).toBeGreaterThan(0);
      expect(started).toBeLessThanOrEqual(3);
    },
  );

  it.for(backends)(
    'maxConcurrent bounds the runs in progress upstream (%s budget)',
    { timeout: 60_000 },
    async ([, backend]) => {
      // The hold outlasts the longest run (120 ms), so a cancelled call's slot is never reused
      // while the upstream still runs it.
      const client = await start({ ...backend(), maxConcurrent: 1, cancelHoldMs: 1_000 });
      const lines = await raceCancels(client, 357);
      expect(lines.some((line) => line.event === 'start')).toBe(true);
      expect(Math.max(...lines.map((line) => line.running))).toBeLessThanOrEqual(1);
    },
  );
});
