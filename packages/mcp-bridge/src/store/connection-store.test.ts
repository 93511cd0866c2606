import { createCipheriv, createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type ConnectionRecord,
  type ConnectionStore,
  MemoryConnectionStore,
} from './connection-store.js';
import { SqliteConnectionStore } from './sqlite-connection-store.js';

let folder: string;
beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'connection-store-'));
});
afterEach(async () => {
  await rm(folder, { recursive: true, force: true });
});

const FULL: ConnectionRecord = {
  id: 'linear',
  url: 'https://mcp.linear.example/mcp',
  issuer: 'https://auth.linear.example',
  resource: 'https://mcp.linear.example/mcp',
  clientId: 'client-1',
  clientSecret: 'SECRET-client-secret',
  tokenAuthMethod: 'client_secret_basic',
  redirectUri: 'http://127.0.0.1:8123/callback',
  accessToken: 'SECRET-access-token',
  refreshToken: 'SECRET-refresh-token',
  expiresAt: 1_900_000_000_000,
  scope: 'mcp:tools',
  pending: {
    state: 'SECRET-state',
    codeVerifier: 'SECRET-verifier',
    redirectUri: 'http://127.0.0.1:8123/callback',
    scope: 'mcp:tools',
    createdAt: 1_800_000_000_000,
  },
  authorizationAttempts: 1,
  lastAuthorizationAt: 1_800_000_000_000,
};

function withoutUpdatedAt(
  record: ConnectionRecord | undefined,
): Omit<ConnectionRecord, 'updatedAt'> | undefined {
  if (record === undefined) return undefined;
  const { updatedAt: _ignored, ...rest } = record;
  return rest;
}

const stores: [string, () => ConnectionStore & { close?: () => void }][] = [
  ['MemoryConnectionStore', () => new MemoryConnectionStore()],
];

describe.each(stores)('%s', (_name, create) => {
  it('stores, updates, lists and deletes records', async () => {
    const store = create();
    await store.put(FULL);
    expect(withoutUpdatedAt(await store.get('linear'))).toEqual(FULL);
    const updated = await store.update(
      'linear',
      (current) => current && { ...current, accessToken: 'next' },
    );
    expect(updated?.accessToken).toBe('next');
    expect(updated?.refreshToken).toBe(FULL.refreshToken);
    expect(await store.list()).toEqual(['linear']);
    expect(await store.delete('linear')).toBe(true);
    expect(await store.get('linear')).toBeUndefined();
    store.close?.();
  });

  it('writes nothing when an update throws, so the old token is kept', async () => {
    const store = create();
    await store.put(FULL);
    await expect(
      store.update('linear', () => {
        throw new Error('refresh failed');
      }),
    ).rejects.toThrow('refresh failed');
    expect((await store.get('linear'))?.accessToken).toBe(FULL.accessToken);
    store.close?.();
  });

  it('refuses an update that changes the id or a malformed record', async () => {
    const store = create();
    await store.put(FULL);
    await expect(
      store.update('linear', (current) => current && { ...current, id: 'other' }),
    ).rejects.toMatchObject({
      code: 'STORE_RECORD_INVALID',
    });
    await expect(store.put({ id: '', url: 'x' })).rejects.toMatchObject({
      code: 'STORE_RECORD_INVALID',
    });
    store.close?.();
  });

  it('runs concurrent single-flight tasks of one key once', async () => {
    const store = create();
    let runs = 0;
    const task = async (): Promise<number> => {
      runs += 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
      return runs;
    };
    const results = await Promise.all([
      store.singleFlight('refresh:a', task),
      store.singleFlight('refresh:a', task),
      store.singleFlight('refresh:a', task),
    ]);
    expect(runs).toBe(1);
    expect(results).toEqual([1, 1, 1]);
    await store.singleFlight('refresh:a', task);
    expect(runs).toBe(2);
    store.close?.();
  });
});

