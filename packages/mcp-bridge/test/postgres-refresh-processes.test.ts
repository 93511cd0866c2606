// Single-flight refresh across replicas on one PostgreSQL store: real processes, a real server
// (started here), a loopback token endpoint that rotates refresh tokens and refuses any reuse.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PostgresConnectionStore } from '../src/store/postgres-connection-store.js';
import { type PostgresServer, startPostgres } from './fixtures/postgres-server.js';
import { type RotatingServer, startRotatingServer } from './fixtures/rotating-token-server.js';
import { stopProcess } from './fixtures/teardown.js';

const WORKER = fileURLToPath(new URL('./fixtures/refresh-worker-postgres.mjs', import.meta.url));
const DIST = fileURLToPath(new URL('../dist/store/postgres-connection-store.js', import.meta.url));

interface Worker {
  readonly child: ChildProcessWithoutNullStreams;
  next(): Promise<string>;
}

function startWorker(schema: string, key: Buffer, leaseMs: number, leaseWaitMs: number): Worker {
  const child = spawn(process.execPath, [
    WORKER,
    url,
    schema,
    key.toString('hex'),
    String(leaseMs),
    String(leaseWaitMs),
  ]);
  const lines = createInterface({ input: child.stdout });
  const queue: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  lines.on('line', (line) => {
    const resolve = waiting.shift();
    if (resolve) resolve(line);
    else queue.push(line);
  });
  child.once('exit', (code, signal) => {
    for (const resolve of waiting.splice(0)) resolve(`exited ${code ?? signal}`);
  });
  return {
    child,
    next: () => {
      const line = queue.shift();
      if (line !== undefined) return Promise.resolve(line);
      return new Promise((resolve) => waiting.push(resolve));
    },
  };
}

let postgres: PostgresServer;
let url = '';
let tokens: RotatingServer;
let workers: Worker[] = [];
let store: PostgresConnectionStore | undefined;

beforeAll(async () => {
  postgres = await startPostgres();
  url = await postgres.createDatabase();
}, 60_000);
afterAll(async () => {
  await postgres?.stop();
}, 30_000);
beforeEach(async () => {
  tokens = await startRotatingServer();
});
afterEach(async () => {
  // Each worker has exited before what it holds (the store, its file) goes.
  await Promise.all(workers.map((worker) => stopProcess(worker.child, 'SIGKILL')));
  workers = [];
  await store?.close();
  store = undefined;
  await tokens.close();
});

async function seed(schema: string, key: Buffer): Promise<PostgresConnectionStore> {
  store = await PostgresConnectionStore.open({ connectionString: url, schema, key });
  await store.put({
    id: 'c',
    url: tokens.url,
    issuer: tokens.issuer,
    resource: tokens.url,
    clientId: 'client',
    tokenAuthMethod: 'none',
    accessToken: 'at-0',
    refreshToken: 'rt-0',
    expiresAt: Date.now() - 1000,
  });
  return store;
}

describe('refresh single-flight across processes on one PostgreSQL store', () => {
  it('sends each refresh token once: 4 processes, 50 rounds, zero reuses', {
    timeout: 180_000,
  }, async () => {
    expect(existsSync(DIST)).toBe(true);
    const schema = `race_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const key = randomBytes(32);
    const seeded = await seed(schema, key);
    workers = Array.from({ length: 4 }, () => startWorker(schema, key, 30_000, 30_000));
    expect(await Promise.all(workers.map((worker) => worker.next()))).toEqual(
      workers.map(() => 'ready'),
    );
    for (let round = 1; round <= 50; round += 1) {
      for (const worker of workers) worker.child.stdin.write('go\n');
      const answers = await Promise.all(workers.map((worker) => worker.next()));
      // Every process got the one token of this round's single refresh.
      expect(answers).toEqual(workers.map(() => `token at-${round}`));
      await seeded.update(
        'c',
        (current) => current && { ...current, expiresAt: Date.now() - 1000 },
      );
    }
    expect(tokens.reuses()).toBe(0);
    expect(tokens.refreshes()).toBe(50);
    const record = await seeded.get('c');
    expect(record?.refreshToken).toBe('rt-50');
  });

  it('releases a killed refresher lock: another process refreshes well within the lock timeout', {
    timeout: 60_000,
  }, async () => {
    const schema = `kill_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const key = randomBytes(32);
    await seed(schema, key);
    // A lease far longer than the test: only the dropped connection can free the lock.
    const holder = startWorker(schema, key, 600_000, 20_000);
    const other = startWorker(schema, key, 600_000, 20_000);
    workers = [holder, other];
    expect(await holder.next()).toBe('ready');
    expect(await other.next()).toBe('ready');
    holder.child.stdin.write('hold\n');
    expect(await holder.next()).toBe('holding');
    // While the holder lives, the other process waits for the lock.
    other.child.stdin.write('go\n');
    const answer = other.next();
    const early = await Promise.race([
      answer,
      new Promise((resolve) => setTimeout(() => resolve('still waiting'), 500)),
    ]);
    expect(early).toBe('still waiting');
    const killedAt = Date.now();
    holder.child.kill('SIGKILL');
    expect(await answer).toBe('token at-1');
    expect(Date.now() - killedAt).toBeLessThan(10_000);
    expect(tokens.reuses()).toBe(0);
    expect(tokens.refreshes()).toBe(1);
  });
});
