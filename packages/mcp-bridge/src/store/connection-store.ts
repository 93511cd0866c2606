import { StoreRecordError } from './store-errors.js';

/** How the client authenticates at the token endpoint. */
export type TokenAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none';

/** An authorization flow started for a connection and not yet completed. Secret fields. */
export interface PendingAuthorization {
  /** The `state` sent in the authorize URL; the callback's `state` must equal it. */
  readonly state: string;
  /** The PKCE (S256) verifier sent with the code exchange. */
  readonly codeVerifier: string;
  /** The redirect URI of the authorize request; the code exchange repeats it. */
  readonly redirectUri: string;
  /** The scope requested, if any. */
  readonly scope?: string | undefined;
  /** True when the flow must end in a DPoP-bound token (the record's `dpopKey` signs it). */
  readonly dpop?: boolean | undefined;
  /** Epoch milliseconds. */
  readonly createdAt: number;
}

/**
 * A connection's DPoP (RFC 9449) key pair as a private JWK (EC P-256, with `d`): one per
 * connection, created at the first DPoP token request and kept as long as tokens are bound to it.
 * Secret.
 */
export interface DpopKeyRecord {
  /** The private key as a JWK (`kty: EC`, `crv: P-256`, `x`, `y`, `d`). Secret. */
  readonly privateJwk: Readonly<Record<string, string>>;
}

/** How the access token is presented: `Bearer` (RFC 6750) or `DPoP` (RFC 9449, sender-bound). */
export type AccessTokenType = 'Bearer' | 'DPoP';

/**
 * One record per MCP server connection. `clientSecret`, `accessToken`, `refreshToken`,
 * `pending` and `dpopKey` are secrets: a persistent store must encrypt them, and must
 * authenticate every other field (a changed `issuer` would send secrets elsewhere).
 */
export interface ConnectionRecord {
  /** The host's connection id (1 to 256 characters): the store's key. */
  readonly id: string;
  /** The MCP server URL. */
  readonly url: string;
  /** Issuer identifier of the authorization server the client is registered with. */
  readonly issuer?: string | undefined;
  /** The RFC 8707 resource tokens are requested for (the server URL as its metadata declares it). */
  readonly resource?: string | undefined;
  /** The OAuth client id at `issuer` (given, registered, or a client metadata URL). */
  readonly clientId?: string | undefined;
  /** The client secret, for a confidential client. Secret. */
  readonly clientSecret?: string | undefined;
  /** How the client authenticates at the token endpoint. */
  readonly tokenAuthMethod?: TokenAuthMethod | undefined;
  /** The redirect URI the client uses (the host's callback route). */
  readonly redirectUri?: string | undefined;
  /** The current access token. Secret. */
  readonly accessToken?: string | undefined;
  /** The refresh token, when the server issued one. Secret. */
  readonly refreshToken?: string | undefined;
  /** How `accessToken` is presented; absent means `Bearer`. A `DPoP` token needs `dpopKey`. */
  readonly tokenType?: AccessTokenType | undefined;
  /** The connection's DPoP key pair, when it uses DPoP. Secret. */
  readonly dpopKey?: DpopKeyRecord | undefined;
  /** Access-token expiry, epoch milliseconds. */
  readonly expiresAt?: number | undefined;
  /** Granted scope. */
  readonly scope?: string | undefined;
  /** The authorization flow started and awaiting its callback, if any. Secret. */
  readonly pending?: PendingAuthorization | undefined;
  /**
   * Authorization flows started in a row: the series resets to 0 once no flow has started
   * within the authorization window (`authorizationWindowMs`, default 600,000 ms) of
   * `lastAuthorizationAt`.
   */
  readonly authorizationAttempts?: number | undefined;
  /** Epoch milliseconds when the last authorization flow started. */
  readonly lastAuthorizationAt?: number | undefined;
  /** Epoch milliseconds of the last write. */
  readonly updatedAt?: number | undefined;
}

/** Computes the next record from the current one; `undefined` leaves the record unchanged. */
export type ConnectionChange = (
  current: ConnectionRecord | undefined,
) => ConnectionRecord | undefined;