// The persistent stores' shared suite (encryption, tampering, key rotation, leases) runs on
// SQLite and PostgreSQL in test/connection-store-{sqlite,postgres}.test.ts; here: the memory
// store, and SQLite's own migrations, lease rows and options.
describe('SqliteConnectionStore migrations, leases and options', () => {
  /** Rewrites a record as schema 1/2 stored it: the secrets bound to the record id only. */
  function writeLegacy(raw: Database.Database, key: Buffer, id: string, secrets: object): void {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(`toolfence/connection-store/v1\u0000${id}`, 'utf8'));
    const body = Buffer.concat([cipher.update(JSON.stringify(secrets), 'utf8'), cipher.final()]);
    const blob = Buffer.concat([Buffer.from([1]), iv, cipher.getAuthTag(), body]);
    const keyId = createHmac('sha256', key)
      .update('toolfence connection-store key id')
      .digest('hex')
      .slice(0, 16);
    raw.prepare('UPDATE connections SET secrets = ?, key_id = ? WHERE id = ?').run(blob, keyId, id);
  }

  const LEGACY_SECRETS = {
    clientSecret: FULL.clientSecret,
    accessToken: FULL.accessToken,
    refreshToken: FULL.refreshToken,
    pending: FULL.pending,
  };

  it('migrates a version 1 database and keeps its records', async () => {
    const path = join(folder, 'store.db');
    const key = randomBytes(32);
    const store = new SqliteConnectionStore({ path, key });
    const { lastAuthorizationAt: _dropped, ...v1Record } = FULL;
    await store.put(v1Record);
    store.close();
    // Turn it into what version 1 wrote: no last_authorization_at column, no leases, id-only AAD.
    const raw = new Database(path);
    raw.exec('ALTER TABLE connections DROP COLUMN last_authorization_at');
    raw.exec('DROP TABLE leases');
    writeLegacy(raw, key, 'linear', LEGACY_SECRETS);
    raw.pragma('user_version = 1');
    raw.close();
    const migrated = new SqliteConnectionStore({ path, key });
    expect(withoutUpdatedAt(await migrated.get('linear'))).toEqual(v1Record);
    await migrated.update('linear', (current) => current && { ...current, lastAuthorizationAt: 5 });
    expect((await migrated.get('linear'))?.lastAuthorizationAt).toBe(5);
    migrated.close();
  });

  it('migrates a version 2 database to version 3: records kept, then every column authenticated', async () => {
    const path = join(folder, 'store.db');
    const key = randomBytes(32);
    const store = new SqliteConnectionStore({ path, key });
    await store.put(FULL);
    store.close();
    const raw = new Database(path);
    raw.exec('DROP TABLE leases');
    writeLegacy(raw, key, 'linear', LEGACY_SECRETS);
    raw.pragma('user_version = 2');
    raw.close();
    const migrated = new SqliteConnectionStore({ path, key });
    expect(withoutUpdatedAt(await migrated.get('linear'))).toEqual(FULL);
    migrated.close();
    const check = new Database(path);
    expect(check.pragma('user_version', { simple: true })).toBe(3);
    const blob = (check.prepare('SELECT secrets FROM connections').get() as { secrets: Buffer })
      .secrets;
    expect(blob[0]).toBe(3);
    check.prepare('UPDATE connections SET issuer = ?').run('https://evil.example');
    check.close();
    const reopened = new SqliteConnectionStore({ path, key });
    await expect(reopened.get('linear')).rejects.toMatchObject({
      code: 'STORE_DECRYPTION_FAILED',
    });
    reopened.close();
  });

  it('refuses unknown and out-of-range options', () => {
    const path = join(folder, 'store.db');
    const key = randomBytes(32);
    expect(
      () =>
        new SqliteConnectionStore({ path, key, leaseSecond: 5 } as unknown as {
          path: string;
          key: Uint8Array;
        }),
    ).toThrow(
      expect.objectContaining({
        code: 'STORE_RECORD_INVALID',
        message: expect.stringMatching(/leaseMs/),
      }),
    );
    expect(() => new SqliteConnectionStore({ path, key, leaseMs: 0 })).toThrow(
      expect.objectContaining({ code: 'STORE_RECORD_INVALID' }),
    );
    expect(() => new SqliteConnectionStore({ path, key, leaseWaitMs: Number.NaN })).toThrow(
      expect.objectContaining({ code: 'STORE_RECORD_INVALID' }),
    );
    expect(() => new SqliteConnectionStore({ path, key, leaseMs: 86_400_001 })).toThrow(
      expect.objectContaining({ code: 'STORE_RECORD_INVALID' }),
    );
  });

  it.each([
    ['leaseSeconds', 'leaseMs'],
    ['leaseWaitSeconds', 'leaseWaitMs'],
  ])('refuses the old seconds option %s, naming %s', (oldKey, newKey) => {
    const path = join(folder, 'renamed.db');
    expect(
      () => new SqliteConnectionStore({ path, key: randomBytes(32), [oldKey]: 60 } as never),
    ).toThrow(
      expect.objectContaining({
        code: 'STORE_RECORD_INVALID',
        details: { option: oldKey },
        message: expect.stringContaining(`"${oldKey}" was renamed to "${newKey}" (milliseconds`),
      }),
    );
  });

  it('takes over an expired lease (a crashed holder) and gives up after leaseWaitMs', async () => {
    const path = join(folder, 'store.db');
    const key = randomBytes(32);
    const store = new SqliteConnectionStore({ path, key, leaseWaitMs: 200 });
    const raw = new Database(path);
    raw
      .prepare('INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)')
      .run('refresh:x', 'crashed', Date.now() + 60_000);
    await expect(store.singleFlight('refresh:x', async () => 1)).rejects.toMatchObject({
      code: 'STORE_LEASE_TIMEOUT',
    });
    raw.prepare('UPDATE leases SET expires_at = ? WHERE name = ?').run(Date.now() - 1, 'refresh:x');
    raw.close();
    await expect(store.singleFlight('refresh:x', async () => 2)).resolves.toBe(2);
    store.close();
  });

  it('migrates an empty database and refuses one from a newer schema', () => {
    const path = join(folder, 'store.db');
    const store = new SqliteConnectionStore({ path, key: randomBytes(32) });
    store.close();
    const raw = new Database(path);
    expect(raw.pragma('user_version', { simple: true })).toBe(3);
    raw.pragma('user_version = 99');
    raw.close();
    expect(() => new SqliteConnectionStore({ path, key: randomBytes(32) })).toThrow(
      expect.objectContaining({ code: 'STORE_SCHEMA_UNSUPPORTED' }),
    );
  });
});
