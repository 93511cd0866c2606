// The mark a tool puts on an error to say its call certainly did not leave: a budget refunds it.

/**
 * `Symbol.for` key of the mark. An error (or any object) a tool throws with `[CALL_NOT_RUN]:
 * true` says the call certainly did not leave this process: nothing was sent and nothing ran
 * (for example `RequestNotSentError` of `@toolfence/mcp-bridge`). Only such a call is refunded by
 * a budget once the tool was invoked; every other end of an invoked call counts. Put it only on an
 * error made for this one call, never on a shared object such as a signal's `reason`.
 */
export const CALL_NOT_RUN: unique symbol = Symbol.for('@toolfence/tools/call-not-run');

/** True when `value` carries the {@link CALL_NOT_RUN} mark. */
export function isCallNotRun(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { [CALL_NOT_RUN]?: unknown })[CALL_NOT_RUN] === true
  );
}
