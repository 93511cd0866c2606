import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { renamedOptionMessage } from '@toolfence/tools/core';
import type Database from 'better-sqlite3';
import {
  type ConnectionChange,
  type ConnectionRecord,
  type ConnectionStore,
  checkConnectionRecord,
  SingleFlight,
} from './connection-store.js';
import {
  type StoreKey as Key,
  storeKeyOf as keyOf,
  openSecrets,
  type StoredRow as Row,
  recordOfRow,
  rowOfRecord,
  type StoredSecrets as Secrets,
  sealSecrets,
} from './record-cipher.js';
import {
  StoreDriverError,
  StoreKeyError,
  StoreLeaseTimeoutError,
  StoreRecordError,
  StoreSchemaError,
} from './store-errors.js';

type DatabaseConstructor = new (path: string) => Database.Database;

/** Loads the optional peer `better-sqlite3` on first use, with a clear error when it is missing. */
function loadDriver(): DatabaseConstructor {
  try {
    return createRequire(import.meta.url)('better-sqlite3') as DatabaseConstructor;
  } catch (error) {
    throw new StoreDriverError(
      'SqliteConnectionStore needs the optional peer dependency better-sqlite3@12; install it',
      { cause: error },
    );
  }
}

/** Options of {@link SqliteConnectionStore}. */
export interface SqliteConnectionStoreOptions {
  /** Database file path (or `:memory:`). */
  readonly path: string;
  /** The current AES-256-GCM key: exactly 32 bytes, from the host's secret storage. */
  readonly key: Uint8Array;
  /** Older keys still accepted for reading, during a key rotation. */
  readonly previousKeys?: readonly Uint8Array[] | undefined;
  /**
   * How long a `singleFlight` lease (for example a token refresh) excludes other processes on
   * this database file before it expires, in milliseconds (at most 86,400,000); a crashed
   * holder's lease expires then. Default 60,000 (longer than one refresh with the default OAuth
   * timeouts).
   */
  readonly leaseMs?: number | undefined;
  /**
   * How long `singleFlight` waits for another process's lease before it fails with
   * `STORE_LEASE_TIMEOUT`, in milliseconds (at most 86,400,000). Default 90,000.
   */
  readonly leaseWaitMs?: number | undefined;
}

/** Default of {@link SqliteConnectionStoreOptions.leaseMs}. */
export const DEFAULT_STORE_LEASE_MS = 60_000;
/** Default of {@link SqliteConnectionStoreOptions.leaseWaitMs}. */
export const DEFAULT_STORE_LEASE_WAIT_MS = 90_000;

const OPTION_KEYS: ReadonlySet<string> = new Set([
  'path',
  'key',
  'previousKeys',
  'leaseMs',
  'leaseWaitMs',
]);
/** Options that counted seconds (now milliseconds, named `…Ms`). */
const RENAMED_KEYS: Readonly<Record<string, string>> = Object.freeze({
  leaseSeconds: 'leaseMs',
  leaseWaitSeconds: 'leaseWaitMs',
});

/** The schema version this package writes. */
export const SQLITE_STORE_SCHEMA_VERSION = 3;

/** A migration step: SQL, or a function run inside the migration transaction. */
type Migration = string | ((store: { reencryptLegacy(): void; exec(sql: string): void }) => void);

const MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE connections (
     id TEXT PRIMARY KEY NOT NULL,
     url TEXT NOT NULL,
     issuer TEXT,
     resource TEXT,
     client_id TEXT,
     token_auth_method TEXT,
     redirect_uri TEXT,
     expires_at INTEGER,
     scope TEXT,
     authorization_attempts INTEGER,
     key_id TEXT NOT NULL,
     secrets BLOB NOT NULL,
     updated_at INTEGER NOT NULL
   ) STRICT`,
  'ALTER TABLE connections ADD COLUMN last_authorization_at INTEGER',
  // v3: every plain column is authenticated (bound into the AES-GCM associated data), and
  // cross-process single-flight leases.
  (step) => {
    step.exec(
      `CREATE TABLE leases (
         name TEXT PRIMARY KEY NOT NULL,
         holder TEXT NOT NULL,
         expires_at INTEGER NOT NULL
       ) STRICT`,
    );
    step.reencryptLegacy();
  },
];

/** The associated data of schema 1 and 2 records: the id only (read once, by the migration). */
function legacyAad(id: string): Buffer {
  return Buffer.from(`toolfence/connection-store/v1\u0000${id}`, 'utf8');
}

const LEGACY_VERSION_BYTE = 1;

function milliseconds(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > 86_400_000) {
    throw new StoreRecordError(
      `${name} must be a number of milliseconds above 0, at most 86400000`,
      {
        details: { option: name },
      },
    );
  }
  return value;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A {@link ConnectionStore} on SQLite (`better-sqlite3` 12, an optional peer dependency). Secret
 * fields are encrypted with AES-256-GCM under the host's key; the associated data binds every
 * plain column, so a record whose issuer, resource or client was changed in the file fails to
 * decrypt (`STORE_DECRYPTION_FAILED`) before anything is sent. Updates run in one transaction, so
 * a failed refresh never loses the stored token. `singleFlight` holds a lease row, so processes
 * sharing the file refresh one connection one at a time.
 */
export class SqliteConnectionStore implements ConnectionStore {
  readonly #db: Database.Database;
  readonly #key: Key;
  readonly #keys: ReadonlyMap<string, Key>;
  readonly #flights = new SingleFlight();
  readonly #leaseMs: number;
  readonly #leaseWaitMs: number;
  readonly #holder = randomUUID();

  /**
   * Opens (and creates or migrates) the database.
   * @throws {StoreRecordError} for a bad or unknown option.
   * @throws {StoreKeyError} for a malformed key or one that does not match the data.
   * @throws {StoreSchemaError} for a database written by a newer version.
   */
  constructor(options: SqliteConnectionStoreOptions) {
    if (typeof options?.path !== 'string' || options.path.length === 0) {
      throw new StoreRecordError('path must be a non-empty string', {
        details: { option: 'path' },
      });
    }
    for (const name of Object.keys(options)) {
      const renamedTo = Object.hasOwn(RENAMED_KEYS, name) ? RENAMED_KEYS[name] : undefined;
      if (renamedTo !== undefined) {
        throw new StoreRecordError(renamedOptionMessage('SqliteConnectionStore', name, renamedTo), {
          details: { option: name },
        });
      }
      if (!OPTION_KEYS.has(name)) {
        throw new StoreRecordError(
          `unknown option "${name}"; accepted: ${[...OPTION_KEYS].join(', ')}`,
          { details: { option: name } },
        );
      }
    }
    this.#leaseMs = milliseconds(options.leaseMs, 'leaseMs', DEFAULT_STORE_LEASE_MS);
    this.#leaseWaitMs = milliseconds(
      options.leaseWaitMs,
      'leaseWaitMs',
      DEFAULT_STORE_LEASE_WAIT_MS,
    );
    this.#key = keyOf(options.key, 'key');
    const keys = new Map<string, Key>([[this.#key.id, this.#key]]);
    for (const [index, previous] of (options.previousKeys ?? []).entries()) {
      const key = keyOf(previous, `previousKeys[${index}]`);
      keys.set(key.id, key);
    }
    this.#keys = keys;
    const Driver = loadDriver();
    this.#db = new Driver(options.path);
    try {
      this.#db.pragma('journal_mode = WAL');
      this.#db.pragma('busy_timeout = 5000');
      this.#migrate();
    } catch (error) {
      this.#db.close();
      throw error;
    }
  }

  #migrate(): void {
    const version = this.#db.pragma('user_version', { simple: true }) as number;
    if (version > MIGRATIONS.length) {
      throw new StoreSchemaError('the database was written by a newer version of the store', {
        details: { found: version, supported: MIGRATIONS.length },
      });
    }
    if (version > 0) this.#checkKeys();
    const step = {
      exec: (sql: string) => {
        this.#db.exec(sql);
      },
      reencryptLegacy: () => {
        this.#reencryptLegacy();
      },
    };
    const apply = this.#db.transaction(() => {
      for (let index = version; index < MIGRATIONS.length; index += 1) {
        const migration = MIGRATIONS[index] as Migration;
        if (typeof migration === 'string') this.#db.exec(migration);
        else migration(step);
      }
      this.#db.pragma(`user_version = ${MIGRATIONS.length}`);
    });
    if (version < MIGRATIONS.length) apply.immediate();
  }

  /**
   * Schema 2 to 3: decrypts every record under its old associated data (the id only) and
   * re-encrypts it under the current key bound to all its plain columns. Columns changed before
   * the migration cannot be detected; from now on any change is.
   */
  #reencryptLegacy(): void {
    const rows = this.#db.prepare('SELECT * FROM connections').all() as Row[];
    for (const row of rows) {
      const secrets = this.#decrypt(row, true);
      const next = { ...row, key_id: this.#key.id };
      this.#db
        .prepare('UPDATE connections SET key_id = ?, secrets = ? WHERE id = ?')
        .run(next.key_id, this.#encrypt(next, secrets), row.id);
    }
  }

  #checkKeys(): void {
    const rows = this.#db.prepare('SELECT DISTINCT key_id FROM connections').all() as {
      key_id: string;
    }[];
    const unknown = rows.filter((row) => !this.#keys.has(row.key_id));
    if (unknown.length > 0) {
      throw new StoreKeyError(
        'the store holds records encrypted under a key that was not supplied (wrong key?)',
        { details: { unknownKeys: unknown.length } },
      );
    }
  }

  /** Encrypts `secrets` under the current key, bound to the row's plain columns. */
  #encrypt(row: Omit<Row, 'secrets'>, secrets: Secrets): Buffer {
    return sealSecrets(this.#key, row, secrets);
  }

  #decrypt(row: Row, legacy = false): Secrets {
    return openSecrets(
      this.#keys,
      row,
      legacy ? { version: LEGACY_VERSION_BYTE, aad: legacyAad(row.id) } : undefined,
    );
  }

  #read(id: string): ConnectionRecord | undefined {
    const row = this.#db.prepare('SELECT * FROM connections WHERE id = ?').get(id) as
      | Row
      | undefined;
    return row === undefined ? undefined : this.#toRecord(row);
  }

  #toRecord(row: Row): ConnectionRecord {
    return recordOfRow(row, this.#decrypt(row));
  }

  #write(record: ConnectionRecord): ConnectionRecord {
    checkConnectionRecord(record);
    const { row, secrets } = rowOfRecord(record, this.#key.id);
    this.#db
      .prepare(
        `INSERT INTO connections (id, url, issuer, resource, client_id, token_auth_method,
           redirect_uri, expires_at, scope, authorization_attempts, last_authorization_at, key_id,
           secrets, updated_at)
         VALUES (@id, @url, @issuer, @resource, @client_id, @token_auth_method, @redirect_uri,
           @expires_at, @scope, @authorization_attempts, @last_authorization_at, @key_id, @secrets,
           @updated_at)
         ON CONFLICT(id) DO UPDATE SET url = excluded.url, issuer = excluded.issuer,
           resource = excluded.resource, client_id = excluded.client_id,
           token_auth_method = excluded.token_auth_method, redirect_uri = excluded.redirect_uri,
           expires_at = excluded.expires_at, scope = excluded.scope,
           authorization_attempts = excluded.authorization_attempts,
           last_authorization_at = excluded.last_authorization_at, key_id = excluded.key_id,
           secrets = excluded.secrets, updated_at = excluded.updated_at`,
      )
      .run({ ...row, secrets: this.#encrypt(row, secrets) });
    return this.#read(record.id) as ConnectionRecord;
  }

  async get(id: string): Promise<ConnectionRecord | undefined> {
    return this.#read(id);
  }

  async put(record: ConnectionRecord): Promise<void> {
    this.#db.transaction(() => this.#write(record)).immediate();
  }

  async update(id: string, change: ConnectionChange): Promise<ConnectionRecord | undefined> {
    return this.#db
      .transaction(() => {
        const current = this.#read(id);
        const next = change(current);
        if (next === undefined) return current;
        if (next.id !== id) {
          throw new StoreRecordError('update must not change the record id', { details: { id } });
        }
        return this.#write(next);
      })
      .immediate();
  }

  async delete(id: string): Promise<boolean> {
    return this.#db.prepare('DELETE FROM connections WHERE id = ?').run(id).changes > 0;
  }

  async list(): Promise<string[]> {
    const rows = this.#db.prepare('SELECT id FROM connections ORDER BY id').all() as {
      id: string;
    }[];
    return rows.map((row) => row.id);
  }

  /**
   * Runs `task` once per key at a time across every process that opened this database file:
   * callers in this process share one run; another process waits for the lease (polling), then
   * runs its own task, which should reread the record (a refresh finds the rotated tokens). A
   * lease expires after `leaseMs`, so a crashed holder blocks others for at most that long.
   * @throws {StoreLeaseTimeoutError} when another process held the lease past `leaseWaitMs`.
   */
  singleFlight<T>(key: string, task: () => Promise<T>): Promise<T> {
    return this.#flights.run(key, async () => {
      await this.#acquire(key);
      try {
        return await task();
      } finally {
        this.#release(key);
      }
    });
  }

  /** Takes the lease row for `name` in a `BEGIN IMMEDIATE` transaction, waiting while it is held. */
  async #acquire(name: string): Promise<void> {
    const deadline = Date.now() + this.#leaseWaitMs;
    const take = this.#db.transaction((now: number): boolean => {
      const lease = this.#db
        .prepare('SELECT holder, expires_at FROM leases WHERE name = ?')
        .get(name) as { holder: string; expires_at: number } | undefined;
      if (lease !== undefined && lease.holder !== this.#holder && lease.expires_at > now) {
        return false;
      }
      this.#db
        .prepare(
          `INSERT INTO leases (name, holder, expires_at) VALUES (?, ?, ?)
           ON CONFLICT(name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at`,
        )
        .run(name, this.#holder, now + this.#leaseMs);
      return true;
    });
    for (let wait = 10; ; wait = Math.min(wait * 2, 100)) {
      if (take.immediate(Date.now())) return;
      if (Date.now() >= deadline) {
        throw new StoreLeaseTimeoutError(
          'another process held the refresh lease longer than leaseWaitMs',
          { details: { leaseWaitMs: this.#leaseWaitMs } },
        );
      }
      await sleep(wait + Math.floor(Math.random() * wait));
    }
  }

  #release(name: string): void {
    try {
      this.#db.prepare('DELETE FROM leases WHERE name = ? AND holder = ?').run(name, this.#holder);
    } catch {
      // A closed database: the lease expires on its own.
    }
  }

  /**
   * Re-encrypts every record under the current key in one transaction. Afterwards the previous
   * keys can be dropped. Returns the number of records rewritten.
   */
  rotateKey(): number {
    return this.#db
      .transaction(() => {
        const rows = this.#db
          .prepare('SELECT * FROM connections WHERE key_id <> ?')
          .all(this.#key.id) as Row[];
        for (const row of rows) {
          const secrets = this.#decrypt(row);
          this.#db
            .prepare('UPDATE connections SET key_id = ?, secrets = ? WHERE id = ?')
            .run(this.#key.id, this.#encrypt(row, secrets), row.id);
        }
        return rows.length;
      })
      .immediate();
  }

  /** Closes the database. */
  close(): void {
    this.#db.close();
  }
}
