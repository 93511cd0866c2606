import { randomUUID } from 'node:crypto';
import type { BudgetRequest, BudgetReservation, BudgetReserver } from '../registry/budget.js';
import { BudgetExceededError } from '../registry/budget-exceeded-error.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import { checkOptionKeys } from '../registry/option-keys.js';
import { type BudgetLimits, type BudgetScope, cancelHoldMs } from './call-budget.js';

/** The part of a Redis client the budget uses: ioredis's `eval` (and `quit` when it owns it). */
export interface RedisEvalClient {
  /** Runs a Lua script: `eval(script, numberOfKeys, ...keys, ...args)`. */
  eval(
    script: string,
    numberOfKeys: number,
    ...keysAndArguments: (string | number)[]
  ): Promise<unknown>;
  /** Closes the connection (called by `close()` only for a client the budget created). */
  quit?(): Promise<unknown>;
}

/** Options of {@link RedisCallBudget}. */
export interface RedisCallBudgetOptions {
  /** A connected client (ioredis or compatible). Exclusive with `url`. */
  readonly client?: RedisEvalClient;
  /** A `redis://` URL; the budget loads the optional peer `ioredis` and connects lazily. */
  readonly url?: string;
  /** Prefix of every key, so several deployments share one Redis. Default `toolfence:budget`. */
  readonly keyPrefix?: string;
  /** Limits of each run (keyed by `context.runId`). Default none. */
  readonly perRun?: BudgetLimits;
  /** Further scopes for a call (a user, a tenant); each is reserved together with the run's. */
  readonly scopes?: (request: BudgetRequest) => readonly BudgetScope[];
  /**
   * Milliseconds a scope's counters live after its last reservation. Default 86,400,000 (one
   * day).
   */
  readonly ttlMs?: number;
  /**
   * Milliseconds one Redis round trip may take before it counts as unreachable. Default 2,000. A
   * reservation that timed out is refused and released by its id: if Redis applies it late, it
   * is undone (or, arriving after the release, charges nothing).
   */
  readonly timeoutMs?: number;
  /**
   * Milliseconds the concurrency slot of a call stays taken after the call ended while the work
   * it started may still be running (cancelled or timed out after its request may have left).
   * Default 30,000; `0` frees the slot at once.
   */
  readonly cancelHoldMs?: number;
  /** When Redis cannot be reached: `deny` (default: fail closed) or `allow` (no budget applies). */
  readonly onUnavailable?: 'deny' | 'allow';
}

// KEYS: one hash per scope, then the reservation's own key. ARGV: ttl in milliseconds, then per
// scope maxCalls and maxConcurrent (-1 = unlimited). Checks every scope first and charges all or
// none, in one atomic script. A reservation whose key exists was released before Redis applied
// it (a reserve that timed out and was compensated): it charges nothing.
const RESERVE = `
local n = #KEYS - 1
local ttl = tonumber(ARGV[1])
if redis.call('EXISTS', KEYS[n + 1]) == 1 then return {-1, 'released'} end
for i = 1, n do
  local calls = tonumber(redis.call('HGET', KEYS[i], 'calls') or '0')
  local active = tonumber(redis.call('HGET', KEYS[i], 'active') or '0')
  local maxCalls = tonumber(ARGV[2 * i])
  local maxConcurrent = tonumber(ARGV[2 * i + 1])
  if maxCalls >= 0 and calls >= maxCalls then return {i, 'maxCalls'} end
  if maxConcurrent >= 0 and active >= maxConcurrent then return {i, 'maxConcurrent'} end
end
for i = 1, n do
  redis.call('HINCRBY', KEYS[i], 'calls', 1)
  redis.call('HINCRBY', KEYS[i], 'active', 1)
  redis.call('PEXPIRE', KEYS[i], ttl)
end
redis.call('SET', KEYS[n + 1], 'held', 'PX', ttl)
return {0, 'ok'}
`;

// KEYS: the reserved hashes, then the reservation's key. ARGV[1]: 1 when the call counts, 0 to
// refund it; ARGV[2]: ttl in milliseconds. Idempotent by reservation: only a held reservation is
// released (then its key is deleted); a reservation Redis has not applied yet is marked released,
// so when it arrives late it charges nothing.
const SETTLE = `
local n = #KEYS - 1
local state = redis.call('GET', KEYS[n + 1])
if state == 'held' then
  for i = 1, n do
    if redis.call('EXISTS', KEYS[i]) == 1 then
      if tonumber(redis.call('HGET', KEYS[i], 'active') or '0') > 0 then
        redis.call('HINCRBY', KEYS[i], 'active', -1)
      end
      if ARGV[1] == '0' and tonumber(redis.call('HGET', KEYS[i], 'calls') or '0') > 0 then
        redis.call('HINCRBY', KEYS[i], 'calls', -1)
      end
    end
  end
  redis.call('DEL', KEYS[n + 1])
  return 1
end
if not state then redis.call('SET', KEYS[n + 1], 'released', 'PX', tonumber(ARGV[2])) end
return 0
`;

