import { createCipheriv, createHmac, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
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
  [
    'SqliteConnectionStore',
    () => new SqliteConnectionStore({ path: join(folder, 'store.db'), key: randomBytes(32) }),
  ],
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

describe('SqliteConnectionStore encryption and schema', () => {
  it('keeps everything across reopening and never writes secrets in plaintext', async () => {
    const path = join(folder, 'store.db');
    const key = randomBytes(32);
    const first = new SqliteConnectionStore({ path, key });
    await first.put(FULL);
    first.close();
    const bytes = (await readFile(path)).toString('latin1');
    const wal = await readFile(`${path}-wal`)
      .then((b) => b.toString('latin1'))
      .catch(() => '');
    expect(bytes + wal).not.toContain('SECRET');
    expect(bytes + wal).toContain('mcp.linear.example');
    const second = new SqliteConnectionStore({ path, key });
    expect(withoutUpdatedAt(await second.get('linear'))).toEqual(FULL);
    second.close();
  });

  it('fails clearly at open with a wrong key', async () => {
    const path = join(folder, 'store.db');
    const store = new SqliteConnectionStore({ path, key: randomBytes(32) });
    await store.put(FULL);
    store.close();
    expect(() => new SqliteConnectionStore({ path, key: randomBytes(32) })).toThrow(
      expect.objectContaining({
        code: 'STORE_KEY_INVALID',
        message: expect.stringMatching(/wrong key/),
      }),
    );
  });

  it.each([
    ['a 31-byte key', randomBytes(31)],
    ['a 33-byte key', randomBytes(33)],
    ['a string key', 'k'.repeat(32)],
    ['no key', undefined],
  ])('refuses %s', (_name, key) => {
    expect(
      () => new SqliteConnectionStore({ path: join(folder, 'store.db'), key: key as Uint8Array }),
    ).toThrow(expect.objectContaining({ code: 'STORE_KEY_INVALID' }));
  });

  it('rotates the key: reads with the previous key, re-encrypts, then works with the new key alone', async () => {
    const path = join(folder, 'store.db');
    const oldKey = randomBytes(32);
    const newKey = randomBytes(32);
    const store = new SqliteConnectionStore({ path, key: oldKey });
    await store.put(FULL);
    await store.put({ ...FULL, id: 'second' });
    store.close();
    const rotating = new SqliteConnectionStore({ path, key: newKey, previousKeys: [oldKey] });
    expect((await rotating.get('linear'))?.accessToken).toBe(FULL.accessToken);
    const blobBefore = new Database(path)
      .prepare('SELECT secrets FROM connections WHERE id = ?')
      .get('linear');
    expect(rotating.rotateKey()).toBe(2);
    expect(rotating.rotateKey()).toBe(0);
    rotating.close();
    const blobAfter = new Database(path)
      .prepare('SELECT secrets FROM connections WHERE id = ?')
      .get('linear');
    expect(blobAfter).not.toEqual(blobBefore);
    const fresh = new SqliteConnectionStore({ path, key: newKey });
    expect(withoutUpdatedAt(await fresh.get('second'))).toEqual({ ...FULL, id: 'second' });
    fresh.close();
    expect(() => new SqliteConnectionStore({ path, key: oldKey })).toThrow(
      expect.objectContaining({ code: 'STORE_KEY_INVALID' }),
    );
  });

  it('detects a tampered record and a record moved to another id', async () => {
    const path = join(folder, 'store.db');
    const key = randomBytes(32);
    const store = new SqliteConnectionStore({ path, key });
    await store.put(FULL);
    await store.put({ ...FULL, id: 'victim', accessToken: 'victim-token' });
    const raw = new Database(path);
    const row = raw.prepare('SELECT secrets FROM connections WHERE id = ?').get('linear') as {
      secrets: Buffer;
    };
    const flipped = Buffer.from(row.secrets);
    flipped[flipped.length - 1] = (flipped[flipped.length - 1] ?? 0) ^ 1;
    raw.prepare('UPDATE connections SET secrets = ? WHERE id = ?').run(flipped, 'linear');
    raw.prepare('UPDATE connections SET secrets = ? WHERE id = ?').run(row.secrets, 'victim');
    raw.close();
    await expect(store.get('linear')).rejects.toMatchObject({ code: 'STORE_DECRYPTION_FAILED' });
    await expect(store.get('victim')).rejects.toMatchObject({ code: 'STORE_DECRYPTION_FAILED' });
    store.close();
  });

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

  it.each([
    ['issuer', 'https://evil.example'],
    ['resource', 'https://evil.example/mcp'],
    ['client_id', 'attacker-client'],
    ['token_auth_method', 'client_secret_post'],
    ['redirect_uri', 'https://evil.example/callback'],
    ['url', 'https://evil.example/mcp'],
    ['scope', 'admin'],
    ['expires_at', 1],
    ['authorization_attempts', 0],
    ['last_authorization_at', 0],
    ['updated_at', 1],
  ])(
    'refuses a record whose %s column was changed in the file (STORE_DECRYPTION_FAILED)',
    async (column, value) => {
      const path = join(folder, 'store.db');
      const key = randomBytes(32);
      const store = new SqliteConnectionStore({ path, key });
      await store.put(FULL);
      const raw = new Database(path);
      raw.prepare(`UPDATE connections SET ${column} = ? WHERE id = ?`).run(value, 'linear');
      raw.close();
      await expect(store.get('linear')).rejects.toMatchObject({ code: 'STORE_DECRYPTION_FAILED' });
      await expect(store.update('linear', (current) => current)).rejects.toMatchObject({
        code: 'STORE_DECRYPTION_FAILED',
      });
      store.close();
    },
  );

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

  it('keeps a DPoP token type and key pair in the encrypted payload across reopening', async () => {
    const path = join(folder, 'store.db');
    const key = randomBytes(32);
    const record: ConnectionRecord = {
      ...FULL,
      tokenType: 'DPoP',
      dpopKey: { privateJwk: { kty: 'EC', crv: 'P-256', x: 'X', y: 'Y', d: 'SECRET-d' } },
    };
    const store = new SqliteConnectionStore({ path, key });
    await store.put(record);
    store.close();
    const bytes = (await readFile(path)).toString('latin1');
    const wal = await readFile(`${path}-wal`)
      .then((b) => b.toString('latin1'))
      .catch(() => '');
    expect(bytes + wal).not.toContain('SECRET');
    expect(bytes + wal).not.toContain('DPoP');
    const reopened = new SqliteConnectionStore({ path, key });
    expect(withoutUpdatedAt(await reopened.get('linear'))).toEqual(record);
    reopened.close();
  });

  it('excludes a second store on the same file from a single-flight key until the first ends', async () => {
    const path = join(folder, 'store.db');
    const key = randomBytes(32);
    const first = new SqliteConnectionStore({ path, key });
    const second = new SqliteConnectionStore({ path, key });
    const order: string[] = [];
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const a = first.singleFlight('refresh:x', async () => {
      order.push('a-start');
      await held;
      order.push('a-end');
    });
    await new Promise((resolve) => setTimeout(resolve, 20));
    const b = second.singleFlight('refresh:x', async () => {
      order.push('b');
    });
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(order).toEqual(['a-start']);
    release();
    await Promise.all([a, b]);
    expect(order).toEqual(['a-start', 'a-end', 'b']);
    first.close();
    second.close();
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
