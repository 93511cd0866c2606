import { GatewayStateError } from './errors.js';

/**
 * Default number of spent approvals the memory store remembers (each until it expires): 100,000.
 * One more, while all are unexpired, is refused (fails closed): forgetting one would let it be
 * presented again.
 */
export const DEFAULT_MAX_SPENT_APPROVALS: number = 100_000;

/**
 * Milliseconds a spent approval is remembered past its expiry (60,000): a replica whose clock is
 * behind the one that sealed it still accepts it for that long, so its record must outlive it.
 */
export const SPENT_APPROVAL_MARGIN_MS: number = 60_000;

/**
 * Where the gateway records that a sealed approval was presented, so it is honoured once across
 * every replica: memory (one gateway), Redis (`SET NX PX`) or PostgreSQL (insert on conflict).
 */
export interface ApprovalSpentStore {
  /** `memory`, `redis` or `postgres`. */
  readonly kind: 'memory' | 'redis' | 'postgres';
  /**
   * Records approval `id` as spent until `expiresAt` (plus {@link SPENT_APPROVAL_MARGIN_MS}):
   * true when this call spent it, false when it was spent before (by any replica).
   * @throws {GatewayStateError} when the store cannot record it (unreachable, full): the
   *   gateway then refuses the approval (fails closed).
   */
  spend(id: string, expiresAt: number): Promise<boolean>;
  /** Releases the store's connections. */
  close(): Promise<void>;
}

/**
 * Spent approvals in this process's memory: single use for one gateway (replicas need Redis or
 * PostgreSQL). Holds at most `maxEntries` unexpired entries; one more is refused rather than
 * forgetting one.
 */
export class MemorySpentApprovals implements ApprovalSpentStore {
  readonly kind = 'memory' as const;
  readonly #spent = new Map<string, number>();
  readonly #maxEntries: number;
  readonly #now: () => number;

  /** `maxEntries`: unexpired spent approvals held at most (default 100,000); `now`: the clock. */
  constructor(maxEntries: number = DEFAULT_MAX_SPENT_APPROVALS, now: () => number = Date.now) {
    this.#maxEntries = maxEntries;
    this.#now = now;
  }

  /** Entries remembered (spent, not yet past expiry and margin at the last prune). */
  get size(): number {
    return this.#spent.size;
  }

  async spend(id: string, expiresAt: number): Promise<boolean> {
    const now = this.#now();
    const until = this.#spent.get(id);
    if (until !== undefined && until > now) return false;
    if (this.#spent.size >= this.#maxEntries) {
      for (const [key, end] of this.#spent) if (end <= now) this.#spent.delete(key);
    }
    if (this.#spent.size >= this.#maxEntries) {
      throw new GatewayStateError(
        `The gateway remembers ${this.#maxEntries} spent approvals already (maxSpentApprovals); it refuses more until some expire`,
        { details: { limit: this.#maxEntries, option: 'maxSpentApprovals' } },
      );
    }
    this.#spent.set(id, expiresAt + SPENT_APPROVAL_MARGIN_MS);
    return true;
  }

  async close(): Promise<void> {
    this.#spent.clear();
  }
}