/** Tries of one release that failed on the wire (each after a longer wait, up to a minute). */
const RELEASE_ATTEMPTS = 8;

interface Scope {
  readonly key: string;
  readonly kind: 'run' | 'scope';
  readonly limits: BudgetLimits;
}

/**
 * The {@link CallBudget} limits (calls and concurrency per run and per resolver scope) kept in
 * Redis, so several processes or gateway replicas share them. Each reservation is one Lua script
 * that checks every scope and charges all or none (atomic across processes); settling frees the
 * concurrency slot and refunds a call that did not count, once per reservation id (a retried or
 * late release changes nothing twice). A reservation that timed out is released by its id, so a
 * Redis stall longer than `timeoutMs` leaves no slot taken once Redis answers again. Keys expire
 * `ttlMs` after their last reservation, so a crashed process's slots do not stay taken forever. When Redis
 * cannot be reached the call is refused (`onUnavailable: 'deny'`, the default) with
 * `POLICY_BUDGET_EXCEEDED` and `details.reason: 'unavailable'`.
 */
export class RedisCallBudget implements BudgetReserver {
  readonly #options: RedisCallBudgetOptions;
  readonly #prefix: string;
  readonly #ttl: number;
  readonly #timeoutMs: number;
  readonly #holdMs: number;
  #client: Promise<RedisEvalClient> | undefined;
  readonly #owned: boolean;
  /** Slots held after a cancel (see `cancelHoldMs`): each frees its slot when run. */
  readonly #holds = new Set<() => void>();
  /** Releases sent and not yet answered (awaited by `close`). */
  readonly #releasing = new Set<Promise<unknown>>();
  /** Set by `close`: a failed release is no longer retried. */
  #closed = false;

