// Two `toolfence-mcp serve --http` replicas on one PostgreSQL (OAuth connection store and pins)
// and one Redis (call budget), behind a round-robin HTTP proxy written here. The downstream client
// speaks MCP 2026-07-28 (stateless, so no session affinity is needed); the upstream is an
// OAuth-protected MCP server whose token endpoint counts refreshes and refuses reused refresh
// tokens. Everything runs on loopback; the servers are started by the tests.
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { McpClient } from '../src/client/mcp-client.js';
import { digestOf } from '../src/gateway/canonical-json.js';
import { PostgresConnectionStore } from '../src/store/postgres-connection-store.js';
import { SqliteConnectionStore } from '../src/store/sqlite-connection-store.js';
import {
  jsonLines,
  type Replica,
  startReplica as startReplicaIn,
  stopReplicas,
} from './fixtures/gateway-replica.js';
import { type PostgresServer, startPostgres } from './fixtures/postgres-server.js';
import {
  type ProtectedMcpServer,
  startProtectedMcpServer,
} from './fixtures/protected-mcp-server.js';
import { type RedisServer, startRedis } from './fixtures/redis-server.js';
import {
  type RoundRobinProxy,
  type Routed,
  startRoundRobinProxy,
} from './fixtures/round-robin-proxy.js';
import { allowLoopback } from './helpers.js';

const CLI = fileURLToPath(new URL('../dist/bin/main.js', import.meta.url));
const run = promisify(execFile);
const KEY = randomBytes(32).toString('hex');
const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', STORE_KEY: KEY };

let postgres: PostgresServer;
let redis: RedisServer;
let upstream: ProtectedMcpServer;
let database: string;
let folder: string;
let proxy: RoundRobinProxy | undefined;
const replicas: Replica[] = [];
const clients: McpClient[] = [];

beforeAll(async () => {
  expect(existsSync(CLI)).toBe(true);
  [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
}, 60_000);
afterAll(async () => {
  await Promise.all([postgres?.stop(), redis?.stop()]);
}, 30_000);
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-replicas-'));
  upstream = await startProtectedMcpServer();
  database = await postgres.createDatabase();
  // The connection an operator authorized once: its access token has expired.
  const store = await PostgresConnectionStore.open({
    connectionString: database,
    key: Buffer.from(KEY, 'hex'),
  });
  await store.put({
    id: 'up',
    url: upstream.url,
    issuer: upstream.issuer,
    resource: upstream.url,
    clientId: 'gateway',
    tokenAuthMethod: 'none',
    accessToken: 'at-0',
    refreshToken: 'rt-0',
    expiresAt: Date.now() - 1_000,
  });
  await store.close();
}, 30_000);
afterEach(async () => {
  for (const client of clients.splice(0)) await client.close().catch(() => undefined);
  await stopReplicas(replicas);
  await proxy?.close();
  proxy = undefined;
  await upstream.close();
  await rm(folder, { recursive: true, force: true });
}, 30_000);

/** Starts one replica with its own config folder (and audit log) on the shared back ends. */
async function startReplica(
  name: string,
  budget?: Record<string, unknown>,
  settings: Record<string, unknown> = {},
): Promise<Replica> {
  const replica = await startReplicaIn({
    home: join(folder, name),
    policy: { kind: 'rules', rules: [], default: 'allow' },
    config: {
      mcpServers: { up: { url: upstream.url, oauth: { connectionId: 'up' } } },
      gateway: {
        store: database,
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a config variable the gateway expands
        storeKey: '${STORE_KEY}',
        pins: database,
        audit: 'audit.jsonl',
        ...(budget === undefined ? {} : { budget }),
        ...settings,
      },
    },
    env: { STORE_KEY: KEY },
    upstream: 'up',
  });
  replicas.push(replica);
  return replica;
}

/** The round-robin proxy in front of `targets`, closed after the test. */
async function startProxy(targets: readonly string[]): Promise<{ url: string; routed: Routed[] }> {
  proxy = await startRoundRobinProxy(targets);
  return proxy;
}

async function connect(url: string): Promise<McpClient> {
  const client = new McpClient({ url, allowNonPublic: allowLoopback });
  clients.push(client);
  await client.connect();
  expect(client.protocolVersion).toBe('2026-07-28');
  return client;
}

