import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AllowAllAuthorizer,
  createToolContext,
  defineTool,
  ToolRegistry,
  textResult,
} from '../src/index.js';
import { RedisCallBudget } from '../src/policy/redis-call-budget.js';

const RACER = fileURLToPath(new URL('./fixtures/redis-budget-racer.mjs', import.meta.url));
const run = promisify(execFile);
let server: ChildProcess;
let url: string;
let redis: Redis;

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  const port = await freePort();
  // A real redis-server on loopback, no persistence (`.ci/run` installs redis-server).
  server = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    {
      stdio: 'ignore',
    },
  );
  url = `redis://127.0.0.1:${port}`;
  redis = new Redis(url, { maxRetriesPerRequest: 20 });
  redis.on('error', () => undefined);
  for (let attempt = 0; attempt < 100; attempt += 1) {
    try {
      if ((await redis.ping()) === 'PONG') break;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}, 20_000);

afterAll(async () => {
  redis?.disconnect();
  server?.kill('SIGKILL');
});

const context = createToolContext({ runId: 'run-1' });

/** Waits (bounded) until the counters at `key` show no call running. */
async function untilIdle(key: string): Promise<void> {
  for (let attempt = 0; attempt < 100; attempt += 1) {
    if ((await redis.hget(key, 'active')) === '0') return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}
const request = { toolName: 't', args: {}, context };

describe('RedisCallBudget against a real redis-server', () => {
  it('holds maxCalls and maxConcurrent per run and refunds a call that did not count, once', async () => {
    const budget = new RedisCallBudget({
      client: redis,
      keyPrefix: `t:${randomUUID()}`,
      perRun: { maxCalls: 2, maxConcurrent: 1 },
    });
    const first = await budget.reserve(request);
    await expect(budget.reserve(request)).rejects.toMatchObject({
      code: 'POLICY_BUDGET_EXCEEDED',
      details: { scope: 'run', limit: 'maxConcurrent', max: 1 },
    });
    first.settle(false); // refunded
    first.settle(false); // a second settle changes nothing
    await new Promise((resolve) => setTimeout(resolve, 50));
    (await budget.reserve(request)).settle(true);
    (await budget.reserve(request)).settle(true);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expect(budget.reserve(request)).rejects.toMatchObject({
      details: { limit: 'maxCalls', max: 2 },
    });
  });

  it('charges all scopes or none, and sets a TTL on every key', async () => {
    const prefix = `t:${randomUUID()}`;
    const budget = new RedisCallBudget({
      client: redis,
      keyPrefix: prefix,
      ttlMs: 60_000,
      perRun: { maxCalls: 10 },
      scopes: () => [{ key: 'tenant', limits: { maxCalls: 0 } }],
    });
    await expect(budget.reserve(request)).rejects.toMatchObject({
      details: { scope: 'scope', limit: 'maxCalls' },
    });
    expect(await redis.hget(`${prefix}:run:run-1`, 'calls')).toBeNull();
    const open = new RedisCallBudget({
      client: redis,
      keyPrefix: prefix,
      ttlMs: 60_000,
      perRun: { maxCalls: 10 },
    });
    (await open.reserve(request)).settle(true);
    const ttl = await redis.pttl(`${prefix}:run:run-1`);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('refuses a call through the registry when the shared budget is used up', async () => {
    const budget = new RedisCallBudget({
      client: redis,
      keyPrefix: `t:${randomUUID()}`,
      perRun: { maxCalls: 1 },
    });
    let runs = 0;
    const registry = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      budget,
      tools: [
        defineTool({
          name: 'count',
          description: 'counts',
          input: { type: 'object' },
          run: () => {
            runs += 1;
            return textResult('ok');
          },
        }),
      ],
    });
    await registry.invoke('count', {}, context);
    await expect(registry.invoke('count', {}, context)).rejects.toMatchObject({
      code: 'POLICY_BUDGET_EXCEEDED',
    });
    expect(runs).toBe(1);
    await registry.close();
  });

  it('holds exactly under 8 processes racing for the last units (no over-spend)', async () => {
    const prefix = `t:${randomUUID()}`;
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        run(process.execPath, [RACER, url, prefix, '10'], { timeout: 30_000 }),
      ),
    );
    const granted = results.reduce((sum, result) => sum + Number(result.stdout), 0);
    expect(granted).toBe(25);
    expect(await redis.hget(`${prefix}:scope:tenant-a`, 'calls')).toBe('25');
  }, 60_000);

  it('fails closed when Redis cannot be reached, or lets calls through with onUnavailable: allow', async () => {
    const port = await freePort();
    const closed = new RedisCallBudget({
      url: `redis://127.0.0.1:${port}`,
      perRun: { maxCalls: 5 },
      timeoutMs: 300,
    });
    await expect(closed.reserve(request)).rejects.toMatchObject({
      code: 'POLICY_BUDGET_EXCEEDED',
      details: { reason: 'unavailable' },
    });
    await closed.close();
    const open = new RedisCallBudget({
      url: `redis://127.0.0.1:${port}`,
      perRun: { maxCalls: 5 },
      timeoutMs: 300,
      onUnavailable: 'allow',
    });
    await expect(open.reserve(request)).resolves.toBeDefined();
    await open.close();
  }, 20_000);

  // Issue 35 item 3: Redis applied a reservation after the budget had given up on it (a stall
  // longer than timeoutMs); the reservation is released by its id, so no slot stays taken.
  it('releases the reservations Redis applies late after a stall longer than timeoutMs', async () => {
    const prefix = `t:${randomUUID()}`;
    const client = new Redis(url, { maxRetriesPerRequest: 20 });
    client.on('error', () => undefined);
    await client.ping();
    const budget = new RedisCallBudget({
      client,
      keyPrefix: prefix,
      timeoutMs: 200,
      scopes: () => [{ key: 'gateway', limits: { maxCalls: 10, maxConcurrent: 2 } }],
    });
    const counters = `${prefix}:scope:gateway`;
    server.kill('SIGSTOP');
    let refused: PromiseSettledResult<unknown>[];
    try {
      refused = await Promise.allSettled([budget.reserve(request), budget.reserve(request)]);
      // The stall goes on well past timeoutMs, then Redis runs everything it was sent.
      await new Promise((resolve) => setTimeout(resolve, 400));
    } finally {
      server.kill('SIGCONT');
    }
    expect(refused.map((outcome) => outcome.status)).toEqual(['rejected', 'rejected']);
    await untilIdle(counters);
    expect(await redis.hgetall(counters)).toEqual({ calls: '0', active: '0' });
    // No reservation is left held (a retried release leaves a 'released' mark), and both slots
    // are free again.
    for (const key of await redis.keys(`${prefix}:reservation:*`)) {
      expect(await redis.get(key)).toBe('released');
    }
    const both = [await budget.reserve(request), await budget.reserve(request)];
    for (const reservation of both) reservation.settle(true);
    await budget.close();
    client.disconnect();
  }, 20_000);

  it('keeps the slot of a call that may still run for cancelHoldMs, and frees it at close', async () => {
    const prefix = `t:${randomUUID()}`;
    const counters = `${prefix}:run:run-1`;
    const held = new RedisCallBudget({
      client: redis,
      keyPrefix: prefix,
      cancelHoldMs: 60_000,
      perRun: { maxConcurrent: 1 },
    });
    (await held.reserve(request)).settle(true, true);
    await expect(held.reserve(request)).rejects.toMatchObject({
      details: { limit: 'maxConcurrent', max: 1 },
    });
    await held.close();
    expect(await redis.hgetall(counters)).toEqual({ calls: '1', active: '0' });
    const short = new RedisCallBudget({
      client: redis,
      keyPrefix: prefix,
      cancelHoldMs: 100,
      perRun: { maxConcurrent: 1 },
    });
    (await short.reserve(request)).settle(true, true);
    await untilIdle(counters);
    expect(await redis.hgetall(counters)).toEqual({ calls: '2', active: '0' });
  });

  it.each([
    ['neither client nor url', {}],
    ['both client and url', { client: { eval: async () => 0 }, url: 'redis://127.0.0.1:1' }],
    ['a non-redis URL', { url: 'http://127.0.0.1' }],
    ['a misspelled key', { url: 'redis://127.0.0.1:1', perrun: {} }],
    ['a bad onUnavailable', { url: 'redis://127.0.0.1:1', onUnavailable: 'maybe' }],
    ['a negative cancelHoldMs', { url: 'redis://127.0.0.1:1', cancelHoldMs: -1 }],
  ])('refuses %s', (_label, options) => {
    expect(() => new RedisCallBudget(options as never)).toThrow();
  });
});
