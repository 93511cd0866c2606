// What the registry takes as a budget: it reserves after authorization and settles when the call ends.
import type { JsonObject, ToolContext } from './tool.js';

/** What a budget sees of a call. */
export interface BudgetRequest {
  /** Registry name of the tool being called. */
  readonly toolName: string;
  /** The call's arguments. */
  readonly args: JsonObject;
  /** The call's context; `context.runId` selects the per-run counters. */
  readonly context: ToolContext;
}

/** A held reservation: settle it once, with whether the call counts. */
export interface BudgetReservation {
  /**
   * Ends the reservation. `consumed: false` refunds the call and frees its concurrency slot at
   * once. `consumed: true` keeps the call counted; the slot is freed at once, unless `running` is
   * true: the call ended while the work it started may still be running elsewhere (it was
   * cancelled or timed out after its request may have left), and the budget keeps the slot taken
   * for its bounded hold time (`cancelHoldMs`) before freeing it.
   */
  settle(consumed: boolean, running?: boolean): void;
}

/**
 * What `ToolRegistry` takes as `budget`: {@link CallBudget} is the in-process implementation.
 * `reserve` throws `BudgetExceededError` to refuse a call and must be atomic across scopes.
 */
export interface BudgetReserver {
  /**
   * Checks every scope of the call and takes a slot in each, or throws (rejects) and charges none.
   * A shared budget (such as `RedisCallBudget`) answers with a promise.
   */
  reserve(request: BudgetRequest): BudgetReservation | Promise<BudgetReservation>;
}
