import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type Database from 'better-sqlite3';
import {
  type ConnectionChange,
  type ConnectionRecord,
  type ConnectionStore,
  checkConnectionRecord,
  type PendingAuthorization,
  SingleFlight,
  type TokenAuthMethod,
} from './connection-store.js';
import {
  StoreDecryptionError,
  StoreDriverError,
  StoreKeyError,
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
}

/** The schema version this package writes. */
export const SQLITE_STORE_SCHEMA_VERSION = 2;

const MIGRATIONS: readonly string[] = [
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
];

interface Row {
  id: string;
  url: string;
  issuer: string | null;
  resource: string | null;
  client_id: string | null;
  token_auth_method: string | null;
  redirect_uri: string | null;
  expires_at: number | null;
  scope: string | null;
  authorization_attempts: number | null;
  last_authorization_at: number | null;
  key_id: string;
  secrets: Buffer;
  updated_at: number;
}

interface Secrets {
  clientSecret?: string;
  accessToken?: string;
  refreshToken?: string;
  pending?: PendingAuthorization;
}

interface Key {
  readonly id: string;
  readonly bytes: Buffer;
}

function keyOf(value: unknown, name: string): Key {
  if (!(value instanceof Uint8Array) || value.byteLength !== 32) {
    throw new StoreKeyError(`${name} must be 32 bytes (AES-256)`, { details: { option: name } });
  }
  const bytes = Buffer.from(value);
  const id = createHmac('sha256', bytes).update('toolfence connection-store key id').digest('hex');
  return { id: id.slice(0, 16), bytes };
}

function aad(id: string): Buffer {
  return Buffer.from(`toolfence/connection-store/v1\u0000${id}`, 'utf8');
}

const VERSION_BYTE = 1;

/**
 * A {@link ConnectionStore} on SQLite (`better-sqlite3` 12, an optional peer dependency). Secret
 * fields are encrypted with AES-256-GCM under the host's key, bound to the record id. Updates run
 * in one transaction, so a failed refresh never loses the stored token.
 */
export class SqliteConnectionStore implements ConnectionStore {
  readonly #db: Database.Database;
  readonly #key: Key;
  readonly #keys: ReadonlyMap<string, Key>;
  readonly #flights = new SingleFlight();

  constructor(options: SqliteConnectionStoreOptions) {
    if (typeof options?.path !== 'string' || options.path.length === 0) {
      throw new StoreRecordError('path must be a non-empty string', {
        details: { option: 'path' },
      });
    }
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
      this.#checkKeys();
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
    const apply = this.#db.transaction(() => {
      for (let step = version; step < MIGRATIONS.length; step += 1) {
        this.#db.exec(MIGRATIONS[step] as string);
      }
      this.#db.pragma(`user_version = ${MIGRATIONS.length}`);
    });
    if (version < MIGRATIONS.length) apply.immediate();
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

  #encrypt(id: string, secrets: Secrets): Buffer {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key.bytes, iv);
    cipher.setAAD(aad(id));
    const body = Buffer.concat([cipher.update(JSON.stringify(secrets), 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION_BYTE]), iv, cipher.getAuthTag(), body]);
  }

  #decrypt(row: Row): Secrets {
    const key = this.#keys.get(row.key_id);
    if (key === undefined) {
      throw new StoreKeyError('the record is encrypted under a key that was not supplied', {
        details: { id: row.id },
      });
    }
    const blob = row.secrets;
    try {
      if (blob[0] !== VERSION_BYTE || blob.byteLength < 29) throw new Error('format');
      const decipher = createDecipheriv('aes-256-gcm', key.bytes, blob.subarray(1, 13));
      decipher.setAAD(aad(row.id));
      decipher.setAuthTag(blob.subarray(13, 29));
      const text = Buffer.concat([decipher.update(blob.subarray(29)), decipher.final()]);
      return JSON.parse(text.toString('utf8')) as Secrets;
    } catch {
      throw new StoreDecryptionError('a stored record failed authenticated decryption', {
        details: { id: row.id },
      });
    }
  }

  #read(id: string): ConnectionRecord | undefined {
    const row = this.#db.prepare('SELECT * FROM connections WHERE id = ?').get(id) as
      | Row
      | undefined;
    return row === undefined ? undefined : this.#toRecord(row);
  }

  #toRecord(row: Row): ConnectionRecord {
    const secrets = this.#decrypt(row);
    const record: Record<string, unknown> = {
      id: row.id,
      url: row.url,
      issuer: row.issuer ?? undefined,
      resource: row.resource ?? undefined,
      clientId: row.client_id ?? undefined,
      clientSecret: secrets.clientSecret,
      tokenAuthMethod: (row.token_auth_method ?? undefined) as TokenAuthMethod | undefined,
      redirectUri: row.redirect_uri ?? undefined,
      accessToken: secrets.accessToken,
      refreshToken: secrets.refreshToken,
      expiresAt: row.expires_at ?? undefined,
      scope: row.scope ?? undefined,
      pending: secrets.pending,
      authorizationAttempts: row.authorization_attempts ?? undefined,
      lastAuthorizationAt: row.last_authorization_at ?? undefined,
      updatedAt: row.updated_at,
    };
    for (const name of Object.keys(record)) {
      if (record[name] === undefined) delete record[name];
    }
    return Object.freeze(record as unknown as ConnectionRecord);
  }

  #write(record: ConnectionRecord): ConnectionRecord {
    checkConnectionRecord(record);
    const secrets: Secrets = {};
    if (record.clientSecret !== undefined) secrets.clientSecret = record.clientSecret;
    if (record.accessToken !== undefined) secrets.accessToken = record.accessToken;
    if (record.refreshToken !== undefined) secrets.refreshToken = record.refreshToken;
    if (record.pending !== undefined) secrets.pending = record.pending;
    const updatedAt = Date.now();
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
      .run({
        id: record.id,
        url: record.url,
        issuer: record.issuer ?? null,
        resource: record.resource ?? null,
        client_id: record.clientId ?? null,
        token_auth_method: record.tokenAuthMethod ?? null,
        redirect_uri: record.redirectUri ?? null,
        expires_at: record.expiresAt ?? null,
        scope: record.scope ?? null,
        authorization_attempts: record.authorizationAttempts ?? null,
        last_authorization_at: record.lastAuthorizationAt ?? null,
        key_id: this.#key.id,
        secrets: this.#encrypt(record.id, secrets),
        updated_at: updatedAt,
      });
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

  singleFlight<T>(key: string, task: () => Promise<T>): Promise<T> {
    return this.#flights.run(key, task);
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
            .run(this.#key.id, this.#encrypt(row.id, secrets), row.id);
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
