import type { BudgetRequest, BudgetReservation, BudgetReserver } from '../registry/budget.js';
import { BudgetExceededError } from '../registry/budget-exceeded-error.js';
import { type InvokedEnd, settleInvoked } from '../registry/budget-settlement.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import { checkOptionKeys } from '../registry/option-keys.js';
import type { JsonObject, Tool, ToolContext, ToolResult, ToolSpec } from '../registry/tool.js';

/** Limits of one budget scope. An omitted limit is unlimited. */
export interface BudgetLimits {
  /**
   * Most calls that may start in the scope. A call counts from the moment its tool is invoked
   * (its request may have left); it is refunded only when it certainly did not run: refused or
   * aborted before the tool was invoked, or the tool threw an error marked `CALL_NOT_RUN`.
   */
  readonly maxCalls?: number;
  /**
   * Most calls that may run at the same time in the scope. A call that ended while its work may
   * still run elsewhere (aborted, or an ambiguous result) keeps its slot for `cancelHoldMs`.
   */
  readonly maxConcurrent?: number;
}

/** An extra scope a resolver puts a call in (a user, a tenant, a tool group, ...). */
export interface BudgetScope {
  /** Identifies the scope; calls resolving to the same key share its counters. */
  readonly key: string;
  /** Limits of this scope; an omitted limit is unlimited. */
  readonly limits: BudgetLimits;
}

/** Options of {@link CallBudget}. */
export interface CallBudgetOptions {
  /** Limits of each run (keyed by `context.runId`). Default: none. */
  readonly perRun?: BudgetLimits;
  /** Further scopes for a call; each is reserved together with the run's. Default: none. */
  readonly scopes?: (request: BudgetRequest) => readonly BudgetScope[];
  /**
   * Milliseconds the concurrency slot of a call stays taken after the call ended while the work
   * it started may still be running (it was cancelled or timed out after its request may have
   * left: an MCP server sends no answer to a cancelled request, so its end cannot be seen).
   * Default 30,000; `0` frees the slot at once.
   */
  readonly cancelHoldMs?: number;
}

/** Default of `cancelHoldMs`: 30 seconds. */
export const DEFAULT_CANCEL_HOLD_MS = 30_000;

/** Current counters of a scope. */
export interface BudgetUsage {
  /** Calls started and not refunded (a call settled as not consumed is refunded). */
  readonly calls: number;
  /** Calls reserved and not yet settled (running now, or held after a cancel: `cancelHoldMs`). */
  readonly active: number;
}

interface Counter {
  calls: number;
  active: number;
}

interface Held {
  readonly counter: Counter;
  readonly key: string;
  readonly limits: BudgetLimits;
  readonly kind: 'run' | 'scope';
}

const NOOP_RESERVATION: BudgetReservation = Object.freeze({ settle(): void {} });

/**
 * Call-count and concurrency budgets per run and per resolver scope. `reserve` checks every scope
 * of a call and then takes a slot in each, all synchronously (so atomically): either every scope
 * has room or none is charged. Counters live until `forgetRun` / `forgetScope`.
 */
export class CallBudget implements BudgetReserver {
  readonly #perRun: BudgetLimits | undefined;
  readonly #scopes: ((request: BudgetRequest) => readonly BudgetScope[]) | undefined;
  readonly #counters = new Map<string, Counter>();
  readonly #holdMs: number;

  /**
   * Checks the options; throws {@link ConfigurationError} when `scopes` is not a function or a
   * `perRun` limit is not a non-negative integer.
   */
  constructor(options: CallBudgetOptions = {}) {
    checkOptionKeys(options, ['perRun', 'scopes', 'cancelHoldMs'], 'CallBudget');
    if (options.perRun !== undefined) checkLimits(options.perRun, 'perRun');
    this.#holdMs = cancelHoldMs(options.cancelHoldMs);
    if (options.scopes !== undefined && typeof options.scopes !== 'function') {
      throw new ConfigurationError('scopes must be a function', { details: { option: 'scopes' } });
    }
    this.#perRun = options.perRun;
    this.#scopes = options.scopes;
  }

