// The shared connection-store suite on PostgresConnectionStore, against a real PostgreSQL server
// this file starts (initdb into a temp folder, 127.0.0.1, a free port) with a database of its
// own and a fresh schema per test; then the PostgreSQL-only behaviour: options, limits, TLS
// mode, an unreachable server, concurrent migration, a missing `pg`.
import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { type AddressInfo, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { connectionStoreFromUrl } from '../src/store/connection-store-from-url.js';
import {
  POSTGRES_STORE_SCHEMA_VERSION,
  PostgresConnectionStore,
  type PostgresConnectionStoreOptions,
} from '../src/store/postgres-connection-store.js';
import { rowOfRecord, sealSecrets, storeKeyOf } from '../src/store/record-cipher.js';
import { SqliteConnectionStore } from '../src/store/sqlite-connection-store.js';
import { describeConnectionStore, FULL, withoutUpdatedAt } from './connection-store-suite.js';
import { type PostgresServer, startPostgres } from './fixtures/postgres-server.js';

let server: PostgresServer;
let url = '';
let admin: pg.Client;
let schema = '';

beforeAll(async () => {
  server = await startPostgres();
  url = await server.createDatabase();
  admin = new pg.Client({ connectionString: url });
  await admin.connect();
}, 60_000);

afterAll(async () => {
  await admin?.end();
  await server?.stop();
}, 30_000);

const table = (): string => `"${schema}"."toolfence_connections"`;

describeConnectionStore({
  name: 'PostgresConnectionStore',
  async fresh() {
    schema = `s_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
  },
  async open({ key, previousKeys, leaseWaitMs, extra }) {
    return PostgresConnectionStore.open({
      connectionString: url,
      key,
      schema,
      ...(previousKeys === undefined ? {} : { previousKeys }),
      ...(leaseWaitMs === undefined ? {} : { leaseWaitMs }),
      ...extra,
    });
  },
  async setColumn(id, column, value) {
    await admin.query(`UPDATE ${table()} SET ${column} = $1 WHERE id = $2`, [value, id]);
  },
  async readSecrets(id) {
    const result = await admin.query(`SELECT secrets FROM ${table()} WHERE id = $1`, [id]);
    return result.rows[0].secrets as Buffer;
  },
  async writeSecrets(id, blob) {
    await admin.query(`UPDATE ${table()} SET secrets = $1 WHERE id = $2`, [blob, id]);
  },
  async dump() {
    const result = await admin.query(`SELECT * FROM ${table()}`);
    return result.rows
      .map((row) =>
        Object.values(row)
          .map((value) => (Buffer.isBuffer(value) ? value.toString('latin1') : String(value)))
          .join('\u0000'),
      )
      .join('\n');
  },
  async setSchemaVersion(version) {
    await admin.query(`UPDATE "${schema}"."toolfence_store_version" SET version = $1`, [version]);
  },
  async dispose() {
    await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  },
});

describe('PostgresConnectionStore on a real server', () => {
  const stores: PostgresConnectionStore[] = [];
  const open = async (
    options: Partial<PostgresConnectionStoreOptions> = {},
  ): Promise<PostgresConnectionStore> => {
    const store = await PostgresConnectionStore.open({
      connectionString: url,
      key: randomBytes(32),
      schema: `s_${randomUUID().replaceAll('-', '').slice(0, 12)}`,
      ...options,
    });
    stores.push(store);
    return store;
  };
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });

  it.each([
    ['an unknown key', { poolSzie: 2 }, /unknown option "poolSzie"/],
    ['a non-postgres URL', { connectionString: 'mysql://u:p@db/x' }, /postgres:\/\//],
    ['a malformed URL', { connectionString: 'postgres://[bad' }, /postgres:\/\//],
    ['sslmode in the URL', { connectionString: 'postgres://h/db?sslmode=disable' }, /sslMode/],
    ['pool size 0', { poolSize: 0 }, /poolSize/],
    ['pool size 101', { poolSize: 101 }, /poolSize/],
    ['a fractional statement timeout', { statementTimeoutMs: 1.5 }, /statementTimeoutMs/],
    ['a zero lease time', { leaseMs: 0 }, /leaseMs/],
    ['a NaN lease wait', { leaseWaitMs: Number.NaN }, /leaseWaitMs/],
    ['a lease wait over a day', { leaseWaitMs: 86_400_001 }, /leaseWaitMs/],
    ['a zero connect timeout', { connectTimeoutMs: 0 }, /connectTimeoutMs/],
    ['an unknown SSL mode', { sslMode: 'prefer' }, /sslMode/],
    ['a non-string CA', { sslCa: 1 }, /sslCa/],
    ['a quoted schema', { schema: 'x"; DROP TABLE y; --' }, /schema/],
    ['an upper-case schema', { schema: 'Tenant' }, /schema/],
    ['a table prefix with a dot', { tablePrefix: 'a.b' }, /tablePrefix/],
  ])('refuses %s (STORE_RECORD_INVALID, before connecting)', (_name, options, message) => {
    expect(
      () =>
        new PostgresConnectionStore({
          connectionString: 'postgres://user:hunter2@127.0.0.1:1/db',
          key: randomBytes(32),
          ...(options as object),
        }),
    ).toThrow(
      expect.objectContaining({
        code: 'STORE_RECORD_INVALID',
        message: expect.stringMatching(message),
      }),
    );
  });

  it('fails with STORE_UNAVAILABLE, naming no password, when the server cannot be reached', async () => {
    const error = await PostgresConnectionStore.open({
      connectionString: `postgres://user:hunter2@127.0.0.1:${server.port + 1}/db`,
      key: randomBytes(32),
      connectTimeoutMs: 2_000,
    }).catch((caught: unknown) => caught);
    expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(JSON.stringify(error)).not.toContain('hunter2');
    expect((error as Error).message).not.toContain('hunter2');
  });

  it("applies sslMode: 'require' (a server without TLS is refused) and defaults to no TLS on loopback", async () => {
    await expect(open({ sslMode: 'require', connectTimeoutMs: 2_000 })).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE',
    });
    const store = await open();
    await store.put(FULL);
    expect((await store.get('linear'))?.accessToken).toBe(FULL.accessToken);
  });

  it('defaults to verify-full TLS for a host that is not loopback by name (refused by this TLS-less server)', async () => {
    // ::ffff:127.0.0.1 reaches the loopback server, but only localhost, 127.0.0.0/8 and ::1
    // count as loopback for the default: anything else must use TLS unless told otherwise.
    const mapped = url.replace('127.0.0.1', '[::ffff:127.0.0.1]');
    await expect(
      PostgresConnectionStore.open({
        connectionString: mapped,
        key: randomBytes(32),
        connectTimeoutMs: 2_000,
      }),
    ).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    const plain = await open({ connectionString: mapped, sslMode: 'disable' });
    await plain.put(FULL);
    expect(await plain.list()).toEqual(['linear']);
  });

  it('gives up connecting after connectTimeoutMs (a server that never answers)', async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const started = Date.now();
      await expect(
        PostgresConnectionStore.open({
          connectionString: `postgres://user:hunter2@127.0.0.1:${port}/db`,
          key: randomBytes(32),
          connectTimeoutMs: 300,
        }),
      ).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      silent.close();
    }
  });

  it('keeps stores with other schemas or table prefixes apart, under the stated table names', async () => {
    const shared = `s_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const key = randomBytes(32);
    const first = await open({ schema: shared, key });
    const second = await open({ schema: shared, tablePrefix: 'tenant_b_', key });
    await first.put(FULL);
    expect(await second.list()).toEqual([]);
    const tables = await admin.query(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
      [shared],
    );
    expect(tables.rows.map((row) => row.table_name)).toEqual([
      'tenant_b_connections',
      'tenant_b_store_version',
      'toolfence_connections',
      'toolfence_store_version',
    ]);
    const version = await admin.query(`SELECT version FROM "${shared}".toolfence_store_version`);
    expect(version.rows).toEqual([{ version: POSTGRES_STORE_SCHEMA_VERSION }]);
  });

  it('opens a migrated store as a user with only USAGE on the schema and DML on the two tables', async () => {
    const shared = `s_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const role = `app_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const key = randomBytes(32);
    await (await open({ schema: shared, key })).put(FULL);
    await admin.query(`CREATE ROLE ${role} LOGIN`);
    try {
      await admin.query(`GRANT USAGE ON SCHEMA ${shared} TO ${role}`);
      await admin.query(
        `GRANT SELECT, INSERT, UPDATE, DELETE ON ${shared}.toolfence_connections, ${shared}.toolfence_store_version TO ${role}`,
      );
      const limited = await open({
        connectionString: url.replace('postgres@', `${role}@`),
        schema: shared,
        key,
      });
      await limited.update('linear', (current) => current && { ...current, accessToken: 'next' });
      expect((await limited.get('linear'))?.accessToken).toBe('next');
      await expect(limited.singleFlight('refresh:linear', async () => 'ran')).resolves.toBe('ran');
      await limited.close();
    } finally {
      await admin.query(`DROP OWNED BY ${role}`);
      await admin.query(`DROP ROLE ${role}`);
    }
  });

  it('a running replica without the new key refuses rotated records (STORE_KEY_INVALID), one with it reads them', async () => {
    const shared = `s_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const stale = await open({ schema: shared, key: oldKey });
    await stale.put(FULL);
    const rotating = await open({ schema: shared, key: newKey, previousKeys: [oldKey] });
    const ready = await open({ schema: shared, key: oldKey, previousKeys: [newKey] });
    expect(await rotating.rotateKey()).toBe(1);
    await expect(stale.get('linear')).rejects.toMatchObject({ code: 'STORE_KEY_INVALID' });
    expect((await ready.get('linear'))?.accessToken).toBe(FULL.accessToken);
  });

  it('migrates once when several replicas open a fresh schema at the same time', async () => {
    const shared = `s_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const key = randomBytes(32);
    const opened = await Promise.all(
      Array.from({ length: 6 }, () => open({ schema: shared, key })),
    );
    await opened[0]?.put(FULL);
    expect(withoutUpdatedAt(await opened[5]?.get('linear'))).toEqual(FULL);
  });

  it('holds at most poolSize connections for reads and writes', async () => {
    const application = 'toolfence-connection-store';
    const store = await open({ poolSize: 2 });
    await store.put(FULL);
    const peaks: number[] = [];
    const reads = Promise.all(Array.from({ length: 40 }, () => store.get('linear')));
    for (let sample = 0; sample < 5; sample += 1) {
      const result = await admin.query(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
        [application],
      );
      peaks.push(result.rows[0].n as number);
    }
    await reads;
    const after = await admin.query(
      'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
      [application],
    );
    expect(Math.max(...peaks, after.rows[0].n as number)).toBeLessThanOrEqual(2);
    expect(after.rows[0].n).toBeGreaterThanOrEqual(1);
  });

  it('gives up on a row held elsewhere after statementTimeoutMs (STORE_UNAVAILABLE), keeping the token', async () => {
    const own = `s_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const store = await open({ schema: own, statementTimeoutMs: 300 });
    await store.put(FULL);
    // Another session holds the row (what a stuck writer elsewhere would do).
    const blocker = new pg.Client({ connectionString: url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(
        `SELECT id FROM "${own}".toolfence_connections WHERE id = $1 FOR UPDATE`,
        ['linear'],
      );
      const started = Date.now();
      await expect(
        store.update('linear', (current) => current && { ...current, accessToken: 'new' }),
      ).rejects.toMatchObject({
        code: 'STORE_UNAVAILABLE',
        details: { sqlState: expect.stringMatching(/^(55P03|57014)$/) },
      });
      expect(Date.now() - started).toBeLessThan(3_000);
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      await blocker.end();
    }
    expect((await store.get('linear'))?.accessToken).toBe(FULL.accessToken);
  });

  it('gives up waiting for a free pooled connection after connectTimeoutMs (STORE_UNAVAILABLE)', async () => {
    const own = `s_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const store = await open({ schema: own, poolSize: 1, connectTimeoutMs: 300 });
    await store.put(FULL);
    const blocker = new pg.Client({ connectionString: url });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(
        `SELECT id FROM "${own}".toolfence_connections WHERE id = $1 FOR UPDATE`,
        ['linear'],
      );
      // The only pooled connection waits for the row (up to statementTimeoutMs, 5 s) ...
      const stuck = store.update('linear', (current) => current).catch((error: unknown) => error);
      await new Promise((resolve) => setTimeout(resolve, 100));
      // ... so a read cannot get a connection and gives up after connectTimeoutMs.
      const started = Date.now();
      await expect(store.get('linear')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(Date.now() - started).toBeLessThan(2_500);
      await blocker.query('ROLLBACK');
      expect(await stuck).toMatchObject({ id: 'linear' });
    } finally {
      await blocker.query('ROLLBACK').catch(() => undefined);
      await blocker.end();
    }
  });

  it('ends a hung holder after leaseMs, so another replica takes the lock before its leaseWaitMs', async () => {
    const shared = `s_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const key = randomBytes(32);
    const hung = await open({ schema: shared, key, leaseMs: 300 });
    const waiter = await open({ schema: shared, key, leaseWaitMs: 5_000 });
    await new Promise<void>((started) => {
      void hung.singleFlight('refresh:x', () => {
        started();
        return new Promise(() => undefined);
      });
    });
    const started = Date.now();
    await expect(waiter.singleFlight('refresh:x', async () => 'mine')).resolves.toBe('mine');
    const waited = Date.now() - started;
    expect(waited).toBeGreaterThanOrEqual(150);
    expect(waited).toBeLessThan(4_000);
  });

  it('writes no secret to the server data folder', async () => {
    const store = await open();
    await store.put({ ...FULL, accessToken: `SECRET-${randomUUID()}` });
    await admin.query('CHECKPOINT');
    const token = (await store.get('linear'))?.accessToken as string;
    const files: string[] = [];
    const walk = async (folder: string): Promise<void> => {
      for (const entry of await readdir(folder, { withFileTypes: true })) {
        const path = join(folder, entry.name);
        if (entry.isDirectory()) await walk(path);
        else if (entry.isFile() && (await stat(path)).size < 64 * 1024 * 1024) files.push(path);
      }
    };
    await walk(join(server.folder, 'data'));
    let hostSeen = false;
    for (const file of files) {
      const text = (await readFile(file)).toString('latin1');
      expect(text.includes(token), file).toBe(false);
      hostSeen ||= text.includes('mcp.linear.example');
    }
    expect(hostSeen).toBe(true);
  });

  it('names pg and the install command when pg is not installed (STORE_DRIVER_MISSING)', async () => {
    const hooks = `data:text/javascript,${encodeURIComponent(
      "export async function resolve(specifier, context, next) { if (specifier === 'pg') { const error = new Error(\"Cannot find package 'pg'\"); error.code = 'ERR_MODULE_NOT_FOUND'; throw error; } return next(specifier, context); }",
    )}`;
    const register = `data:text/javascript,${encodeURIComponent(
      `import { register } from 'node:module'; register(${JSON.stringify(hooks)});`,
    )}`;
    const entry = fileURLToPath(
      new URL('../dist/store/postgres-connection-store.js', import.meta.url),
    );
    const script = `
      const { PostgresConnectionStore } = await import(${JSON.stringify(entry)});
      try {
        await PostgresConnectionStore.open({ connectionString: 'postgres://127.0.0.1:1/x', key: new Uint8Array(32) });
      } catch (error) { console.log(JSON.stringify({ code: error.code, message: error.message, details: error.details })); }
    `;
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--import',
      register,
      '--input-type=module',
      '-e',
      script,
    ]);
    expect(JSON.parse(stdout)).toEqual({
      code: 'STORE_DRIVER_MISSING',
      message: expect.stringContaining('npm install pg@8'),
      details: { driver: 'pg' },
    });
  });

  it('refuses use after close', async () => {
    const store = await open();
    await store.close();
    await expect(store.get('linear')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
  });
});

