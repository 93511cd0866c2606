// What shared state costs per call: a connection-store read (what a gateway does before each
// call to an OAuth server) on SQLite and on PostgreSQL against MemoryConnectionStore, and a
// RedisCallBudget reservation against the in-memory CallBudget. Starts its own servers on
// loopback (PostgreSQL via initdb into a temp folder, redis-server without persistence) and
// stops them; fails when their binaries are missing (`.ci/run` installs them).
//
//   npx tsx bench/store.bench.ts
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ConnectionRecord, MemoryConnectionStore } from '@toolfence/mcp-bridge';
import { PostgresConnectionStore } from '@toolfence/mcp-bridge/postgres-store';
import { SqliteConnectionStore } from '@toolfence/mcp-bridge/sqlite-store';
import { CallBudget, createToolContext } from '@toolfence/tools';
import { RedisCallBudget } from '@toolfence/tools/redis-budget';
import { startPostgres } from '../test/fixtures/postgres-server.js';
import {
  bench,
  type Contender,
  figure,
  interleave,
  pairedRatio,
  printTable,
  scaled,
} from './fixtures/harness.js';

const RECORD: ConnectionRecord = {
  id: 'linear',
  url: 'https://mcp.linear.example/mcp',
  issuer: 'https://auth.linear.example',
  resource: 'https://mcp.linear.example/mcp',
  clientId: 'client-1',
  tokenAuthMethod: 'none',
  accessToken: 'a'.repeat(800),
  refreshToken: 'r'.repeat(200),
  expiresAt: Date.now() + 3_600_000,
  scope: 'mcp:tools',
};

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

async function startRedis(): Promise<{ url: string; child: ChildProcess }> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const failed = once(child, 'error').then(([error]) => {
    throw new Error(`redis-server could not start (install Debian's redis-server): ${error}`);
  });
  let output = '';
  const ready = new Promise<void>((resolve) => {
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) resolve();
    });
  });
  await Promise.race([ready, failed]);
  return { url: `redis://127.0.0.1:${port}`, child };
}

/** Microseconds, for figures far below a millisecond. */
function us(ms: number): string {
  return Number.isFinite(ms) ? (ms * 1000).toFixed(1) : 'n/a';
}

const WARMUP = scaled(200, 5);
const ROUNDS = scaled(30, 2);
const PER_ROUND = scaled(200, 5);

const folder = await mkdtemp(join(tmpdir(), 'store-bench-'));
const postgres = await startPostgres();
const redis = await startRedis();
const key = randomBytes(32);
const memory = new MemoryConnectionStore();
const sqlite = new SqliteConnectionStore({ path: join(folder, 'store.db'), key });
const pg = await PostgresConnectionStore.open({
  connectionString: await postgres.createDatabase(),
  key,
});
const request = { toolName: 'search', args: {}, context: createToolContext({ runId: 'run-1' }) };
const limits = { maxCalls: 1_000_000_000, maxConcurrent: 1_000 };
const localBudget = new CallBudget({ perRun: limits });
const redisBudget = new RedisCallBudget({ url: redis.url, keyPrefix: 'bench', perRun: limits });
const started = performance.now();
try {
  for (const store of [memory, sqlite, pg]) await store.put(RECORD);
  for (const store of [memory, sqlite, pg]) {
    if ((await store.get('linear'))?.accessToken !== RECORD.accessToken) throw new Error('read');
  }
  const reads: Contender[] = [
    { name: 'memory', run: () => memory.get('linear') },
    { name: 'sqlite', run: () => sqlite.get('linear') },
    { name: 'postgres', run: () => pg.get('linear') },
  ];
  const budgets: Contender[] = [
    {
      name: 'CallBudget',
      run: async () => localBudget.reserve(request).settle(true),
    },
    {
      name: 'RedisCallBudget',
      run: async () => (await redisBudget.reserve(request)).settle(true),
    },
  ];
  const options = { warmup: WARMUP, rounds: ROUNDS, perRound: PER_ROUND };
  const readResults = await interleave(reads, options);
  const budgetResults = await interleave(budgets, options);
  const memoryMs = figure(readResults.get('memory'));
  const rows: string[][] = [];
  for (const name of ['sqlite', 'postgres'] as const) {
    const ms = figure(readResults.get(name));
    const paired = pairedRatio(readResults.get(name), readResults.get('memory'));
    rows.push([`store read: ${name}`, us(ms), us(memoryMs), paired.toFixed(1)]);
    bench({
      id: `mcp-bridge.store-read-${name}`,
      label: `connection-store read (decrypt + verify) on ${name === 'sqlite' ? 'SQLite' : 'PostgreSQL (loopback)'} vs MemoryConnectionStore`,
      ratio: paired,
      target: null,
      detail: `${name} ${us(ms)} µs vs memory ${us(memoryMs)} µs per read; ${WARMUP} warm-up reads each, ${ROUNDS} interleaved rounds x ${PER_ROUND}, median of round medians, paired ratio`,
    });
  }
  const localMs = figure(budgetResults.get('CallBudget'));
  const redisMs = figure(budgetResults.get('RedisCallBudget'));
  const budgetRatio = pairedRatio(
    budgetResults.get('RedisCallBudget'),
    budgetResults.get('CallBudget'),
  );
  rows.push(['budget reservation: Redis', us(redisMs), us(localMs), budgetRatio.toFixed(1)]);
  bench({
    id: 'mcp-bridge.budget-reserve-redis',
    label: 'RedisCallBudget reservation (one Lua script, loopback) vs in-memory CallBudget',
    ratio: budgetRatio,
    target: null,
    detail: `Redis ${us(redisMs)} µs vs in-memory ${us(localMs)} µs per reserve + settle; ${WARMUP} warm-up calls each, ${ROUNDS} interleaved rounds x ${PER_ROUND}, median of round medians, paired ratio`,
  });
  printTable(
    `Shared state per call: ${ROUNDS} interleaved rounds x ${PER_ROUND}, median of round medians (${((performance.now() - started) / 1000).toFixed(1)} s)`,
    ['operation', 'µs', 'in-memory µs', 'ratio'],
    rows,
  );
} finally {
  sqlite.close();
  await pg.close();
  await redisBudget.close();
  redis.child.kill('SIGKILL');
  await postgres.stop();
  await rm(folder, { recursive: true, force: true });
}
