import type { ConnectionStore } from './connection-store.js';
import {
  PostgresConnectionStore,
  type PostgresConnectionStoreOptions,
} from './postgres-connection-store.js';
import { SqliteConnectionStore } from './sqlite-connection-store.js';
import { StoreRecordError } from './store-errors.js';

/** A persistent store opened by {@link connectionStoreFromUrl}. */
export interface PersistentConnectionStore extends ConnectionStore {
  /** Re-encrypts every record under the current key; returns how many were rewritten. */
  rotateKey(): number | Promise<number>;
  /** Closes the database (file or pool). */
  close(): void | Promise<void>;
}

/** Options of {@link connectionStoreFromUrl}. Unknown keys are refused. */
export interface ConnectionStoreUrlOptions {
  /** The current AES-256-GCM key: exactly 32 bytes, from the host's secret storage. */
  readonly key: Uint8Array;
  /** Older keys still accepted for reading, during a key rotation. */
  readonly previousKeys?: readonly Uint8Array[] | undefined;
  /** Longest time a `singleFlight` lock (a refresh) is held, in milliseconds. Default 60,000. */
  readonly leaseMs?: number | undefined;
  /** How long `singleFlight` waits for another process's lock, in milliseconds. Default 90,000. */
  readonly leaseWaitMs?: number | undefined;
  /** PostgreSQL only: see `PostgresConnectionStoreOptions.poolSize` (`@toolfence/mcp-bridge/postgres-store`). */
  readonly poolSize?: number | undefined;
  /** PostgreSQL only: see `PostgresConnectionStoreOptions.statementTimeoutMs` (`@toolfence/mcp-bridge/postgres-store`). */
  readonly statementTimeoutMs?: number | undefined;
  /** PostgreSQL only: see `PostgresConnectionStoreOptions.connectTimeoutMs` (`@toolfence/mcp-bridge/postgres-store`). */
  readonly connectTimeoutMs?: number | undefined;
  /** PostgreSQL only: see `PostgresConnectionStoreOptions.sslMode` (`@toolfence/mcp-bridge/postgres-store`). */
  readonly sslMode?: 'disable' | 'require' | 'verify-full' | undefined;
  /** PostgreSQL only: see `PostgresConnectionStoreOptions.sslCa` (`@toolfence/mcp-bridge/postgres-store`). */
  readonly sslCa?: string | undefined;
  /** PostgreSQL only: see `PostgresConnectionStoreOptions.schema` (`@toolfence/mcp-bridge/postgres-store`). */
  readonly schema?: string | undefined;
  /** PostgreSQL only: see `PostgresConnectionStoreOptions.tablePrefix` (`@toolfence/mcp-bridge/postgres-store`). */
  readonly tablePrefix?: string | undefined;
}

const COMMON = ['key', 'previousKeys', 'leaseMs', 'leaseWaitMs'] as const;
const POSTGRES_ONLY = [
  'poolSize',
  'statementTimeoutMs',
  'connectTimeoutMs',
  'sslMode',
  'sslCa',
  'schema',
  'tablePrefix',
] as const;
const ACCEPTED: ReadonlySet<string> = new Set([...COMMON, ...POSTGRES_ONLY]);

/**
 * Opens the connection store a URL names, so a host or gateway can take it from its config:
 * `sqlite:<path>` (also `sqlite:///absolute/path`, `sqlite::memory:`) opens a
 * `SqliteConnectionStore` on that file; `postgres://…` or `postgresql://…` opens a
 * `PostgresConnectionStore` (connected and migrated before this resolves). The URL is never put
 * in an error message (it may carry a password).
 * @throws {StoreRecordError} for another scheme, an empty path, an unknown option, or a
 *   PostgreSQL-only option with a `sqlite:` URL.
 */
export async function connectionStoreFromUrl(
  url: string,
  options: ConnectionStoreUrlOptions,
): Promise<PersistentConnectionStore> {
  if (typeof options !== 'object' || options === null) {
    throw new StoreRecordError('options must be an object with at least key', {
      details: { option: 'options' },
    });
  }
  for (const name of Object.keys(options)) {
    if (!ACCEPTED.has(name)) {
      throw new StoreRecordError(
        `unknown option "${name}"; accepted: ${[...ACCEPTED].join(', ')}`,
        { details: { option: name } },
      );
    }
  }
  if (typeof url !== 'string') {
    throw new StoreRecordError('the store URL must be a string', { details: { option: 'url' } });
  }
  if (/^postgres(ql)?:\/\//i.test(url)) {
    const { leaseMs, leaseWaitMs, ...rest } = options;
    const postgres: PostgresConnectionStoreOptions = {
      ...rest,
      connectionString: url,
      ...(leaseMs === undefined ? {} : { leaseMs }),
      ...(leaseWaitMs === undefined ? {} : { leaseWaitMs }),
    };
    return PostgresConnectionStore.open(postgres);
  }
  if (url.startsWith('sqlite:')) {
    const given = POSTGRES_ONLY.find((name) => options[name] !== undefined);
    if (given !== undefined) {
      throw new StoreRecordError(`${given} applies to postgres:// stores only`, {
        details: { option: given },
      });
    }
    let path = url.slice('sqlite:'.length);
    if (path.startsWith('//')) path = path.slice(2);
    if (path.length === 0) {
      throw new StoreRecordError('a sqlite: URL needs a path (sqlite:/var/lib/app/store.db)', {
        details: { option: 'url' },
      });
    }
    const { key, previousKeys, leaseMs, leaseWaitMs } = options;
    return new SqliteConnectionStore({
      path,
      key,
      ...(previousKeys === undefined ? {} : { previousKeys }),
      ...(leaseMs === undefined ? {} : { leaseMs }),
      ...(leaseWaitMs === undefined ? {} : { leaseWaitMs }),
    });
  }
  const scheme = /^([a-z][a-z0-9+.-]{0,20}):/i.exec(url)?.[1];
  throw new StoreRecordError(
    `${scheme === undefined ? 'the store URL has no scheme' : `the store URL scheme "${scheme}:" is not supported`}; use sqlite:<path> or postgres://user:password@host:port/database`,
    { details: { option: 'url', ...(scheme === undefined ? {} : { scheme }) } },
  );
}
