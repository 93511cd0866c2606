import type { McpToolInfo } from '../client/tool-listing.js';
import {
  importPg,
  isPostgresTargetProblem,
  postgresConnectionConfig,
  postgresTargetOf,
  postgresTlsModeOf,
} from '../store/postgres-target.js';
import { GatewayConfigError, GatewayStateError } from './errors.js';
import {
  acceptAcross,
  acceptKeys,
  type GatewayPinStore,
  ownOf,
  type PendingTool,
  type PinKind,
  type PinRecord,
  type PinReview,
  type PinStoreLimits,
  pinChangedError,
  pinStoreLimits,
  reviewServer,
  type ServerPins,
  splitPinKey,
} from './pin-store.js';

/** Options of {@link PostgresPinStore.open}. Unknown keys are refused. */
export interface PostgresPinStoreOptions {
  /**
   * `postgres://user:password@host:port/database`, read as `pg` reads it (a `host` or `port`
   * query parameter wins; an empty host means `PGHOST`, then `localhost`); the query may carry
   * only `host`, `port`, `user`, `password`, `application_name`, `fallback_application_name`,
   * `options` and `client_encoding`. Never logged or put in an error.
   */
  readonly connectionString: string;
  /**
   * TLS: `disable`, `require` or `verify-full`. Default `disable` when the host `pg` connects to
   * is `localhost`, a literal 127.0.0.0/8 or `::1` address, or a Unix socket; else `verify-full`.
   */
  readonly sslMode?: 'disable' | 'require' | 'verify-full';
  /** A PEM CA bundle for `verify-full` against a private CA. */
  readonly sslCa?: string;
  /** Connections in the pool. Default 2. */
  readonly poolSize?: number;
  /** Milliseconds one statement (or a wait for another replica's row lock) may take. Default 10,000. */
  readonly statementTimeoutMs?: number;
  /** Milliseconds a new connection may take. Default 10,000. */
  readonly connectTimeoutMs?: number;
  /** The table (created when missing): a lower-case SQL identifier. Default `toolfence_gateway_pins`. */
  readonly table?: string;
  /** As `PinStoreLimits.maxDefinitionBytes` of the lock file: default 131,072 (128 KiB). */
  readonly maxDefinitionBytes?: number;
  /** As `PinStoreLimits.maxPendingPerServer` of the lock file: default 1,000. */
  readonly maxPendingPerServer?: number;
}

/** Default table of {@link PostgresPinStore}: `toolfence_gateway_pins`. */
export const DEFAULT_PIN_TABLE = 'toolfence_gateway_pins';

const OPTION_KEYS = [
  'connectionString',
  'sslMode',
  'sslCa',
  'poolSize',
  'statementTimeoutMs',
  'connectTimeoutMs',
  'table',
  'maxDefinitionBytes',
  'maxPendingPerServer',
];
const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;
/** Largest stored pins of one server, in bytes (16 MiB, as the lock file). */
const MAX_SERVER_BYTES = 16 * 1024 * 1024;

interface QueryResult {
  readonly rows: Record<string, unknown>[];
  readonly rowCount: number | null;
}
interface PoolClient {
  query(text: string, values?: readonly unknown[]): Promise<QueryResult>;
  release(error?: Error | boolean): void;
}
interface Pool {
  query(text: string, values?: readonly unknown[]): Promise<QueryResult>;
  connect(): Promise<PoolClient>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

function bad(message: string, option: string): GatewayConfigError {
  return new GatewayConfigError(`gateway.pins: ${message}`, {
    details: { at: 'gateway.pins', option },
  });
}

function positive(value: unknown, name: string, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > max) {
    throw bad(`${name} must be an integer from 1 to ${max}`, name);
  }
  return value;
}

/**
 * The row text of a server's pins; refused (`GATEWAY_STATE`, nothing written) when it is larger
 * than a row is read back (16 MiB): that server's review fails, and the table stays readable.
 */
function rowText(server: string, pins: ServerPins): string {
  const text = JSON.stringify(pins);
  if (Buffer.byteLength(text) > MAX_SERVER_BYTES) {
    throw new GatewayStateError(
      `The pins of server ${JSON.stringify(splitPinKey(server).server)} would be larger than a stored pin row may be (16 MiB), so its listing was not pinned and its tools are not offered. The server lists too many or too large definitions.`,
      { details: { server: splitPinKey(server).server } },
    );
  }
  return text;
}

function parseServerPins(text: unknown): ServerPins {
  if (typeof text !== 'string' || Buffer.byteLength(text) > MAX_SERVER_BYTES) {
    throw new GatewayStateError('A stored pin row is missing or larger than 16 MiB');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new GatewayStateError('A stored pin row is not valid JSON', { cause: error });
  }
  const pins = parsed as ServerPins;
  if (
    typeof pins !== 'object' ||
    pins === null ||
    typeof pins.tools !== 'object' ||
    pins.tools === null ||
    typeof pins.pending !== 'object' ||
    pins.pending === null
  ) {
    throw new GatewayStateError('A stored pin row is not a toolfence pin record');
  }
  return pins;
}

