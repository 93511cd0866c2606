// How a call that reached `tool.invoke` settles its budget: it counts unless it certainly did not
// leave, and its concurrency slot stays taken while work it started may still be running.
import type { BudgetReservation } from './budget.js';
import { isCallNotRun } from './call-not-run.js';

/** The code of `@toolfence/mcp-bridge`'s AmbiguousDeliveryError (the call may have completed). */
const AMBIGUOUS_CODE = 'CLIENT_AMBIGUOUS_DELIVERY';

/** How an invoked call ended: the tool's result, or what it threw. */
export type InvokedEnd = { readonly result: unknown } | { readonly error: unknown };

/**
 * Settles the reservation of a call whose tool was invoked. A throw marked
 * {@link isCallNotRun} is refunded; any other end counts, because the call's request may have
 * left. The concurrency slot stays taken (`running`) when the call may still run elsewhere: its
 * signal was aborted, its result says `metadata.ambiguous: true`, or it threw an ambiguous-delivery
 * error (code `CLIENT_AMBIGUOUS_DELIVERY`, itself or as the `cause`).
 */
export function settleInvoked(
  reservation: BudgetReservation,
  end: InvokedEnd,
  signal: AbortSignal | undefined,
): void {
  if ('error' in end && isCallNotRun(end.error)) {
    reservation.settle(false);
    return;
  }
  reservation.settle(true, mayStillRun(end, signal));
}

function mayStillRun(end: InvokedEnd, signal: AbortSignal | undefined): boolean {
  if (signal?.aborted === true) return true;
  if ('result' in end) {
    const metadata = (end.result as { metadata?: unknown } | null | undefined)?.metadata;
    return (
      typeof metadata === 'object' &&
      metadata !== null &&
      (metadata as { ambiguous?: unknown }).ambiguous === true
    );
  }
  const error = end.error as { code?: unknown; cause?: { code?: unknown } } | null | undefined;
  return error?.code === AMBIGUOUS_CODE || error?.cause?.code === AMBIGUOUS_CODE;
}
