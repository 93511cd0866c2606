import { type ApprovalSpentStore, SPENT_APPROVAL_MARGIN_MS } from './approval-spent-store.js';
import { GatewayStateError } from './errors.js';

/** The part of an `ioredis` client the store uses. */
export interface RedisSetClient {
  /** `SET key value PX ms NX`: resolves `'OK'` when set, `null` when the key exists. */
  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<unknown>;
}

/** Options of {@link RedisSpentApprovals}. */
export interface RedisSpentApprovalsOptions {
  /** An `ioredis` client (the budget's, or one of its own). */
  readonly client: RedisSetClient;
  /** Prefix of every key: `<prefix>:approval:<id>`. */
  readonly keyPrefix: string;
  /** Milliseconds one `SET` may take before the store counts as unreachable (fails closed). */
  readonly timeoutMs: number;
  /** Closes the client (when the store owns it). */
  readonly close?: () => Promise<void>;
  /** The clock. Default `Date.now`. */
  readonly now?: () => number;
}

/**
 * Spent approvals in Redis, shared by every replica on it: `SET <prefix>:approval:<id> 1 NX PX
 * <until expiry plus margin>`, atomic, so of two replicas presented the same approval at once
 * exactly one spends it. Unreachable or slow Redis: the approval is refused (fails closed).
 */
export class RedisSpentApprovals implements ApprovalSpentStore {
  readonly kind = 'redis' as const;
  readonly #options: RedisSpentApprovalsOptions;
  readonly #now: () => number;

  /** A store on `options.client` (unreachable Redis is found at the first spend, not here). */
  constructor(options: RedisSpentApprovalsOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  async spend(id: string, expiresAt: number): Promise<boolean> {
    const ms = Math.max(1, expiresAt - this.#now()) + SPENT_APPROVAL_MARGIN_MS;
    const key = `${this.#options.keyPrefix}:approval:${id}`;
    let timer: NodeJS.Timeout | undefined;
    try {
      const answer = await Promise.race([
        this.#options.client.set(key, '1', 'PX', ms, 'NX'),
        new Promise<never>((_resolve, reject) => {
          timer = setTimeout(() => reject(new Error('timeout')), this.#options.timeoutMs);
        }),
      ]);
      return answer === 'OK';
    } catch (error) {
      throw new GatewayStateError('Redis could not record a spent approval', { cause: error });
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await this.#options.close?.();
  }
}