/**
 * The gateway's pins in one PostgreSQL table, so replicas on several machines share them: one
 * row per upstream server holding its pinned and pending definitions (the same decision as the
 * lock file, `reviewServer`). A server's first listing is pinned with an atomic
 * `INSERT … ON CONFLICT DO NOTHING`: when two replicas see a server at once, one insert wins and
 * the other reviews its listing against the winner's pins, so both agree on one pin. Later
 * reviews and acceptances update the row under `SELECT … FOR UPDATE`, one replica at a time.
 * Every write is committed before `review` or `accept` returns, so `save` has nothing to do.
 * `pg` (an optional peer) is loaded on open.
 */
export class PostgresPinStore implements GatewayPinStore {
  readonly #pool: Pool;
  readonly #table: string;
  readonly #cache = new Map<string, ServerPins>();

  readonly #limits: Readonly<Required<PinStoreLimits>>;

  private constructor(pool: Pool, table: string, limits: Readonly<Required<PinStoreLimits>>) {
    this.#limits = limits;
    this.#pool = pool;
    this.#table = table;
  }

  /**
   * Connects, creates the table when missing and reads every server's pins.
   * @throws {GatewayConfigError} for a bad option or URL, or when `pg` is not installed.
   * @throws {GatewayStateError} when the database cannot be reached or the table read.
   */
  static async open(options: PostgresPinStoreOptions): Promise<PostgresPinStore> {
    if (typeof options !== 'object' || options === null) {
      throw bad('options must be an object', 'options');
    }
    for (const key of Object.keys(options)) {
      if (!OPTION_KEYS.includes(key)) {
        throw bad(`unknown option "${key}" (accepted: ${OPTION_KEYS.join(', ')})`, key);
      }
    }
    const target = postgresTargetOf(options.connectionString);
    if (isPostgresTargetProblem(target)) {
      throw bad(`the URL ${target.message}`, target.parameter);
    }
    const sslMode = postgresTlsModeOf(target, options.sslMode);
    if (!['disable', 'require', 'verify-full'].includes(sslMode)) {
      throw bad("sslMode must be 'disable', 'require' or 'verify-full'", 'sslMode');
    }
    if (options.sslCa !== undefined && typeof options.sslCa !== 'string') {
      throw bad('sslCa must be a PEM string', 'sslCa');
    }
    const limits = pinStoreLimits({
      ...(options.maxDefinitionBytes === undefined
        ? {}
        : { maxDefinitionBytes: options.maxDefinitionBytes }),
      ...(options.maxPendingPerServer === undefined
        ? {}
        : { maxPendingPerServer: options.maxPendingPerServer }),
    });
    const table = options.table ?? DEFAULT_PIN_TABLE;
    if (typeof table !== 'string' || !IDENTIFIER.test(table)) {
      throw bad('table must be a lower-case SQL identifier (a-z, 0-9, _)', 'table');
    }
    const poolSize = positive(options.poolSize, 'poolSize', 2, 100);
    const statementTimeoutMs = positive(
      options.statementTimeoutMs,
      'statementTimeoutMs',
      10_000,
      86_400_000,
    );
    const connectTimeoutMs = positive(
      options.connectTimeoutMs,
      'connectTimeoutMs',
      10_000,
      600_000,
    );
    const pg = await importPg<{ Pool: new (config: Record<string, unknown>) => Pool }>(
      (error) =>
        new GatewayConfigError(
          'gateway.pins: a postgres:// pin store needs the optional peer pg@8 (npm install pg@8)',
          { details: { at: 'gateway.pins', peer: 'pg' }, cause: error },
        ),
    );
    const pool = new pg.Pool({
      max: poolSize,
      connectionTimeoutMillis: connectTimeoutMs,
      statement_timeout: statementTimeoutMs,
      lock_timeout: statementTimeoutMs,
      application_name: 'toolfence-gateway-pins',
      ...postgresConnectionConfig(target, sslMode, options.sslCa),
    });
    pool.on('error', () => undefined);
    const store = new PostgresPinStore(pool, table, limits);
    try {
      await store.#transaction('create the pin table', async (client) => {
        // Replicas starting at once: one creates the table, the others wait and find it.
        await client.query("SELECT pg_advisory_xact_lock(hashtext('toolfence-gateway-pins'))");
        await client.query(
          `CREATE TABLE IF NOT EXISTS ${table} (
             server text PRIMARY KEY,
             pins text NOT NULL,
             updated_at timestamptz NOT NULL DEFAULT now()
           )`,
        );
      });
      const rows = await store.#query('read the pins', `SELECT server, pins FROM ${table}`);
      for (const row of rows.rows) {
        store.#cache.set(String(row.server), parseServerPins(row.pins));
      }
    } catch (error) {
      await pool.end().catch(() => undefined);
      throw error;
    }
    return store;
  }

  async #query(action: string, text: string, values?: readonly unknown[]): Promise<QueryResult> {
    try {
      return await this.#pool.query(text, values);
    } catch (error) {
      throw new GatewayStateError(`The PostgreSQL pin store could not ${action}`, {
        cause: error,
      });
    }
  }

  async #transaction<T>(action: string, work: (client: PoolClient) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.#pool.connect();
    } catch (error) {
      throw new GatewayStateError(`The PostgreSQL pin store could not ${action} (no connection)`, {
        cause: error,
      });
    }
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch((rollback: unknown) => {
        broken = rollback as Error;
      });
      if (GatewayStateError.isInstance(error)) throw error;
      throw new GatewayStateError(`The PostgreSQL pin store could not ${action}`, {
        cause: error,
      });
    } finally {
      client.release(broken);
    }
  }

  /**
   * Reviews a server's listing against the shared pins and commits the outcome. At first sight
   * the listing is pinned as seen, unless another replica pinned the server first: then this
   * listing is reviewed against that pin (a different definition is hidden).
   */
  async review(
    server: string,
    identity: string,
    tools: readonly McpToolInfo[],
    kind: PinKind = 'tool',
  ): Promise<PinReview> {
    const first = reviewServer(undefined, identity, tools, kind, this.#limits);
    // Pins too large for a row are never written (another replica's pin may still be reviewed).
    let firstText: string | undefined;
    let tooLarge: unknown;
    try {
      firstText = rowText(server, first.pins);
    } catch (error) {
      tooLarge = error;
    }
    return this.#transaction('review the pins', async (client) => {
      if (firstText !== undefined) {
        const inserted = await client.query(
          `INSERT INTO ${this.#table} (server, pins) VALUES ($1, $2) ON CONFLICT (server) DO NOTHING RETURNING server`,
          [server, firstText],
        );
        if (inserted.rowCount === 1) {
          this.#cache.set(server, first.pins);
          return first.review;
        }
      }
      const row = await client.query(
        `SELECT pins FROM ${this.#table} WHERE server = $1 FOR UPDATE`,
        [server],
      );
      if (row.rows.length === 0) throw tooLarge;
      const { pins, review } = reviewServer(
        parseServerPins(row.rows[0]?.pins),
        identity,
        tools,
        kind,
        this.#limits,
      );
      if (review.changed) {
        await client.query(
          `UPDATE ${this.#table} SET pins = $2, updated_at = now() WHERE server = $1`,
          [server, rowText(server, pins)],
        );
      }
      this.#cache.set(server, pins);
      return review;
    });
  }

  /** The pin of one tool as of the last review or open. */
  pinOf(server: string, tool: string): PinRecord | undefined {
    const pins = this.#cache.get(server);
    return pins === undefined ? undefined : ownOf(pins.tools, tool);
  }

  /** Tools waiting for acceptance, as of the last review or open. */
  pending(): PendingTool[] {
    const out: PendingTool[] = [];
    for (const [key, pins] of this.#cache) {
      const { server, kind } = splitPinKey(key);
      for (const [tool, pin] of Object.entries(pins.pending)) {
        out.push({ server, tool, kind, pin, previous: ownOf(pins.tools, tool) });
      }
    }
    return out.sort((a, b) => `${a.server}/${a.tool}`.localeCompare(`${b.server}/${b.tool}`));
  }

  /**
   * Accepts a pending definition in the shared table when `sha256` is the digest of the
   * definition pending now, whatever its kind: `server` is the server's name (its tools, prompts
   * and resource templates are read and locked in one statement, in one transaction) or a
   * {@link pinKey} of one kind. Committed at once; every replica offers it at its next reload or
   * relist. Returns false when nothing is pending under that name; throws
   * {@link PinChangedError} when another definition is pending (a replica listed another one
   * since it was shown).
   */
  async accept(server: string, tool: string, sha256: string): Promise<boolean> {
    const keys = acceptKeys(server);
    const decision = await this.#transaction('accept a pin', async (client) => {
      const rows = await client.query(
        `SELECT server, pins FROM ${this.#table} WHERE server = ANY($1::text[]) ORDER BY server FOR UPDATE`,
        [keys],
      );
      const found = new Map<string, ServerPins | undefined>(keys.map((key) => [key, undefined]));
      for (const row of rows.rows) found.set(String(row.server), parseServerPins(row.pins));
      const decision = acceptAcross(found, tool, sha256);
      if (decision.outcome !== 'accepted' || decision.key === undefined) return decision;
      const pins = found.get(decision.key) as ServerPins;
      await client.query(
        `UPDATE ${this.#table} SET pins = $2, updated_at = now() WHERE server = $1`,
        [decision.key, JSON.stringify(pins)],
      );
      this.#cache.set(decision.key, pins);
      return decision;
    });
    if (decision.outcome === 'changed') {
      throw pinChangedError(splitPinKey(server).server, tool, sha256, decision.pending);
    }
    return decision.outcome === 'accepted';
  }

  /** Nothing to do: every review and acceptance is committed when it returns. */
  async save(): Promise<void> {}

  /** Ends the pool. */
  async close(): Promise<void> {
    await this.#pool.end().catch(() => undefined);
  }
}