describe('connectionStoreFromUrl', () => {
  it('opens a SqliteConnectionStore for sqlite:<path> and sqlite:///<absolute path>', async () => {
    const folder = await mkdtemp(join(tmpdir(), 'store-url-'));
    try {
      const key = randomBytes(32);
      const first = await connectionStoreFromUrl(`sqlite:${join(folder, 'a.db')}`, {
        key,
        leaseMs: 5_000,
        leaseWaitMs: 5_000,
      });
      expect(first).toBeInstanceOf(SqliteConnectionStore);
      await first.put(FULL);
      await first.close();
      const again = await connectionStoreFromUrl(`sqlite://${join(folder, 'a.db')}`, { key });
      expect(withoutUpdatedAt(await again.get('linear'))).toEqual(FULL);
      await again.close();
    } finally {
      await rm(folder, { recursive: true, force: true });
    }
  });

  it('opens a migrated PostgresConnectionStore for postgres:// and postgresql://', async () => {
    const key = randomBytes(32);
    const schema = `s_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const first = await connectionStoreFromUrl(url, { key, schema, poolSize: 2, leaseMs: 5_000 });
    expect(first).toBeInstanceOf(PostgresConnectionStore);
    await first.put(FULL);
    await first.close();
    const second = await connectionStoreFromUrl(url.replace('postgres://', 'postgresql://'), {
      key,
      schema,
    });
    expect(withoutUpdatedAt(await second.get('linear'))).toEqual(FULL);
    await second.close();
  });

  it.each([
    ['another scheme', 'mysql://user:hunter2@db.example/x', {}, /mysql:.*not supported/],
    ['no scheme', 'user:hunter2@db', {}, /not supported|no scheme/],
    ['an empty sqlite path', 'sqlite:', {}, /needs a path/],
    ['a PostgreSQL option with sqlite:', 'sqlite:/tmp/x.db', { poolSize: 2 }, /poolSize/],
    ['an unknown option', 'sqlite:/tmp/x.db', { pool: {} }, /unknown option "pool"/],
    ['a zero lease', 'sqlite:/tmp/x.db', { leaseMs: 0 }, /leaseMs/],
  ])(
    'refuses %s (STORE_RECORD_INVALID, no password in the message)',
    async (_name, target, extra, message) => {
      const error = await connectionStoreFromUrl(target, { key: randomBytes(32), ...extra }).catch(
        (caught: unknown) => caught,
      );
      expect(error).toMatchObject({
        code: 'STORE_RECORD_INVALID',
        message: expect.stringMatching(message),
      });
      expect(
        JSON.stringify({
          message: (error as Error).message,
          details: (error as { details?: unknown }).details,
        }),
      ).not.toContain('hunter2');
    },
  );
});

describe('PostgresConnectionStore rows bound to their table, and keys per row', () => {
  const stores: PostgresConnectionStore[] = [];
  const open = async (
    options: Partial<PostgresConnectionStoreOptions>,
  ): Promise<PostgresConnectionStore> => {
    const store = await PostgresConnectionStore.open({
      connectionString: url,
      key: randomBytes(32),
      ...options,
    });
    stores.push(store);
    return store;
  };
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
  });
  const fresh = (): string => `s_${randomUUID().replaceAll('-', '').slice(0, 12)}`;

  it.each([
    ['another table prefix, same schema', { tablePrefix: 'tenant_b_' }, false],
    ['another schema, same prefix', {}, true],
  ])(
    'a row copied into %s under the same key fails (STORE_DECRYPTION_FAILED)',
    async (_name, other, otherSchema) => {
      const shared = fresh();
      const key = randomBytes(32);
      const first = await open({ schema: shared, key });
      const secondSchema = otherSchema ? fresh() : shared;
      const second = await open({ schema: secondSchema, key, ...other });
      await first.put(FULL);
      const target = `"${secondSchema}"."${(other as { tablePrefix?: string }).tablePrefix ?? 'toolfence_'}connections"`;
      await admin.query(`INSERT INTO ${target} SELECT * FROM "${shared}".toolfence_connections`);
      await expect(second.get('linear')).rejects.toMatchObject({ code: 'STORE_DECRYPTION_FAILED' });
      expect((await first.get('linear'))?.accessToken).toBe(FULL.accessToken);
    },
  );

  it('one row under a key not supplied fails alone; the store opens and the others work', async () => {
    const schema = fresh();
    const key = randomBytes(32);
    const writer = await open({ schema, key });
    await writer.put(FULL);
    await writer.put({ ...FULL, id: 'other' });
    // A row of another deployment's key, planted beside readable ones.
    await admin.query(
      `UPDATE "${schema}".toolfence_connections SET key_id = 'ffffffffffffffff' WHERE id = 'other'`,
    );
    const reader = await open({ schema, key });
    expect((await reader.get('linear'))?.accessToken).toBe(FULL.accessToken);
    await expect(reader.get('other')).rejects.toMatchObject({
      code: 'STORE_KEY_INVALID',
      details: { id: 'other' },
    });
    expect(await reader.list()).toEqual(['linear', 'other']);
    // Rotation rewrites what it can read and leaves the other row as it is.
    const rotating = await open({ schema, key: randomBytes(32), previousKeys: [key] });
    expect(await rotating.rotateKey()).toBe(1);
  });

  it('a wrong key (no record under a supplied key) still stops the open', async () => {
    const schema = fresh();
    const writer = await open({ schema });
    await writer.put(FULL);
    await expect(open({ schema })).rejects.toMatchObject({
      code: 'STORE_KEY_INVALID',
      message: expect.stringMatching(/wrong key/),
    });
  });

  it('opening a schema-1 store binds its rows to the table once (blob 3 -> 4), readable after', async () => {
    const schema = fresh();
    const key = randomBytes(32);
    const store = await open({ schema, key });
    await store.put(FULL);
    await store.close();
    // The row as schema 1 wrote it: the same columns, blob version 3, not bound to the table.
    const stored = await admin.query(`SELECT * FROM "${schema}".toolfence_connections`);
    const columns = stored.rows[0] as { key_id: string; updated_at: string };
    const { row, secrets } = rowOfRecord(FULL, columns.key_id);
    const blob = sealSecrets(
      storeKeyOf(key, 'key'),
      { ...row, updated_at: Number(columns.updated_at) },
      secrets,
    );
    await admin.query(`UPDATE "${schema}".toolfence_connections SET secrets = $1`, [blob]);
    await admin.query(`UPDATE "${schema}".toolfence_store_version SET version = 1`);
    const upgraded = await open({ schema, key });
    expect(withoutUpdatedAt(await upgraded.get('linear'))).toEqual(FULL);
    const rewritten = await admin.query(
      `SELECT secrets FROM "${schema}".toolfence_connections WHERE id = 'linear'`,
    );
    expect((rewritten.rows[0].secrets as Buffer)[0]).toBe(4);
    const version = await admin.query(`SELECT version FROM "${schema}".toolfence_store_version`);
    expect(version.rows).toEqual([{ version: 2 }]);
    // A schema-1 row that appears after the upgrade is not accepted.
    await admin.query(`UPDATE "${schema}".toolfence_connections SET secrets = $1`, [blob]);
    await expect(upgraded.get('linear')).rejects.toMatchObject({
      code: 'STORE_DECRYPTION_FAILED',
    });
  });
});
