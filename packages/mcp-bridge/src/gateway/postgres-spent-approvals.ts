import {
  importPg,
  isPostgresTargetProblem,
  postgresConnectionConfig,
  postgresTargetOf,
  postgresTlsModeOf,
} from '../store/postgres-target.js';
import { type ApprovalSpentStore, SPENT_APPROVAL_MARGIN_MS } from './approval-spent-store.js';
import { GatewayConfigError, GatewayStateError } from './errors.js';

/** Default table of {@link PostgresSpentApprovals}: `toolfence_gateway_spent_approvals`. */
export const DEFAULT_SPENT_APPROVALS_TABLE = 'toolfence_gateway_spent_approvals';

/** Options of {@link PostgresSpentApprovals.open}. */
export interface PostgresSpentApprovalsOptions {
  /** `postgres://…`, read as `PostgresPinStore` reads it (never logged). */
  readonly connectionString: string;
  /** Milliseconds one statement may take before the store counts as unreachable. Default 2,000. */
  readonly statementTimeoutMs?: number;
  /** The table (created when missing). Default {@link DEFAULT_SPENT_APPROVALS_TABLE}. */
  readonly table?: string;
}

interface Pool {
  query(text: string, values?: readonly unknown[]): Promise<{ readonly rowCount: number | null }>;
  end(): Promise<void>;
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/** Spent rows past their expiry are deleted by every this-many-th spend. */
const PRUNE_EVERY = 256;

/**
 * Spent approvals in a PostgreSQL table shared by every replica: `INSERT … ON CONFLICT (id) DO
 * NOTHING`, so of two replicas presented the same approval at once exactly one inserts it.
 * Rows past their expiry (plus margin) are deleted now and then. Unreachable: the approval is
 * refused (fails closed).
 */
export class PostgresSpentApprovals implements ApprovalSpentStore {
  readonly kind = 'postgres' as const;
  readonly #pool: Pool;
  readonly #table: string;
  #spends = 0;

  private constructor(pool: Pool, table: string) {
    this.#pool = pool;
    this.#table = table;
  }

  /**
   * Connects (the optional peer `pg`) and creates the table when missing.
   * @throws {GatewayConfigError} for a bad URL or table, or when `pg` is not installed.
   * @throws {GatewayStateError} when the database cannot be reached.
   */
  static async open(options: PostgresSpentApprovalsOptions): Promise<PostgresSpentApprovals> {
    const at = 'gateway.approvals';
    const target = postgresTargetOf(options.connectionString);
    if (isPostgresTargetProblem(target)) {
      throw new GatewayConfigError(`${at}: the URL ${target.message}`, { details: { at } });
    }
    const table = options.table ?? DEFAULT_SPENT_APPROVALS_TABLE;
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(table)) {
      throw new GatewayConfigError(`${at}: table must be a lower-case SQL identifier`, {
        details: { at },
      });
    }
    const timeoutMs = options.statementTimeoutMs ?? 2_000;
    const pg = await importPg<{ Pool: new (config: Record<string, unknown>) => Pool }>(
      (error) =>
        new GatewayConfigError(
          `${at}: a postgres:// approval store needs the optional peer pg@8 (npm install pg@8)`,
          { details: { at, peer: 'pg' }, cause: error },
        ),
    );
    const pool = new pg.Pool({
      max: 2,
      connectionTimeoutMillis: timeoutMs,
      statement_timeout: timeoutMs,
      application_name: 'toolfence-gateway-approvals',
      ...postgresConnectionConfig(target, postgresTlsModeOf(target, undefined), undefined),
    });
    pool.on('error', () => undefined);
    try {
      await pool.query(
        `CREATE TABLE IF NOT EXISTS ${table} (id text PRIMARY KEY, until timestamptz NOT NULL)`,
      );
    } catch (error) {
      // Two replicas creating it at once: one wins, the other finds it.
      const again = await pool
        .query(`SELECT 1 FROM ${table} LIMIT 1`)
        .then(() => undefined)
        .catch((second: unknown) => second);
      if (again !== undefined) {
        await pool.end().catch(() => undefined);
        throw new GatewayStateError('The PostgreSQL approval store could not create its table', {
          cause: error,
        });
      }
    }
    return new PostgresSpentApprovals(pool, table);
  }

  async spend(id: string, expiresAt: number): Promise<boolean> {
    try {
      this.#spends += 1;
      if (this.#spends % PRUNE_EVERY === 0) {
        await this.#pool.query(`DELETE FROM ${this.#table} WHERE until < now()`);
      }
      const inserted = await this.#pool.query(
        `INSERT INTO ${this.#table} (id, until) VALUES ($1, to_timestamp($2::double precision / 1000)) ON CONFLICT (id) DO NOTHING`,
        [id, expiresAt + SPENT_APPROVAL_MARGIN_MS],
      );
      return inserted.rowCount === 1;
    } catch (error) {
      throw new GatewayStateError('PostgreSQL could not record a spent approval', {
        cause: error,
      });
    }
  }

  async close(): Promise<void> {
    await this.#pool.end().catch(() => undefined);
  }
}