  /** Reserves a slot for a call in every scope, or throws {@link BudgetExceededError} and holds nothing. */
  reserve(request: BudgetRequest): BudgetReservation {
    const wanted: Held[] = [];
    if (this.#perRun !== undefined) {
      const key = `run\u0000${request.context.runId}`;
      wanted.push({ key, limits: this.#perRun, kind: 'run', counter: this.#counter(key) });
    }
    if (this.#scopes !== undefined) {
      let scopes: unknown;
      try {
        scopes = this.#scopes(request);
      } catch (error) {
        throw new ConfigurationError('The budget scopes resolver threw; the call was not run', {
          details: { option: 'scopes' },
          cause: error,
        });
      }
      if (!Array.isArray(scopes)) {
        throw new ConfigurationError('The budget scopes resolver must return an array', {
          details: { option: 'scopes' },
        });
      }
      for (const scope of scopes as readonly BudgetScope[]) {
        if (typeof scope?.key !== 'string') {
          throw new ConfigurationError('A budget scope needs a string key', {
            details: { option: 'scopes' },
          });
        }
        checkLimits(scope.limits, 'scopes[].limits');
        const key = `scope\u0000${scope.key}`;
        if (wanted.some((held) => held.key === key)) continue;
        wanted.push({ key, limits: scope.limits, kind: 'scope', counter: this.#counter(key) });
      }
    }
    if (wanted.length === 0) return NOOP_RESERVATION;
    for (const held of wanted) {
      const { maxCalls, maxConcurrent } = held.limits;
      if (maxCalls !== undefined && held.counter.calls >= maxCalls) {
        throw exceeded(held, 'maxCalls', maxCalls);
      }
      if (maxConcurrent !== undefined && held.counter.active >= maxConcurrent) {
        throw exceeded(held, 'maxConcurrent', maxConcurrent);
      }
    }
    for (const held of wanted) {
      held.counter.calls += 1;
      held.counter.active += 1;
    }
    let settled = false;
    const free = (): void => {
      for (const held of wanted) held.counter.active -= 1;
    };
    return {
      settle: (consumed: boolean, running = false): void => {
        if (settled) return;
        settled = true;
        if (!consumed) {
          for (const held of wanted) held.counter.calls -= 1;
          free();
        } else if (running && this.#holdMs > 0) {
          // The work may still run elsewhere: the slot stays taken for the hold time.
          setTimeout(free, this.#holdMs).unref();
        } else {
          free();
        }
      },
    };
  }

  /** Counters of a run. */
  runUsage(runId: string): BudgetUsage {
    return this.#usage(`run\u0000${runId}`);
  }

  /** Counters of a resolver scope. */
  scopeUsage(key: string): BudgetUsage {
    return this.#usage(`scope\u0000${key}`);
  }

  /** Drops a finished run's counters (a later call of that run starts from zero). */
  forgetRun(runId: string): void {
    this.#forget(`run\u0000${runId}`);
  }

  /** Drops a resolver scope's counters. */
  forgetScope(key: string): void {
    this.#forget(`scope\u0000${key}`);
  }

  #forget(key: string): void {
    const counter = this.#counters.get(key);
    // A counter with calls in flight stays, or their settle would go to a fresh counter.
    if (counter !== undefined && counter.active === 0) this.#counters.delete(key);
  }

  #usage(key: string): BudgetUsage {
    const counter = this.#counters.get(key);
    return { calls: counter?.calls ?? 0, active: counter?.active ?? 0 };
  }

  #counter(key: string): Counter {
    let counter = this.#counters.get(key);
    if (counter === undefined) {
      counter = { calls: 0, active: 0 };
      this.#counters.set(key, counter);
    }
    return counter;
  }
}

function exceeded(
  held: Held,
  limit: 'maxCalls' | 'maxConcurrent',
  max: number,
): BudgetExceededError {
  return new BudgetExceededError(
    limit === 'maxCalls'
      ? `The ${held.kind === 'run' ? "run's" : "scope's"} call budget is used up`
      : `The ${held.kind === 'run' ? "run's" : "scope's"} concurrency budget is full`,
    { details: { scope: held.kind, limit, max } },
  );
}

function checkLimits(limits: BudgetLimits, option: string): void {
  if (typeof limits !== 'object' || limits === null) {
    throw new ConfigurationError(`${option} must be an object`, { details: { option } });
  }
  for (const key of ['maxCalls', 'maxConcurrent'] as const) {
    const value: unknown = limits[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
      throw new ConfigurationError(`${option}.${key} must be a non-negative integer`, {
        details: { option: `${option}.${key}` },
      });
    }
  }
}

/**
 * Checks a `cancelHoldMs` option (a non-negative integer of milliseconds, at most one day) and
 * fills in the default.
 */
export function cancelHoldMs(value: unknown): number {
  if (value === undefined) return DEFAULT_CANCEL_HOLD_MS;
  if (
    typeof value !== 'number' ||
    !Number.isSafeInteger(value) ||
    value < 0 ||
    value > 86_400_000
  ) {
    throw new ConfigurationError(
      'cancelHoldMs must be an integer number of milliseconds from 0 to 86400000',
      { details: { option: 'cancelHoldMs' } },
    );
  }
  return value;
}

/** A tool wrapped by {@link withBudget}; `inner` is the wrapped tool. */
export interface BudgetedTool extends Tool {
  /** The wrapped tool, whose calls are budgeted. */
  readonly inner: Tool;
}

/**
 * Wraps a tool so each call reserves `budget` first (throwing {@link BudgetExceededError} when
 * there is no room) and settles it after, as {@link runWithBudget} does. The
 * wrapper forwards the wrapped tool's `spec` (same object: effect descriptor, contract,
 * operation argument) and its `start` / `close` (present only when the tool has them).
 */
export function withBudget(tool: Tool, budget: CallBudget): BudgetedTool {
  const wrapper: { -readonly [K in keyof BudgetedTool]: BudgetedTool[K] } = {
    get spec(): ToolSpec {
      return tool.spec;
    },
    inner: tool,
    async invoke(args: JsonObject, context: ToolContext): Promise<ToolResult> {
      return runWithBudget(budget, { toolName: tool.spec.name, args, context }, () =>
        tool.invoke(args, context),
      );
    },
  };
  if (typeof tool.start === 'function') {
    const start = tool.start;
    wrapper.start = () => start.call(tool);
  }
  if (typeof tool.close === 'function') {
    const close = tool.close;
    wrapper.close = () => close.call(tool);
  }
  return Object.freeze(wrapper);
}

/**
 * Reserves, runs, and settles. The call counts once `run` was started; it is refunded only when
 * it threw an error marked `CALL_NOT_RUN` (it certainly did not leave). An aborted call, or one
 * whose result says `metadata.ambiguous: true`, keeps its concurrency slot for `cancelHoldMs`.
 */
export async function runWithBudget(
  budget: CallBudget,
  request: BudgetRequest,
  run: () => Promise<ToolResult>,
): Promise<ToolResult> {
  const reservation = budget.reserve(request);
  let end: InvokedEnd = { error: undefined };
  try {
    const result = await run();
    end = { result };
    return result;
  } catch (error) {
    end = { error };
    throw error;
  } finally {
    settleInvoked(reservation, end, request.context.signal);
  }
}
