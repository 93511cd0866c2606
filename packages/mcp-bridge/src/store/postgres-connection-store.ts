import { createHash } from 'node:crypto';
import {
  type ConnectionChange,
  type ConnectionRecord,
  type ConnectionStore,
  checkConnectionRecord,
  SingleFlight,
} from './connection-store.js';
import {
  isPostgresTargetProblem,
  type PostgresTlsMode,
  postgresConnectionConfig,
  postgresTargetOf,
  postgresTlsModeOf,
} from './postgres-target.js';
import {
  type StoreKey as Key,
  storeKeyOf as keyOf,
  openSecrets,
  RECORD_VERSION_BYTE,
  type StoredRow as Row,
  recordAad,
  recordOfRow,
  rowOfRecord,
  type StoredSecrets as Secrets,
  sealSecrets,
} from './record-cipher.js';
import {
  StoreDecryptionError,
  StoreDriverError,
  StoreKeyError,
  StoreLeaseTimeoutError,
  StoreRecordError,
  StoreSchemaError,
  StoreUnavailableError,
} from './store-errors.js';

/** How the store talks TLS to PostgreSQL. */
export type PostgresSslMode = PostgresTlsMode;

/** Options of {@link PostgresConnectionStore}. Unknown keys are refused. */
export interface PostgresConnectionStoreOptions {
  /**
   * A `postgres://` or `postgresql://` URL (user, password, host, port, database), read as `pg`
   * reads it: a `host` or `port` query parameter wins over the URL's, an empty host means
   * `PGHOST`, then `localhost`. Its query may carry only `host`, `port`, `user`, `password`,
   * `application_name`, `fallback_application_name`, `options` and `client_encoding` (no
   * `ssl*`: use {@link sslMode}; no `hostaddr`, no host list). Never logged or put in an error.
   */
  readonly connectionString: string;
  /** The current AES-256-GCM key: exactly 32 bytes, from the host's secret storage. */
  readonly key: Uint8Array;
  /** Older keys still accepted for reading, during a key rotation. */
  readonly previousKeys?: readonly Uint8Array[] | undefined;
  /** Connections in the pool used for reads and writes (1 to 100). Default 10. */
  readonly poolSize?: number | undefined;
  /**
   * Longest time one statement (or a wait for a row being updated elsewhere) may take, in
   * milliseconds; past it the operation fails with `STORE_UNAVAILABLE`. Default 5,000.
   */
  readonly statementTimeoutMs?: number | undefined;
  /**
   * Longest time opening a connection, or waiting for a free one of the pool, may take, in
   * milliseconds; then `STORE_UNAVAILABLE`. Default 10,000.
   */
  readonly connectTimeoutMs?: number | undefined;
  /**
   * Longest time a `singleFlight` lock (a token refresh) is held, in milliseconds: the server
   * ends the holder's lock session then, so a hung holder cannot block the others for longer (a
   * killed holder's lock is released at once, when its connection drops). Default 60,000.
   */
  readonly leaseMs?: number | undefined;
  /**
   * The lock timeout: how long `singleFlight` waits for another replica's lock before it fails
   * with `STORE_LEASE_TIMEOUT`, in milliseconds. Default 90,000.
   */
  readonly leaseWaitMs?: number | undefined;
  /**
   * TLS: `verify-full` (encrypt, check the certificate chain and host name), `require` (encrypt,
   * no certificate check) or `disable`. Default `verify-full`, except `disable` when the host
   * `pg` will connect to (after the `host` parameter and `PGHOST`) is `localhost`, a literal
   * 127.0.0.0/8 or `::1` address, or a Unix socket path.
   */
  readonly sslMode?: PostgresSslMode | undefined;
  /** PEM certificate(s) of the CA that signs the server's certificate (for `verify-full`). */
  readonly sslCa?: string | undefined;
  /** Schema holding the tables, created when missing. Default `public`. */
  readonly schema?: string | undefined;
  /** Prefix of the table names (`<prefix>connections`, `<prefix>store_version`). Default `toolfence_`. */
  readonly tablePrefix?: string | undefined;
}

