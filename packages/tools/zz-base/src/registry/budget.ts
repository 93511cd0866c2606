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
  /** Ends the reservation: frees its concurrency slot; `consumed: false` also refunds the call. */
  settle(consumed: boolean): void;
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
