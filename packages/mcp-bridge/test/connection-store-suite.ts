// One test suite for every persistent ConnectionStore back end (SQLite, PostgreSQL), run
// unchanged on each: a back end only says how to open a store on a fresh location and how an
// attacker with database access would change a row.
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ConnectionRecord, ConnectionStore } from '../src/store/connection-store.js';

/** What the suite needs from a store besides the interface. */
export interface SuiteStore extends ConnectionStore {
  rotateKey(): number | Promise<number>;
  close(): void | Promise<void>;
}

/** Options every back end takes, under the names the suite uses. */
export interface SuiteOpenOptions {
  readonly key: Uint8Array;
  readonly previousKeys?: readonly Uint8Array[];
  /** How long singleFlight waits for another store's lock, in milliseconds. */
  readonly leaseWaitMs?: number;
  /** Extra option keys passed through verbatim (to prove unknown ones are refused). */
  readonly extra?: Readonly<Record<string, unknown>>;
}

/** One back end under test. */
export interface StoreBackend {
  readonly name: string;
  /** Prepares a fresh, empty location (a file, a schema) for the next test. */
  fresh(): Promise<void>;
  /** Opens a store on the current location (rejects as the store's constructor throws). */
  open(options: SuiteOpenOptions): Promise<SuiteStore>;
  /** Sets a plain column of a stored row from outside the store. */
  setColumn(id: string, column: string, value: string | number): Promise<void>;
  /** The encrypted secrets blob of a row, read from outside the store. */
  readSecrets(id: string): Promise<Buffer>;
  /** Replaces the encrypted secrets blob of a row from outside the store. */
  writeSecrets(id: string, blob: Buffer): Promise<void>;
  /** Everything the back end persisted for the location, as latin1 text. */
  dump(): Promise<string>;
  /** Sets the schema version the location claims. */
  setSchemaVersion(version: number): Promise<void>;
  /** Removes the location. */
  dispose(): Promise<void>;
}

