// The stores that make a sealed approval single use across replicas, on a real Redis and a real
// PostgreSQL (started here): two replicas' stores presented the same approval at once spend it
// exactly once; an unreachable store fails closed with a typed error.
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalSpentStore } from '../src/gateway/approval-spent-store.js';
import { PostgresSpentApprovals } from '../src/gateway/postgres-spent-approvals.js';
import { RedisSpentApprovals } from '../src/gateway/redis-spent-approvals.js';
import { type PostgresServer, startPostgres } from './fixtures/postgres-server.js';
import { type RedisServer, startRedis } from './fixtures/redis-server.js';

let postgres: PostgresServer;
let redis: RedisServer;
let database: string;
const open: ApprovalSpentStore[] = [];
const clients: Redis[] = [];

beforeAll(async () => {
  [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
  database = await postgres.createDatabase();
}, 60_000);
afterAll(async () => {
  for (const store of open.splice(0)) await store.close();
  for (const client of clients.splice(0)) client.disconnect();
  await Promise.all([postgres?.stop(), redis?.stop()]);
}, 30_000);

const prefix = `test:${randomUUID()}`;
const stores: Record<string, () => Promise<ApprovalSpentStore>> = {
  redis: async () => {
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    clients.push(client);
    const store = new RedisSpentApprovals({ client, keyPrefix: prefix, timeoutMs: 2_000 });
    open.push(store);
    return store;
  },
  postgres: async () => {
    const store = await PostgresSpentApprovals.open({ connectionString: database });
    open.push(store);
    return store;
  },
};

describe.each(Object.keys(stores))('the %s spent-approval store', (kind) => {
  it('spends one approval exactly once when two replicas are presented it 20 times at once (10 rounds)', {
    timeout: 60_000,
  }, async () => {
    const [first, second] = await Promise.all([stores[kind]?.(), stores[kind]?.()]);
    for (let round = 0; round < 10; round += 1) {
      const id = randomUUID();
      const expiresAt = Date.now() + 60_000;
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, index) =>
          (index % 2 === 0 ? first : second)?.spend(id, expiresAt),
        ),
      );
      expect(answers.filter((answer) => answer === true)).toHaveLength(1);
    }
    expect(await first?.spend(randomUUID(), Date.now() + 1_000)).toBe(true);
  });
});

describe('spent-approval stores that cannot be reached', () => {
  it('Redis: a spend fails with GATEWAY_STATE within its timeout (the gateway then refuses)', async () => {
    const client = new Redis('redis://127.0.0.1:1', {
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      lazyConnect: true,
    });
    client.on('error', () => undefined);
    clients.push(client);
    const store = new RedisSpentApprovals({ client, keyPrefix: prefix, timeoutMs: 500 });
    await expect(store.spend('x', Date.now() + 1_000)).rejects.toMatchObject({
      code: 'GATEWAY_STATE',
    });
  });

  it('PostgreSQL: open fails with GATEWAY_STATE, not a hang', async () => {
    await expect(
      PostgresSpentApprovals.open({
        connectionString: 'postgres://postgres@127.0.0.1:1/none',
        statementTimeoutMs: 1_000,
      }),
    ).rejects.toMatchObject({ code: 'GATEWAY_STATE' });
  });
});