/** Default of {@link PostgresConnectionStoreOptions.poolSize}. */
export const DEFAULT_POSTGRES_POOL_SIZE = 10;
/** Default of {@link PostgresConnectionStoreOptions.statementTimeoutMs}. */
export const DEFAULT_POSTGRES_STATEMENT_TIMEOUT_MS = 5_000;
/** Default of {@link PostgresConnectionStoreOptions.connectTimeoutMs}. */
export const DEFAULT_POSTGRES_CONNECT_TIMEOUT_MS = 10_000;
/** Default of {@link PostgresConnectionStoreOptions.leaseMs}. */
export const DEFAULT_POSTGRES_LEASE_MS = 60_000;
/** Default of {@link PostgresConnectionStoreOptions.leaseWaitMs}. */
export const DEFAULT_POSTGRES_LEASE_WAIT_MS = 90_000;
/**
 * The schema version this package writes into `<prefix>store_version`: 2 since the secrets are
 * bound to their table (blob version 4); opening a version-1 store rewrites its rows once.
 */
export const POSTGRES_STORE_SCHEMA_VERSION = 2;

/** Blob version byte of PostgreSQL rows bound to their table. */
const TABLE_BOUND_VERSION = 4;

const OPTION_KEYS: ReadonlySet<string> = new Set([
  'connectionString',
  'key',
  'previousKeys',
  'poolSize',
  'statementTimeoutMs',
  'connectTimeoutMs',
  'leaseMs',
  'leaseWaitMs',
  'sslMode',
  'sslCa',
  'schema',
  'tablePrefix',
]);

// The part of `pg` this store uses, declared here so the published types need no `@types/pg`.
interface QueryResult {
  readonly rows: Record<string, unknown>[];
  readonly rowCount: number | null;
}
interface Queryable {
  query(text: string, values?: readonly unknown[]): Promise<QueryResult>;
}
interface PoolClient extends Queryable {
  release(error?: Error | boolean): void;
}
interface Pool extends Queryable {
  connect(): Promise<PoolClient>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
}
interface Client extends Queryable {
  connect(): Promise<void>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
}
interface Driver {
  readonly Pool: new (config: Record<string, unknown>) => Pool;
  readonly Client: new (config: Record<string, unknown>) => Client;
}

let driver: Promise<Driver> | undefined;

/** Loads the optional peer `pg` on first use, with a clear error when it is missing. */
function loadDriver(): Promise<Driver> {
  // A computed specifier: `pg` is optional and ships no types of its own.
  const name = 'pg';
  driver ??= import(name).then(
    (module: Record<string, unknown>) => (module.default ?? module) as Driver,
    (error: unknown) => {
      driver = undefined;
      throw new StoreDriverError(
        'PostgresConnectionStore needs the optional peer dependency pg@8; install it with `npm install pg@8`',
        { details: { driver: 'pg' }, cause: error },
      );
    },
  );
  return driver;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,39}$/;

function milliseconds(value: unknown, name: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isSafeInteger(value) || (value as number) < 1 || (value as number) > max) {
    throw new StoreRecordError(
      `${name} must be an integer number of milliseconds from 1 to ${max}`,
      {
        details: { option: name },
      },
    );
  }
  return value as number;
}

/** A number column as pg returns it (`bigint` comes back as a string). */
function numberOf(value: unknown): number | null {
  if (value === null || value === undefined) return null;
  return Number(value);
}

/** A 64-bit advisory lock id for `name`, as a decimal string (`bigint`). */
function lockId(name: string): string {
  return createHash('sha256').update(name).digest().readBigInt64BE(0).toString();
}

