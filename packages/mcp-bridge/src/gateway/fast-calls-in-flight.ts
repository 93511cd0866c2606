import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { isRecord } from '../is-record.js';
import type { OwnedAbort } from '../protocol/abort-link.js';
import type { PlainId } from './plain-tools-call.js';

/**
 * What {@link FastCallsInFlight} keeps of one call: at least how it is aborted (an
 * `OwnedAbort`, or an `AbortController`, which has the same shape).
 */
export interface FastCallInFlight {
  readonly controller: OwnedAbort;
}

/**
 * The plain `tools/call` requests one gateway front (stdio or HTTP) serves itself, by id: the
 * bookkeeping both fronts share. A call is added when it starts ({@link add}, {@link run}) and
 * stays until it is forgotten ({@link forget}); a well-formed
 * `notifications/cancelled` naming it aborts it ({@link cancel}); the connection closing aborts
 * every one ({@link abortAll}).
 */
export class FastCallsInFlight<Call extends FastCallInFlight = FastCallInFlight> {
  readonly #calls = new Map<PlainId, Call>();

  /** Calls in flight now. */
  get size(): number {
    return this.#calls.size;
  }

  /** True when a call with this id is in flight. */
  has(id: PlainId): boolean {
    return this.#calls.has(id);
  }

  /** The call in flight with this id. */
  get(id: PlainId): Call | undefined {
    return this.#calls.get(id);
  }

  /**
   * Adds `call` under `id` without starting anything: the caller runs it and {@link forget}s it
   * once it settles (the stdio front, which needs no promise around its handler's own).
   */
  add(id: PlainId, call: Call): void {
    this.#calls.set(id, call);
  }

  /**
   * Adds `call` under `id` and starts it: `start` gets its abort signal. The call stays in flight
   * until it is {@link forget}ten (the HTTP front: until its answer is written).
   */
  run<T>(id: PlainId, call: Call, start: (signal: AbortSignal) => Promise<T>): Promise<T> {
    this.#calls.set(id, call);
    return start(call.controller.signal);
  }

  /** Forgets `call` when it is still the one in flight under `id`; true when it was. */
  forget(id: PlainId, call: Call): boolean {
    if (this.#calls.get(id) !== call) return false;
    this.#calls.delete(id);
    return true;
  }

  /** A well-formed `notifications/cancelled` ({@link cancelledId}) aborts the call it names. */
  cancel(message: JSONRPCMessage): void {
    const cancelled = cancelledId(message);
    if (cancelled !== undefined) this.get(cancelled)?.controller.abort(cancelReason(message));
  }

  /**
   * Forgets every call and aborts each with `reason` (the connection closed), in the order they
   * started; `each` runs right after each abort.
   */
  abortAll(reason: Error, each?: (call: Call) => void): void {
    const calls = [...this.#calls.values()];
    this.#calls.clear();
    for (const call of calls) {
      call.controller.abort(reason);
      each?.(call);
    }
  }
}

/**
 * The request id a well-formed `notifications/cancelled` names (a string or a safe integer, with
 * a string `reason` or none), else undefined: the one check of both fast paths (stdio and HTTP).
 */
export function cancelledId(message: unknown): PlainId | undefined {
  if (!isRecord(message) || message.method !== 'notifications/cancelled' || 'id' in message) {
    return undefined;
  }
  const params = message.params;
  if (!isRecord(params)) return undefined;
  const id = params.requestId;
  if (typeof id !== 'string' && !Number.isSafeInteger(id)) return undefined;
  if (params.reason !== undefined && typeof params.reason !== 'string') return undefined;
  return id as PlainId;
}

/** The `reason` of a cancellation {@link cancelledId} accepted (a string, or undefined). */
export function cancelReason(message: JSONRPCMessage): unknown {
  return (message as { params?: { reason?: unknown } }).params?.reason;
}