/** Where connection records live. Implementations must make `update` atomic. */
export interface ConnectionStore {
  /** Reads the record of connection `id`; `undefined` when there is none. */
  get(id: string): Promise<ConnectionRecord | undefined>;
  /**
   * Validates and stores `record` (replacing any with its id), stamping `updatedAt`.
   * @throws {StoreRecordError} when the record has no valid `id` or `url`.
   */
  put(record: ConnectionRecord): Promise<void>;
  /** Atomic read-modify-write; `change` must be synchronous. Returns the resulting record. */
  update(id: string, change: ConnectionChange): Promise<ConnectionRecord | undefined>;
  /** Removes the record of connection `id`; true when there was one. */
  delete(id: string): Promise<boolean>;
  /** The ids of all stored connections, sorted. */
  list(): Promise<string[]>;
  /**
   * Runs `task` once per key at a time; concurrent callers in this process share its result.
   * `SqliteConnectionStore` also excludes other processes on the same database file (a lease).
   */
  singleFlight<T>(key: string, task: () => Promise<T>): Promise<T>;
}

/** Shares one in-flight promise per key (used by the stores for single-flight refresh). */
export class SingleFlight {
  readonly #flights = new Map<string, Promise<unknown>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const running = this.#flights.get(key);
    if (running !== undefined) return running as Promise<T>;
    const flight = (async () => task())().finally(() => {
      this.#flights.delete(key);
    });
    this.#flights.set(key, flight);
    return flight;
  }
}

const SECRET_KEYS = Object.freeze([
  'clientSecret',
  'accessToken',
  'refreshToken',
  'pending',
  'dpopKey',
] as const);

/** The names of the record fields a store must encrypt. */
export const CONNECTION_SECRET_FIELDS: readonly string[] = SECRET_KEYS;

/** Validates a record's shape; stores call it before writing. */
export function checkConnectionRecord(record: ConnectionRecord): ConnectionRecord {
  if (typeof record !== 'object' || record === null)
    throw new StoreRecordError('record must be an object');
  if (typeof record.id !== 'string' || record.id.length === 0 || record.id.length > 256) {
    throw new StoreRecordError('record.id must be a non-empty string of at most 256 characters');
  }
  if (typeof record.url !== 'string' || record.url.length === 0) {
    throw new StoreRecordError('record.url must be a non-empty string');
  }
  if (
    record.tokenType !== undefined &&
    record.tokenType !== 'Bearer' &&
    record.tokenType !== 'DPoP'
  ) {
    throw new StoreRecordError('record.tokenType must be "Bearer" or "DPoP"');
  }
  return record;
}

function clone(record: ConnectionRecord): ConnectionRecord {
  return Object.freeze(structuredClone(record));
}

/** A connection store in memory, for tests and short-lived hosts. */
export class MemoryConnectionStore implements ConnectionStore {
  readonly #records = new Map<string, ConnectionRecord>();
  readonly #flights = new SingleFlight();

  async get(id: string): Promise<ConnectionRecord | undefined> {
    const record = this.#records.get(id);
    return record === undefined ? undefined : clone(record);
  }

  async put(record: ConnectionRecord): Promise<void> {
    checkConnectionRecord(record);
    this.#records.set(record.id, clone({ ...record, updatedAt: Date.now() }));
  }

  async update(id: string, change: ConnectionChange): Promise<ConnectionRecord | undefined> {
    const current = this.#records.get(id);
    const next = change(current === undefined ? undefined : clone(current));
    if (next === undefined) return current === undefined ? undefined : clone(current);
    if (next.id !== id) throw new StoreRecordError('update must not change the record id');
    checkConnectionRecord(next);
    const stored = clone({ ...next, updatedAt: Date.now() });
    this.#records.set(id, stored);
    return clone(stored);
  }

  async delete(id: string): Promise<boolean> {
    return this.#records.delete(id);
  }

  async list(): Promise<string[]> {
    return [...this.#records.keys()].sort();
  }

  singleFlight<T>(key: string, task: () => Promise<T>): Promise<T> {
    return this.#flights.run(key, task);
  }
}

/**
 * Default window in which authorization flows count as one series of attempts: 600,000
 * milliseconds (ten minutes).
 */
export const DEFAULT_AUTHORIZATION_WINDOW_MS = 600_000;
/** @deprecated In seconds; use {@link DEFAULT_AUTHORIZATION_WINDOW_MS}. Removed in the next minor. */
export const DEFAULT_AUTHORIZATION_WINDOW_SECONDS = 600;

/**
 * Authorization flows started in a row: flows count together while each starts within
 * `windowMs` of the previous one; after a quiet window the series starts again at 0.
 */
export function recentAuthorizationAttempts(
  record: ConnectionRecord | undefined,
  now: number,
  windowMs: number,
): number {
  if (record?.lastAuthorizationAt === undefined) return record?.authorizationAttempts ?? 0;
  return now - record.lastAuthorizationAt <= windowMs ? (record.authorizationAttempts ?? 0) : 0;
}