function sqlState(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** Wraps a driver or server failure: the message names what failed, never the URL or data. */
function unavailable(action: string, error: unknown): Error {
  if (
    StoreRecordError.isInstance(error) ||
    StoreKeyError.isInstance(error) ||
    StoreDecryptionError.isInstance(error) ||
    StoreSchemaError.isInstance(error) ||
    StoreDriverError.isInstance(error) ||
    StoreUnavailableError.isInstance(error) ||
    StoreLeaseTimeoutError.isInstance(error)
  ) {
    return error;
  }
  const state = sqlState(error);
  return new StoreUnavailableError(
    `the PostgreSQL connection store could not ${action}${state === '57014' ? ' (statement timeout)' : ''}`,
    { details: state === undefined ? { action } : { action, sqlState: state }, cause: error },
  );
}

interface Settings {
  /** Host, port, credentials and TLS for `pg`, from {@link postgresConnectionConfig}. */
  readonly connection: Record<string, unknown>;
  readonly poolSize: number;
  readonly statementTimeoutMs: number;
  readonly connectTimeoutMs: number;
  readonly leaseMs: number;
  readonly leaseWaitMs: number;
  readonly schema: string;
  readonly connections: string;
  readonly version: string;
  readonly lockPrefix: string;
  /** `<schema>.<prefix>connections`, bound into every record's associated data. */
  readonly tableName: string;
}

function settingsOf(options: PostgresConnectionStoreOptions): Settings {
  if (typeof options !== 'object' || options === null) {
    throw new StoreRecordError('options must be an object', { details: { option: 'options' } });
  }
  for (const name of Object.keys(options)) {
    if (!OPTION_KEYS.has(name)) {
      throw new StoreRecordError(
        `unknown option "${name}"; accepted: ${[...OPTION_KEYS].join(', ')}`,
        { details: { option: name } },
      );
    }
  }
  const target = postgresTargetOf(options.connectionString);
  if (isPostgresTargetProblem(target)) {
    throw new StoreRecordError(`connectionString ${target.message}`, {
      details: { option: 'connectionString', parameter: target.parameter },
    });
  }
  if (
    options.sslMode !== undefined &&
    !['disable', 'require', 'verify-full'].includes(options.sslMode)
  ) {
    throw new StoreRecordError("sslMode must be 'disable', 'require' or 'verify-full'", {
      details: { option: 'sslMode' },
    });
  }
  if (options.sslCa !== undefined && typeof options.sslCa !== 'string') {
    throw new StoreRecordError('sslCa must be a PEM string', { details: { option: 'sslCa' } });
  }
  const connection = postgresConnectionConfig(
    target,
    postgresTlsModeOf(target, options.sslMode),
    options.sslCa,
  );
  const schema = options.schema ?? 'public';
  const prefix = options.tablePrefix ?? 'toolfence_';
  if (typeof schema !== 'string' || !IDENTIFIER.test(schema)) {
    throw new StoreRecordError(
      'schema must be a lower-case SQL identifier: a-z, 0-9 and _, at most 40 characters',
      { details: { option: 'schema' } },
    );
  }
  if (typeof prefix !== 'string' || !(prefix === '' || IDENTIFIER.test(prefix))) {
    throw new StoreRecordError(
      'tablePrefix must be empty or a lower-case SQL identifier: a-z, 0-9 and _, at most 40 characters',
      { details: { option: 'tablePrefix' } },
    );
  }
  const poolSize = options.poolSize ?? DEFAULT_POSTGRES_POOL_SIZE;
  if (!Number.isSafeInteger(poolSize) || poolSize < 1 || poolSize > 100) {
    throw new StoreRecordError('poolSize must be an integer from 1 to 100', {
      details: { option: 'poolSize' },
    });
  }
  const day = 86_400_000;
  return {
    connection,
    poolSize,
    statementTimeoutMs: milliseconds(
      options.statementTimeoutMs,
      'statementTimeoutMs',
      DEFAULT_POSTGRES_STATEMENT_TIMEOUT_MS,
      day,
    ),
    connectTimeoutMs: milliseconds(
      options.connectTimeoutMs,
      'connectTimeoutMs',
      DEFAULT_POSTGRES_CONNECT_TIMEOUT_MS,
      day,
    ),
    leaseMs: milliseconds(options.leaseMs, 'leaseMs', DEFAULT_POSTGRES_LEASE_MS, day),
    leaseWaitMs: milliseconds(
      options.leaseWaitMs,
      'leaseWaitMs',
      DEFAULT_POSTGRES_LEASE_WAIT_MS,
      day,
    ),
    schema: `"${schema}"`,
    connections: `"${schema}"."${prefix}connections"`,
    version: `"${schema}"."${prefix}store_version"`,
    lockPrefix: `toolfence:${schema}.${prefix}:`,
    tableName: `${schema}.${prefix}connections`,
  };
}

const MIGRATIONS: readonly ((tables: Settings) => string)[] = [
  (tables) => `CREATE TABLE ${tables.connections} (
     id text PRIMARY KEY NOT NULL,
     url text NOT NULL,
     issuer text,
     resource text,
     client_id text,
     token_auth_method text,
     redirect_uri text,
     expires_at bigint,
     scope text,
     authorization_attempts integer,
     last_authorization_at bigint,
     key_id text NOT NULL,
     secrets bytea NOT NULL,
     updated_at bigint NOT NULL
   )`,
];

const COLUMNS =
  'id, url, issuer, resource, client_id, token_auth_method, redirect_uri, expires_at, scope, authorization_attempts, last_authorization_at, key_id, secrets, updated_at';

function rowOf(value: Record<string, unknown>): Row {
  return {
    id: value.id as string,
    url: value.url as string,
    issuer: (value.issuer as string | null) ?? null,
    resource: (value.resource as string | null) ?? null,
    client_id: (value.client_id as string | null) ?? null,
    token_auth_method: (value.token_auth_method as string | null) ?? null,
    redirect_uri: (value.redirect_uri as string | null) ?? null,
    expires_at: numberOf(value.expires_at),
    scope: (value.scope as string | null) ?? null,
    authorization_attempts: numberOf(value.authorization_attempts),
    last_authorization_at: numberOf(value.last_authorization_at),
    key_id: value.key_id as string,
    secrets: value.secrets as Buffer,
    updated_at: numberOf(value.updated_at) as number,
  };
}

/**
 * A {@link ConnectionStore} on PostgreSQL (`pg` 8, an optional peer dependency loaded on first
 * use), for several hosts or gateway replicas sharing their OAuth connections. Secret fields are
 * encrypted with AES-256-GCM under the host's key; the associated data binds every plain column
 * and the table (`<schema>.<prefix>connections`), so a record whose issuer, resource or client
 * was changed in the database, or that was copied in from another table, fails to decrypt
 * (`STORE_DECRYPTION_FAILED`) before anything is sent. A record under a key that was not
 * supplied fails alone (`STORE_KEY_INVALID` naming its id). Not detected: an older copy of the
 * same record put back in the same table (a replay restores a spent refresh token). Updates are transactions serialized per
 * connection id, so a failed refresh never loses the stored token. `singleFlight` holds a
 * PostgreSQL advisory lock for the task, so one replica refreshes a connection at a time; the
 * others wait for it (up to `leaseWaitMs`) and then reread the rotated tokens.
 *
 * Open it with {@link PostgresConnectionStore.open}, which connects and migrates (or the
 * constructor, which does so on first use); end it with {@link PostgresConnectionStore.close}.
 */
export class PostgresConnectionStore implements ConnectionStore {
  readonly #settings: Settings;
  readonly #key: Key;
  readonly #keys: ReadonlyMap<string, Key>;
  readonly #flights = new SingleFlight();
  #pool: Pool | undefined;
  #ready: Promise<void> | undefined;
  #closed = false;

  /**
   * Checks the options; connects and migrates on first use (see {@link open}).
   * @throws {StoreRecordError} for a bad or unknown option.
   * @throws {StoreKeyError} for a malformed key.
   */
  constructor(options: PostgresConnectionStoreOptions) {
    this.#settings = settingsOf(options);
    this.#key = keyOf(options.key, 'key');
    const keys = new Map<string, Key>([[this.#key.id, this.#key]]);
    if (options.previousKeys !== undefined && !Array.isArray(options.previousKeys)) {
      throw new StoreKeyError('previousKeys must be an array of 32-byte keys', {
        details: { option: 'previousKeys' },
      });
    }
    for (const [index, previous] of (options.previousKeys ?? []).entries()) {
      const key = keyOf(previous, `previousKeys[${index}]`);
      keys.set(key.id, key);
    }
    this.#keys = keys;
  }

  /**
   * Creates the store, connects, creates or migrates its tables and checks the keys.
   * @throws {StoreDriverError} when `pg` is not installed.
   * @throws {StoreUnavailableError} when the server cannot be reached or refuses the login.
   * @throws {StoreKeyError} when the table holds records and none is under a supplied key.
   * @throws {StoreSchemaError} for tables written by a newer version of this package.
   */
  static async open(options: PostgresConnectionStoreOptions): Promise<PostgresConnectionStore> {
    const store = new PostgresConnectionStore(options);
    try {
      await store.ready();
    } catch (error) {
      await store.close();
      throw error;
    }
    return store;
  }

  /** Connects and migrates, once; every operation awaits it. */
  ready(): Promise<void> {
    if (this.#closed) {
      return Promise.reject(
        new StoreUnavailableError('the PostgreSQL connection store is closed', {
          details: { action: 'use a closed store' },
        }),
      );
    }
    this.#ready ??= this.#open().catch(async (error: unknown) => {
      // A failed start (server down, wrong key) is retried by the next operation.
      this.#ready = undefined;
      const pool = this.#pool;
      this.#pool = undefined;
      await pool?.end().catch(() => undefined);
      throw error;
    });
    return this.#ready;
  }

  async #open(): Promise<void> {
    const pg = await loadDriver();
    const settings = this.#settings;
    const pool = new pg.Pool({
      max: settings.poolSize,
      connectionTimeoutMillis: settings.connectTimeoutMs,
      statement_timeout: settings.statementTimeoutMs,
      lock_timeout: settings.statementTimeoutMs,
      application_name: 'toolfence-connection-store',
      ...settings.connection,
    });
    // An idle pooled connection the server ends is dropped by the pool; the error is not fatal.
    pool.on('error', () => undefined);
    this.#pool = pool;
    await this.#transaction('migrate the tables', async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [
        lockId(`${settings.lockPrefix}migrate`),
      ]);
      // DDL only when something is missing or old: a user with only SELECT/INSERT/UPDATE/DELETE
      // on the tables (and USAGE on the schema) opens an up-to-date store.
      const existing = await client.query('SELECT to_regclass($1) AS version_table', [
        settings.version,
      ]);
      let version = 0;
      if (existing.rows[0]?.version_table !== null) {
        const found = await client.query(`SELECT version FROM ${settings.version}`);
        version = Number(found.rows[0]?.version ?? 0);
      }
      if (version > POSTGRES_STORE_SCHEMA_VERSION) {
        throw new StoreSchemaError('the database was written by a newer version of the store', {
          details: { found: version, supported: POSTGRES_STORE_SCHEMA_VERSION },
        });
      }
      if (version < MIGRATIONS.length) {
        const schema = await client.query('SELECT to_regnamespace($1) AS schema', [
          settings.schema,
        ]);
        if (schema.rows[0]?.schema === null) {
          await client.query(`CREATE SCHEMA IF NOT EXISTS ${settings.schema}`);
        }
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${settings.version} (
             singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
             version integer NOT NULL
           )`,
        );
        for (let index = version; index < MIGRATIONS.length; index += 1) {
          await client.query((MIGRATIONS[index] as (tables: Settings) => string)(settings));
        }
      }
      // A wrong key is refused before anything is rewritten: records exist and none is under a
      // supplied key. A record under another key among readable ones fails alone, when read.
      const keys = await client.query(`SELECT DISTINCT key_id FROM ${settings.connections}`);
      if (keys.rows.length > 0 && !keys.rows.some((row) => this.#keys.has(row.key_id as string))) {
        throw new StoreKeyError(
          'the store holds records encrypted under a key that was not supplied (wrong key?)',
          { details: { unknownKeys: keys.rows.length } },
        );
      }
      if (version < POSTGRES_STORE_SCHEMA_VERSION) {
        await this.#bindToTable(client);
        await client.query(
          `INSERT INTO ${settings.version} (singleton, version) VALUES (true, $1)
           ON CONFLICT (singleton) DO UPDATE SET version = excluded.version`,
          [POSTGRES_STORE_SCHEMA_VERSION],
        );
      }
    });
  }

  /**
   * Schema 1 to 2: re-encrypts every readable record (blob version 3) bound to this table
   * (blob version 4), under the key it was under. A record under a key not supplied now, or one
   * that fails decryption, is left as it is and fails alone when read.
   */
  async #bindToTable(client: Queryable): Promise<void> {
    const result = await client.query(
      `SELECT ${COLUMNS} FROM ${this.#settings.connections} FOR UPDATE`,
    );
    for (const value of result.rows) {
      const row = rowOf(value);
      const key = this.#keys.get(row.key_id);
      if (key === undefined || row.secrets?.[0] !== RECORD_VERSION_BYTE) continue;
      let secrets: Secrets;
      try {
        secrets = openSecrets(this.#keys, row);
      } catch {
        continue;
      }
      await client.query(`UPDATE ${this.#settings.connections} SET secrets = $1 WHERE id = $2`, [
        sealSecrets(key, row, secrets, this.#layout),
        row.id,
      ]);
    }
  }

  /** Blob version 4: the v3 associated data, bound to this store's table. */
  readonly #layout = {
    version: TABLE_BOUND_VERSION,
    aadOf: (row: Omit<Row, 'secrets'>): Buffer =>
      Buffer.from(
        JSON.stringify([
          'toolfence/connection-store/postgres/v4',
          this.#settings.tableName,
          recordAad(row).toString('utf8'),
        ]),
        'utf8',
      ),
  };

  async #query(action: string, text: string, values?: readonly unknown[]): Promise<QueryResult> {
    await this.ready();
    try {
      return await (this.#pool as Pool).query(text, values);
    } catch (error) {
      throw unavailable(action, error);
    }
  }

  /** Runs `body` in one transaction on one pooled connection; rolls back when it throws. */
  async #transaction<T>(action: string, body: (client: Queryable) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await (this.#pool as Pool).connect();
    } catch (error) {
      throw unavailable(action, error);
    }
    // Driver failures become STORE_UNAVAILABLE; an error of `body` (a change that threw) is
    // rethrown as it is, after the rollback.
    const guarded: Queryable = {
      query: (text, values) =>
        client.query(text, values).catch((error: unknown) => {
          throw unavailable(action, error);
        }),
    };
    let broken = false;
    try {
      await guarded.query('BEGIN');
      const result = await body(guarded);
      await guarded.query('COMMIT');
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch {
        broken = true;
      }
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /** Encrypts `secrets` under the current key, bound to the row's plain columns. */
  #encrypt(row: Omit<Row, 'secrets'>, secrets: Secrets): Buffer {
    return sealSecrets(this.#key, row, secrets, this.#layout);
  }

  /** Decrypts a record bound to this table; a copy from another table fails. */
  #decrypt(row: Row): Secrets {
    return openSecrets(this.#keys, row, {
      version: TABLE_BOUND_VERSION,
      aad: this.#layout.aadOf(row),
    });
  }

  #toRecord(row: Row): ConnectionRecord {
    return recordOfRow(row, this.#decrypt(row));
  }

  async #read(client: Queryable, id: string, lock = false): Promise<ConnectionRecord | undefined> {
    const result = await client.query(
      `SELECT ${COLUMNS} FROM ${this.#settings.connections} WHERE id = $1${lock ? ' FOR UPDATE' : ''}`,
      [id],
    );
    const row = result.rows[0];
    return row === undefined ? undefined : this.#toRecord(rowOf(row));
  }

  async #write(client: Queryable, record: ConnectionRecord): Promise<ConnectionRecord> {
    checkConnectionRecord(record);
    const { row, secrets } = rowOfRecord(record, this.#key.id);
    const secretsBlob = this.#encrypt(row, secrets);
    await client.query(
      `INSERT INTO ${this.#settings.connections} (${COLUMNS})
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
       ON CONFLICT (id) DO UPDATE SET url = excluded.url, issuer = excluded.issuer,
         resource = excluded.resource, client_id = excluded.client_id,
         token_auth_method = excluded.token_auth_method, redirect_uri = excluded.redirect_uri,
         expires_at = excluded.expires_at, scope = excluded.scope,
         authorization_attempts = excluded.authorization_attempts,
         last_authorization_at = excluded.last_authorization_at, key_id = excluded.key_id,
         secrets = excluded.secrets, updated_at = excluded.updated_at`,
      [
        row.id,
        row.url,
        row.issuer,
        row.resource,
        row.client_id,
        row.token_auth_method,
        row.redirect_uri,
        row.expires_at,
        row.scope,
        row.authorization_attempts,
        row.last_authorization_at,
        row.key_id,
        secretsBlob,
        row.updated_at,
      ],
    );
    return this.#toRecord({ ...row, secrets: secretsBlob });
  }

  /** Reads the record of connection `id`; `undefined` when there is none. */
  async get(id: string): Promise<ConnectionRecord | undefined> {
    const result = await this.#query(
      'read a record',
      `SELECT ${COLUMNS} FROM ${this.#settings.connections} WHERE id = $1`,
      [id],
    );
    const row = result.rows[0];
    return row === undefined ? undefined : this.#toRecord(rowOf(row));
  }

  /** Validates and stores `record` (replacing any with its id), stamping `updatedAt`. */
  async put(record: ConnectionRecord): Promise<void> {
    checkConnectionRecord(record);
    await this.ready();
    await this.#transaction('write a record', async (client) => {
      await this.#write(client, record);
    });
  }

  /**
   * Atomic read-modify-write in one transaction; updates of one id (from any replica) run one
   * at a time, a change that throws writes nothing.
   */
  async update(id: string, change: ConnectionChange): Promise<ConnectionRecord | undefined> {
    await this.ready();
    return this.#transaction('update a record', async (client) => {
      // Serializes updates of this id, including the first one (no row to lock yet).
      await client.query('SELECT pg_advisory_xact_lock($1)', [
        lockId(`${this.#settings.lockPrefix}row:${id}`),
      ]);
      const current = await this.#read(client, id, true);
      const next = change(current);
      if (next === undefined) return current;
      if (next.id !== id) {
        throw new StoreRecordError('update must not change the record id', { details: { id } });
      }
      return this.#write(client, next);
    });
  }

  /** Removes the record of connection `id`; true when there was one. */
  async delete(id: string): Promise<boolean> {
    const result = await this.#query(
      'delete a record',
      `DELETE FROM ${this.#settings.connections} WHERE id = $1`,
      [id],
    );
    return (result.rowCount ?? 0) > 0;
  }

  /** The ids of all stored connections, sorted. */
  async list(): Promise<string[]> {
    const result = await this.#query(
      'list the records',
      `SELECT id FROM ${this.#settings.connections} ORDER BY id COLLATE "C"`,
    );
    return result.rows.map((row) => row.id as string);
  }

  /**
   * Runs `task` once per key at a time across every replica on this database: callers in this
   * process share one run; another replica waits for the lock (up to `leaseWaitMs`), then runs
   * its own task, which should reread the record (a refresh finds the rotated tokens). The lock
   * is a transaction-level advisory lock on a connection of its own, held only while `task`
   * runs: a killed holder's lock is released when its connection drops, and the server ends a
   * holder's lock session after `leaseMs`.
   * @throws {StoreLeaseTimeoutError} when another replica held the lock past `leaseWaitMs`.
   */
  singleFlight<T>(key: string, task: () => Promise<T>): Promise<T> {
    return this.#flights.run(key, async () => {
      const release = await this.#lock(key);
      try {
        return await task();
      } finally {
        await release();
      }
    });
  }

  async #lock(name: string): Promise<() => Promise<void>> {
    await this.ready();
    const pg = await loadDriver();
    const settings = this.#settings;
    const client = new pg.Client({
      connectionTimeoutMillis: settings.connectTimeoutMs,
      // The wait for the lock is bounded by lock_timeout; holding it by the idle timeout.
      statement_timeout: 0,
      lock_timeout: settings.leaseWaitMs,
      idle_in_transaction_session_timeout: settings.leaseMs,
      application_name: 'toolfence-connection-store-lock',
      ...settings.connection,
    });
    // The server ends the session when the lease runs out; that must not crash the process.
    client.on('error', () => undefined);
    try {
      await client.connect();
      await client.query('BEGIN');
      await client.query('SELECT pg_advisory_xact_lock($1)', [
        lockId(`${settings.lockPrefix}flight:${name}`),
      ]);
    } catch (error) {
      await client.end().catch(() => undefined);
      if (sqlState(error) === '55P03') {
        throw new StoreLeaseTimeoutError(
          'another replica held the refresh lock longer than leaseWaitMs',
          { details: { leaseWaitMs: settings.leaseWaitMs }, cause: error },
        );
      }
      throw unavailable('take the refresh lock', error);
    }
    return async () => {
      // COMMIT releases the lock; if the lease ran out, the session is gone and so is the lock.
      await client.query('COMMIT').catch(() => undefined);
      await client.end().catch(() => undefined);
    };
  }

  /**
   * Re-encrypts every record under a previous key under the current key, in one transaction.
   * Afterwards the previous keys can be dropped. A record under a key not supplied is left as it
   * is. Returns the number of records rewritten.
   */
  async rotateKey(): Promise<number> {
    await this.ready();
    return this.#transaction('rotate the key', async (client) => {
      const result = await client.query(
        `SELECT ${COLUMNS} FROM ${this.#settings.connections} WHERE key_id <> $1 FOR UPDATE`,
        [this.#key.id],
      );
      let rewritten = 0;
      for (const value of result.rows) {
        const row = rowOf(value);
        // A record under a key not supplied cannot be read now either: it is left as it is.
        if (!this.#keys.has(row.key_id)) continue;
        const secrets = this.#decrypt(row);
        await client.query(
          `UPDATE ${this.#settings.connections} SET key_id = $1, secrets = $2 WHERE id = $3`,
          [this.#key.id, this.#encrypt(row, secrets), row.id],
        );
        rewritten += 1;
      }
      return rewritten;
    });
  }

  /** Ends the pool's connections; the store cannot be used afterwards. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#ready?.catch(() => undefined);
    const pool = this.#pool;
    this.#pool = undefined;
    await pool?.end().catch(() => undefined);
  }
}