/** Each call's last audit line (a call that ran also has a `started` line before it). */
async function auditOf(replica: Replica): Promise<{ argumentsDigest: string; outcome: string }[]> {
  return (await jsonLines<{ argumentsDigest: string; outcome: string }>(replica.audit)).filter(
    (line) => line.outcome !== 'started',
  );
}

const textOf = (result: { content: readonly unknown[] }): string =>
  result.content.map((block) => (block as { text?: string }).text ?? '').join('');

/** Sends SIGHUP and waits until the replica reports the reload. */
async function reload(replica: Replica): Promise<void> {
  const before = (replica.stderr().match(/reloaded \(SIGHUP\)/g) ?? []).length;
  replica.child.kill('SIGHUP');
  const deadline = Date.now() + 20_000;
  while ((replica.stderr().match(/reloaded \(SIGHUP\)/g) ?? []).length === before) {
    if (Date.now() > deadline) throw new Error(`no reload: ${replica.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('gateway replicas on one PostgreSQL and one Redis', () => {
  it('alternates a stateless client between the replicas, and refreshes an expired token once across both', {
    timeout: 120_000,
  }, async () => {
    // Both replicas list the upstream at start, at once, with an expired token: one refresh.
    const pair = await Promise.all([startReplica('a'), startReplica('b')]);
    expect(upstream.refreshes()).toBe(1);
    const { url, routed } = await startProxy(pair.map((replica) => replica.url));
    const client = await connect(url);
    for (let index = 0; index < 6; index += 1) {
      const result = await client.callTool('up__echo', { text: `call-${index}` });
      expect(textOf(result)).toBe(`echo call-${index}`);
    }
    const calls = routed.filter((entry) => entry.method === 'tools/call');
    expect(calls).toHaveLength(6);
    // Consecutive calls went to different replicas, and each replica recorded exactly its own.
    for (let index = 1; index < calls.length; index += 1) {
      expect(calls[index]?.target).not.toBe(calls[index - 1]?.target);
    }
    for (const [target, replica] of pair.entries()) {
      const expected = calls
        .filter((entry) => entry.target === target)
        .map((entry) => digestOf(entry.args));
      expect(expected).toHaveLength(3);
      expect((await auditOf(replica)).map((line) => line.argumentsDigest)).toEqual(expected);
    }
    // The upstream now refuses every token it issued: both replicas get a 401 at once, and one
    // refresh serves both (the other replica finds the rotated token in the shared store). Five
    // rounds, six concurrent calls each.
    for (let round = 1; round <= 5; round += 1) {
      upstream.expireTokens();
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, index) =>
          client.callTool('up__echo', { text: `round-${round}-${index}` }),
        ),
      );
      expect(results.map(textOf).sort()).toEqual(
        Array.from({ length: 6 }, (_, index) => `echo round-${round}-${index}`).sort(),
      );
      const after = routed.filter((entry) => entry.method === 'tools/call').slice(-6);
      expect(after.filter((entry) => entry.target === 0)).toHaveLength(3);
      expect(after.filter((entry) => entry.target === 1)).toHaveLength(3);
      expect(upstream.refreshes()).toBe(1 + round);
    }
    expect(upstream.reuses()).toBe(0);
    expect(upstream.calls).toHaveLength(36);
  });

  it('shares one budget: 16 calls at once through both replicas, exactly 5 run', {
    timeout: 120_000,
  }, async () => {
    const budget = { url: redis.url, keyPrefix: `test:${randomUUID()}`, maxCalls: 5 };
    const pair = await Promise.all([startReplica('a', budget), startReplica('b', budget)]);
    const { url, routed } = await startProxy(pair.map((replica) => replica.url));
    const client = await connect(url);
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, index) =>
        client.callTool('up__echo', { text: `budget-${index}` }),
      ),
    );
    const ran = results.filter((result) => result.isError !== true);
    const refused = results.filter((result) => result.isError === true);
    expect(ran).toHaveLength(5);
    expect(refused).toHaveLength(11);
    for (const result of refused) {
      expect(textOf(result)).toBe(
        "The call to up__echo is over the gateway's call budget (maxCalls 5 used up), so it did not run.",
      );
    }
    expect(upstream.calls).toHaveLength(5);
    const calls = routed.filter((entry) => entry.method === 'tools/call');
    // Each replica alone would have run 5 of its 8 (a memory budget): together they ran 5.
    expect(calls.filter((entry) => entry.target === 0)).toHaveLength(8);
    expect(calls.filter((entry) => entry.target === 1)).toHaveLength(8);
    const outcomes = [
      ...(await auditOf(pair[0] as Replica)),
      ...(await auditOf(pair[1] as Replica)),
    ]
      .map((line) => line.outcome)
      .sort();
    expect(outcomes).toEqual([
      ...Array.from({ length: 5 }, () => 'ok'),
      ...Array.from({ length: 11 }, () => 'over-budget'),
    ]);
    // Later calls on either replica are refused too: the counter is shared, not per process.
    for (let index = 0; index < 2; index += 1) {
      const late = await client.callTool('up__echo', { text: `late-${index}` });
      expect(late.isError).toBe(true);
    }
    expect(upstream.calls).toHaveLength(5);
  });

  it('shares pins: what one replica pinned the other accepts, and a poisoned change is hidden on both until accepted', {
    timeout: 120_000,
  }, async () => {
    // Replica a pins the upstream's tools at first sight; b, started later, finds the same pins.
    const first = await startReplica('a');
    const second = await startReplica('b');
    expect(second.stderr()).toContain('up: ready, 1 tool(s)');
    expect(second.stderr()).not.toContain('hidden');
    const { url } = await startProxy([first.url, second.url]);
    const client = await connect(url);
    const names = async (): Promise<string[]> =>
      (await client.tools({ refresh: true })).map((tool) => tool.name);
    expect(await names()).toEqual(['up__echo']);
    expect(await names()).toEqual(['up__echo']);

    upstream.poison();
    await Promise.all([reload(first), reload(second)]);
    // Listed through the proxy twice: once by each replica, neither offers the changed tool.
    expect(await names()).toEqual([]);
    expect(await names()).toEqual([]);
    for (let index = 0; index < 2; index += 1) {
      const refused = await client
        .callTool('up__echo', { text: `poisoned-${index}` })
        .catch((error: unknown) => ({ isError: true, content: [], thrown: error }));
      expect(refused.isError).toBe(true);
    }
    expect(upstream.calls).toEqual([]);

    // `pin --show` on either replica's config reads the shared table; `--accept` on the other.
    const shown = await run(process.execPath, [CLI, 'pin', '--show', '--config', first.config], {
      env: ENV,
    });
    const token = /(up__echo@sha256:[0-9a-f]{64}) \(server up\): definition-changed/.exec(
      shown.stdout,
    )?.[1];
    expect(token).toBeDefined();
    expect(shown.stdout).toContain('~/.ssh/id_rsa');
    await run(
      process.execPath,
      [CLI, 'pin', '--accept', token as string, '--config', second.config],
      { env: ENV },
    );
    await Promise.all([reload(first), reload(second)]);
    expect(await names()).toEqual(['up__echo']);
    expect(await names()).toEqual(['up__echo']);
    for (let index = 0; index < 2; index += 1) {
      expect(textOf(await client.callTool('up__echo', { text: `accepted-${index}` }))).toBe(
        `echo accepted-${index}`,
      );
    }
  });

  it('reaches an OAuth server through a sqlite: store beside the config, with file pins', {
    timeout: 60_000,
  }, async () => {
    await mkdir(join(folder, 'solo'));
    const local = new SqliteConnectionStore({
      path: join(folder, 'solo', 'store.db'),
      key: Buffer.from(KEY, 'hex'),
    });
    await local.put({
      id: 'up',
      url: upstream.url,
      issuer: upstream.issuer,
      resource: upstream.url,
      clientId: 'gateway',
      tokenAuthMethod: 'none',
      accessToken: 'at-0',
      refreshToken: 'rt-0',
      expiresAt: Date.now() - 1_000,
    });
    local.close();
    const solo = await startReplica('solo-gateway', undefined, {
      store: 'sqlite:../solo/store.db',
      pins: 'toolfence.lock.json',
    });
    const client = await connect(solo.url);
    expect(textOf(await client.callTool('up__echo', { text: 'solo' }))).toBe('echo solo');
    expect(upstream.refreshes()).toBe(1);
    expect(existsSync(join(folder, 'solo-gateway', 'toolfence.lock.json'))).toBe(true);
  });
});