  /** Checks the options; connects on the first reservation. */
  constructor(options: RedisCallBudgetOptions) {
    checkOptionKeys(
      options,
      [
        'client',
        'url',
        'keyPrefix',
        'perRun',
        'scopes',
        'ttlMs',
        'timeoutMs',
        'onUnavailable',
        'cancelHoldMs',
      ],
      'RedisCallBudget',
      undefined,
      { ttlSeconds: 'ttlMs' },
    );
    if ((options.client === undefined) === (options.url === undefined)) {
      throw new ConfigurationError('RedisCallBudget needs exactly one of client or url', {
        details: { option: 'client' },
      });
    }
    if (options.client !== undefined && typeof options.client.eval !== 'function') {
      throw new ConfigurationError(
        'client must have an eval(script, keys, ...args) method (ioredis)',
        {
          details: { option: 'client' },
        },
      );
    }
    if (options.url !== undefined && !/^rediss?:\/\//.test(options.url)) {
      throw new ConfigurationError('url must be a redis:// or rediss:// URL', {
        details: { option: 'url' },
      });
    }
    for (const key of ['ttlMs', 'timeoutMs'] as const) {
      const value = options[key];
      if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) {
        throw new ConfigurationError(`${key} must be a positive integer`, {
          details: { option: key },
        });
      }
    }
    if (options.onUnavailable !== undefined && !['deny', 'allow'].includes(options.onUnavailable)) {
      throw new ConfigurationError("onUnavailable must be 'deny' or 'allow'", {
        details: { option: 'onUnavailable' },
      });
    }
    if (options.scopes !== undefined && typeof options.scopes !== 'function') {
      throw new ConfigurationError('scopes must be a function', { details: { option: 'scopes' } });
    }
    this.#options = options;
    this.#prefix = options.keyPrefix ?? 'toolfence:budget';
    this.#ttl = options.ttlMs ?? 86_400_000;
    this.#timeoutMs = options.timeoutMs ?? 2_000;
    this.#holdMs = cancelHoldMs(options.cancelHoldMs);
    this.#owned = options.client === undefined;
    if (options.client !== undefined) this.#client = Promise.resolve(options.client);
  }

  /** Reserves a slot in every scope of the call, or rejects with {@link BudgetExceededError}. */
  async reserve(request: BudgetRequest): Promise<BudgetReservation> {
    const scopes = this.#scopesOf(request);
    if (scopes.length === 0) return { settle: () => undefined };
    // Each reservation has its own key: releasing it is idempotent, and a release that reaches
    // Redis before a late reservation makes that reservation charge nothing.
    const keys = [
      ...scopes.map((scope) => `${this.#prefix}:${scope.kind}:${scope.key}`),
      `${this.#prefix}:reservation:${randomUUID()}`,
    ];
    const args: number[] = [this.#ttl];
    for (const scope of scopes)
      args.push(scope.limits.maxCalls ?? -1, scope.limits.maxConcurrent ?? -1);
    let answer: unknown;
    try {
      answer = await this.#eval(RESERVE, keys, args);
    } catch (error) {
      // Redis may still apply the reservation (a stall longer than timeoutMs): undo it by its id.
      this.#release(keys, false, 0);
      if (this.#options.onUnavailable === 'allow') return { settle: () => undefined };
      throw new BudgetExceededError(
        'The shared call budget cannot be reached; the call was not run',
        {
          details: { reason: 'unavailable' },
          cause: error,
        },
      );
    }
    const [index, limit] = Array.isArray(answer) ? answer : [Number.NaN, 'invalid'];
    if (Number(index) !== 0) {
      const scope = scopes[Number(index) - 1];
      const max = limit === 'maxCalls' ? scope?.limits.maxCalls : scope?.limits.maxConcurrent;
      throw new BudgetExceededError(
        limit === 'maxCalls'
          ? `The ${scope?.kind === 'run' ? "run's" : "scope's"} call budget is used up`
          : `The ${scope?.kind === 'run' ? "run's" : "scope's"} concurrency budget is full`,
        { details: { scope: scope?.kind ?? 'scope', limit, max } },
      );
    }
    let settled = false;
    return {
      settle: (consumed: boolean, running = false): void => {
        if (settled) return;
        settled = true;
        if (!consumed || !running || this.#holdMs === 0) {
          this.#release(keys, consumed, 0);
          return;
        }
        // The work may still run elsewhere: the slot stays taken for the hold time.
        const free = (): void => {
          clearTimeout(timer);
          if (this.#holds.delete(free)) this.#release(keys, true, 0);
        };
        const timer = setTimeout(free, this.#holdMs);
        timer.unref();
        this.#holds.add(free);
      },
    };
  }

  /**
   * Frees the held slots now, waits (bounded by `timeoutMs`) for the releases sent, and closes
   * the connection when the budget opened it (a host's `client` is left open).
   */
  async close(): Promise<void> {
    for (const free of [...this.#holds]) free();
    this.#closed = true;
    if (this.#releasing.size > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...this.#releasing]),
        new Promise((resolve) => {
          timer = setTimeout(resolve, this.#timeoutMs);
        }),
      ]);
      clearTimeout(timer);
    }
    if (!this.#owned || this.#client === undefined) return;
    const client = await this.#client.catch(() => undefined);
    await client?.quit?.().catch(() => undefined);
  }

  /**
   * Sends the release of one reservation (idempotent by its key). When it fails it is sent again
   * later, up to {@link RELEASE_ATTEMPTS} times; past that the keys' TTL frees the slot.
   */
  #release(keys: readonly string[], consumed: boolean, attempt: number): void {
    const sent = this.#eval(SETTLE, keys, [consumed ? 1 : 0, this.#ttl]);
    this.#releasing.add(sent);
    sent.then(
      () => this.#releasing.delete(sent),
      () => {
        this.#releasing.delete(sent);
        if (this.#closed || attempt + 1 >= RELEASE_ATTEMPTS) return;
        const wait = Math.min(this.#timeoutMs * 2 ** attempt, 60_000);
        setTimeout(() => this.#release(keys, consumed, attempt + 1), wait).unref();
      },
    );
  }

  #scopesOf(request: BudgetRequest): Scope[] {
    const scopes: Scope[] = [];
    if (this.#options.perRun !== undefined) {
      scopes.push({ key: request.context.runId, kind: 'run', limits: this.#options.perRun });
    }
    if (this.#options.scopes !== undefined) {
      const extra = this.#options.scopes(request);
      if (!Array.isArray(extra)) {
        throw new ConfigurationError('The budget scopes resolver must return an array', {
          details: { option: 'scopes' },
        });
      }
      for (const scope of extra as readonly BudgetScope[]) {
        if (typeof scope?.key !== 'string') {
          throw new ConfigurationError('A budget scope needs a string key', {
            details: { option: 'scopes' },
          });
        }
        if (!scopes.some((held) => held.kind === 'scope' && held.key === scope.key)) {
          scopes.push({ key: scope.key, kind: 'scope', limits: scope.limits });
        }
      }
    }
    return scopes;
  }

  async #eval(script: string, keys: readonly string[], args: readonly number[]): Promise<unknown> {
    this.#client ??= connect(this.#options.url as string, this.#timeoutMs);
    const client = await this.#client;
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        client.eval(script, keys.length, ...keys, ...args),
        new Promise((_resolve, reject) => {
          timer = setTimeout(() => reject(new Error('Redis timed out')), this.#timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}

async function connect(url: string, timeoutMs: number): Promise<RedisEvalClient> {
  let Redis: new (url: string, options: Record<string, unknown>) => RedisEvalClient;
  try {
    const module = (await import('ioredis' as string)) as {
      default?: typeof Redis;
      Redis?: typeof Redis;
    };
    Redis = (module.Redis ?? module.default) as typeof Redis;
  } catch (error) {
    throw new ConfigurationError(
      'RedisCallBudget with url needs the optional peer ioredis (npm install ioredis)',
      {
        details: { option: 'url' },
        cause: error,
      },
    );
  }
  const client = new Redis(url, {
    connectTimeout: timeoutMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: true,
    lazyConnect: false,
  }) as RedisEvalClient & { on?(event: string, listener: () => void): unknown };
  // Connection errors surface as refused reservations; nothing is printed to the host's console.
  client.on?.('error', () => undefined);
  return client;
}
