import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface, type Interface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { refreshConnection } from '../src/index.js';
import { SqliteConnectionStore } from '../src/store/sqlite-connection-store.js';
import { type RotatingServer, startRotatingServer } from './fixtures/rotating-token-server.js';
import { stopProcess } from './fixtures/teardown.js';

const WORKER = fileURLToPath(new URL('./fixtures/refresh-worker.mjs', import.meta.url));
const DIST = fileURLToPath(new URL('../dist/index.js', import.meta.url));

interface Worker {
  readonly child: ChildProcessWithoutNullStreams;
  readonly lines: Interface;
  next(): Promise<string>;
}

function startWorker(path: string, key: Buffer, leaseMs: number): Worker {
  const child = spawn(process.execPath, [WORKER, path, key.toString('hex'), String(leaseMs)]);
  const lines = createInterface({ input: child.stdout });
  const queue: string[] = [];
  const waiting: ((line: string) => void)[] = [];
  lines.on('line', (line) => {
    const resolve = waiting.shift();
    if (resolve) resolve(line);
    else queue.push(line);
  });
  return {
    child,
    lines,
    next: () => {
      const line = queue.shift();
      if (line !== undefined) return Promise.resolve(line);
      return new Promise((resolve) => waiting.push(resolve));
    },
  };
}

let folder: string;
let server: RotatingServer;
let workers: Worker[] = [];
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'refresh-processes-'));
  server = await startRotatingServer();
});
afterEach(async () => {
  // Each worker has exited before what it holds (the store, its file) goes.
  await Promise.all(workers.map((worker) => stopProcess(worker.child, 'SIGKILL')));
  workers = [];
  await server.close();
  await rm(folder, { recursive: true, force: true });
});

async function seed(path: string, key: Buffer): Promise<SqliteConnectionStore> {
  const store = new SqliteConnectionStore({ path, key });
  await store.put({
    id: 'c',
    url: server.url,
    issuer: server.issuer,
    resource: server.url,
    clientId: 'client',
    tokenAuthMethod: 'none',
    accessToken: 'at-0',
    refreshToken: 'rt-0',
    expiresAt: Date.now() - 1000,
  });
  return store;
}

describe('refresh single-flight across processes on one SQLite store', () => {
  it('sends each refresh token once: 4 processes, 50 rounds, zero reuses', {
    timeout: 120_000,
  }, async () => {
    expect(existsSync(DIST)).toBe(true);
    const path = join(folder, 'store.db');
    const key = randomBytes(32);
    const store = await seed(path, key);
    workers = Array.from({ length: 4 }, () => startWorker(path, key, 30_000));
    for (let round = 1; round <= 50; round += 1) {
      for (const worker of workers) worker.child.stdin.write('go\n');
      const answers = await Promise.all(workers.map((worker) => worker.next()));
      // Every process got the one token of this round's single refresh.
      expect(answers).toEqual(workers.map(() => `token at-${round}`));
      await store.update('c', (current) => current && { ...current, expiresAt: Date.now() - 1000 });
    }
    expect(server.reuses()).toBe(0);
    expect(server.refreshes()).toBe(50);
    store.close();
  });

  it('lets another process refresh once a crashed holder lease expires', {
    timeout: 60_000,
  }, async () => {
    const path = join(folder, 'store.db');
    const key = randomBytes(32);
    const store = await seed(path, key);
    const holder = startWorker(path, key, 1000);
    const other = startWorker(path, key, 1000);
    workers = [holder, other];
    holder.child.stdin.write('hold\n');
    expect(await holder.next()).toBe('holding');
    holder.child.kill('SIGKILL');
    other.child.stdin.write('go\n');
    expect(await other.next()).toBe('token at-1');
    expect(server.reuses()).toBe(0);
    store.close();
  });
});

describe('a store record changed in the database file', () => {
  it.each([
    ['issuer', (attacker: RotatingServer) => attacker.issuer],
    ['resource', (attacker: RotatingServer) => attacker.url],
    ['client_id', () => 'attacker-client'],
    ['token_auth_method', () => 'client_secret_post'],
  ])(
    'refuses a changed %s before any request (no refresh token sent anywhere)',
    async (column, value) => {
      const attacker = await startRotatingServer();
      try {
        const path = join(folder, 'store.db');
        const key = randomBytes(32);
        const store = await seed(path, key);
        const raw = new Database(path);
        raw.prepare(`UPDATE connections SET ${column} = ? WHERE id = ?`).run(value(attacker), 'c');
        raw.close();
        await expect(refreshConnection(store, 'c', { allowNonPublic: true })).rejects.toMatchObject(
          {
            code: 'STORE_DECRYPTION_FAILED',
          },
        );
        expect(attacker.refreshes() + attacker.reuses()).toBe(0);
        expect(server.refreshes() + server.reuses()).toBe(0);
        store.close();
      } finally {
        await attacker.close();
      }
    },
  );
});