export const FULL: ConnectionRecord = {
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

export function withoutUpdatedAt(
  record: ConnectionRecord | undefined,
): Omit<ConnectionRecord, 'updatedAt'> | undefined {
  if (record === undefined) return undefined;
  const { updatedAt: _ignored, ...rest } = record;
  return rest;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Registers the shared suite for `backend`. */
export function describeConnectionStore(backend: StoreBackend): void {
  describe(`${backend.name} (shared connection-store suite)`, () => {
    const opened: SuiteStore[] = [];
    const open = async (options: SuiteOpenOptions): Promise<SuiteStore> => {
      const store = await backend.open(options);
      opened.push(store);
      return store;
    };
    beforeEach(async () => {
      await backend.fresh();
    });
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
      await backend.dispose();
    });

    it('stores, updates, lists and deletes records', async () => {
      const store = await open({ key: randomBytes(32) });
      await store.put(FULL);
      await store.put({ ...FULL, id: 'B-upper' });
      await store.put({ ...FULL, id: 'a-lower' });
      expect(withoutUpdatedAt(await store.get('linear'))).toEqual(FULL);
      const updated = await store.update(
        'linear',
        (current) => current && { ...current, accessToken: 'next' },
      );
      expect(updated?.accessToken).toBe('next');
      expect(updated?.refreshToken).toBe(FULL.refreshToken);
      expect((await store.get('linear'))?.accessToken).toBe('next');
      expect(await store.list()).toEqual(['B-upper', 'a-lower', 'linear']);
      expect(await store.delete('linear')).toBe(true);
      expect(await store.delete('linear')).toBe(false);
      expect(await store.get('linear')).toBeUndefined();
      expect(await store.update('missing', () => undefined)).toBeUndefined();
    });

    it('writes nothing when an update throws, so the old token is kept', async () => {
      const store = await open({ key: randomBytes(32) });
      await store.put(FULL);
      await expect(
        store.update('linear', () => {
          throw new Error('refresh failed');
        }),
      ).rejects.toThrow('refresh failed');
      expect((await store.get('linear'))?.accessToken).toBe(FULL.accessToken);
    });

    it('refuses an update that changes the id or a malformed record', async () => {
      const store = await open({ key: randomBytes(32) });
      await store.put(FULL);
      await expect(
        store.update('linear', (current) => current && { ...current, id: 'other' }),
      ).rejects.toMatchObject({ code: 'STORE_RECORD_INVALID' });
      await expect(store.put({ id: '', url: 'x' })).rejects.toMatchObject({
        code: 'STORE_RECORD_INVALID',
      });
      await expect(store.put({ id: 'x'.repeat(257), url: 'x' })).rejects.toMatchObject({
        code: 'STORE_RECORD_INVALID',
      });
      expect(await store.list()).toEqual(['linear']);
    });

    it('runs concurrent single-flight tasks of one key once', async () => {
      const store = await open({ key: randomBytes(32) });
      let runs = 0;
      const task = async (): Promise<number> => {
        runs += 1;
        await sleep(20);
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
    });

    it('applies concurrent updates from two stores one at a time (no lost update)', async () => {
      const key = randomBytes(32);
      const first = await open({ key });
      const second = await open({ key });
      await first.put({ ...FULL, authorizationAttempts: 0 });
      const increment = (store: SuiteStore) =>
        store.update(
          'linear',
          (current) =>
            current && {
              ...current,
              authorizationAttempts: (current.authorizationAttempts ?? 0) + 1,
            },
        );
      await Promise.all(
        Array.from({ length: 40 }, (_, index) => increment(index % 2 === 0 ? first : second)),
      );
      expect((await first.get('linear'))?.authorizationAttempts).toBe(40);
    });

    it('keeps everything across reopening and never writes secrets in plaintext', async () => {
      const key = randomBytes(32);
      const first = await open({ key });
      await first.put(FULL);
      await first.close();
      const persisted = await backend.dump();
      expect(persisted).not.toContain('SECRET');
      expect(persisted).toContain('mcp.linear.example');
      const second = await open({ key });
      expect(withoutUpdatedAt(await second.get('linear'))).toEqual(FULL);
    });

    it('keeps a DPoP token type and key pair in the encrypted payload across reopening', async () => {
      const key = randomBytes(32);
      const record: ConnectionRecord = {
        ...FULL,
        tokenType: 'DPoP',
        dpopKey: { privateJwk: { kty: 'EC', crv: 'P-256', x: 'X', y: 'Y', d: 'SECRET-d' } },
      };
      const store = await open({ key });
      await store.put(record);
      await store.close();
      const persisted = await backend.dump();
      expect(persisted).not.toContain('SECRET');
      expect(persisted).not.toContain('DPoP');
      const reopened = await open({ key });
      expect(withoutUpdatedAt(await reopened.get('linear'))).toEqual(record);
    });

    it('fails clearly at open with a wrong key', async () => {
      const store = await open({ key: randomBytes(32) });
      await store.put(FULL);
      await store.close();
      await expect(open({ key: randomBytes(32) })).rejects.toMatchObject({
        code: 'STORE_KEY_INVALID',
        message: expect.stringMatching(/wrong key/),
      });
    });

    it.each([
      ['a 31-byte key', randomBytes(31)],
      ['a 33-byte key', randomBytes(33)],
      ['a string key', 'k'.repeat(32)],
      ['no key', undefined],
    ])('refuses %s', async (_name, key) => {
      await expect(open({ key: key as Uint8Array })).rejects.toMatchObject({
        code: 'STORE_KEY_INVALID',
      });
    });

    it('refuses a malformed previous key', async () => {
      await expect(
        open({ key: randomBytes(32), previousKeys: [randomBytes(16)] }),
      ).rejects.toMatchObject({
        code: 'STORE_KEY_INVALID',
        details: { option: 'previousKeys[0]' },
      });
    });

    it('refuses an unknown option key', async () => {
      await expect(
        open({ key: randomBytes(32), extra: { leaseWaitMillis: 5 } }),
      ).rejects.toMatchObject({
        code: 'STORE_RECORD_INVALID',
        message: expect.stringMatching(/unknown option "leaseWaitMillis"/),
      });
    });

    it('rotates the key: reads with the previous key, re-encrypts, then works with the new key alone', async () => {
      const oldKey = randomBytes(32);
      const newKey = randomBytes(32);
      const store = await open({ key: oldKey });
      await store.put(FULL);
      await store.put({ ...FULL, id: 'second' });
      await store.close();
      const rotating = await open({ key: newKey, previousKeys: [oldKey] });
      expect((await rotating.get('linear'))?.accessToken).toBe(FULL.accessToken);
      const blobBefore = await backend.readSecrets('linear');
      expect(await rotating.rotateKey()).toBe(2);
      expect(await rotating.rotateKey()).toBe(0);
      await rotating.close();
      expect(await backend.readSecrets('linear')).not.toEqual(blobBefore);
      const fresh = await open({ key: newKey });
      expect(withoutUpdatedAt(await fresh.get('second'))).toEqual({ ...FULL, id: 'second' });
      await expect(open({ key: oldKey })).rejects.toMatchObject({ code: 'STORE_KEY_INVALID' });
    });

    it('detects a tampered record and a record moved to another id', async () => {
      const store = await open({ key: randomBytes(32) });
      await store.put(FULL);
      await store.put({ ...FULL, id: 'victim', accessToken: 'victim-token' });
      const blob = await backend.readSecrets('linear');
      const flipped = Buffer.from(blob);
      flipped[flipped.length - 1] = (flipped[flipped.length - 1] ?? 0) ^ 1;
      await backend.writeSecrets('linear', flipped);
      await backend.writeSecrets('victim', blob);
      await expect(store.get('linear')).rejects.toMatchObject({ code: 'STORE_DECRYPTION_FAILED' });
      await expect(store.get('victim')).rejects.toMatchObject({ code: 'STORE_DECRYPTION_FAILED' });
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
      'refuses a record whose %s column was changed in the database (STORE_DECRYPTION_FAILED)',
      async (column, value) => {
        const store = await open({ key: randomBytes(32) });
        await store.put(FULL);
        await backend.setColumn('linear', column, value);
        await expect(store.get('linear')).rejects.toMatchObject({
          code: 'STORE_DECRYPTION_FAILED',
        });
        await expect(store.update('linear', (current) => current)).rejects.toMatchObject({
          code: 'STORE_DECRYPTION_FAILED',
        });
      },
    );

    it('refuses a database written by a newer schema version', async () => {
      const store = await open({ key: randomBytes(32) });
      await store.close();
      await backend.setSchemaVersion(99);
      await expect(open({ key: randomBytes(32) })).rejects.toMatchObject({
        code: 'STORE_SCHEMA_UNSUPPORTED',
        details: { found: 99 },
      });
    });

    it('excludes a second store from a single-flight key until the first ends', async () => {
      const key = randomBytes(32);
      const first = await open({ key });
      const second = await open({ key });
      const order: string[] = [];
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      let started: () => void = () => undefined;
      const running = new Promise<void>((resolve) => {
        started = resolve;
      });
      const a = first.singleFlight('refresh:x', async () => {
        order.push('a-start');
        started();
        await held;
        order.push('a-end');
      });
      await running;
      const b = second.singleFlight('refresh:x', async () => {
        order.push('b');
      });
      // Another key is not blocked.
      await second.singleFlight('refresh:y', async () => {
        order.push('y');
      });
      await sleep(150);
      expect(order).toEqual(['a-start', 'y']);
      release();
      await Promise.all([a, b]);
      expect(order).toEqual(['a-start', 'y', 'a-end', 'b']);
    });

    it('gives up after leaseWaitMs while another store holds the key, then runs once it is free', async () => {
      const key = randomBytes(32);
      const holder = await open({ key });
      const waiter = await open({ key, leaseWaitMs: 300 });
      let release: () => void = () => undefined;
      let started: () => void = () => undefined;
      const running = new Promise<void>((resolve) => {
        started = resolve;
      });
      const held = holder.singleFlight(
        'refresh:x',
        () =>
          new Promise<void>((resolve) => {
            release = resolve;
            started();
          }),
      );
      await running;
      const waitStarted = Date.now();
      await expect(waiter.singleFlight('refresh:x', async () => 1)).rejects.toMatchObject({
        code: 'STORE_LEASE_TIMEOUT',
      });
      expect(Date.now() - waitStarted).toBeGreaterThanOrEqual(250);
      release();
      await held;
      await expect(waiter.singleFlight('refresh:x', async () => 2)).resolves.toBe(2);
    });

    it('releases the key when the task throws', async () => {
      const key = randomBytes(32);
      const first = await open({ key });
      const second = await open({ key, leaseWaitMs: 2000 });
      await expect(
        first.singleFlight('refresh:x', async () => {
          throw new Error('refresh failed');
        }),
      ).rejects.toThrow('refresh failed');
      await expect(second.singleFlight('refresh:x', async () => 'ok')).resolves.toBe('ok');
    });
  });
}
