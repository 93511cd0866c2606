import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { ownedAbort } from '../protocol/abort-link.js';
import { type FastCallInFlight, FastCallsInFlight } from './fast-calls-in-flight.js';
import {
  isPlainCallToolResult,
  type PlainToolsCall,
  plainModernToolsCall,
  plainToolsCall,
} from './plain-tools-call.js';
import { type MessageExtra, WrappedTransport } from './wrapped-transport.js';

/** How a plain call ended: its result, or what it threw. */
export type FastCallOutcome =
  | { readonly ok: true; readonly value: unknown }
  | { readonly ok: false; readonly error: unknown };

/** What the gateway gives {@link FastCallTransport} for one downstream connection. */
export interface FastCallHandler {
  /**
   * True when a plain `tools/call` may be served on the fast path now: the connection is pinned
   * to the 2025-11-25 era, initialized and open. Read for each message.
   */
  ready(): boolean;
  /**
   * For a 2026-07-28 connection: true when a plain call carrying `meta` as its `_meta` may be
   * served on the fast path now: the connection is pinned to that era and open, and `meta` is
   * exactly (a deep copy of) a request envelope the SDK server has already accepted on it, so
   * the SDK would accept it again. Absent: no 2026-07-28 call is served here.
   */
  acceptsEnvelope?(meta: Record<string, unknown>): boolean;
  /**
   * The `result` of a 2026-07-28 call (a plain one) as the SDK server encodes it for that era.
   * Required with {@link acceptsEnvelope}.
   */
  modernResult?(result: Record<string, unknown>): Record<string, unknown>;
  /** Runs one plain call to its end (aborted through `signal` by a cancellation or a close). */
  call(call: PlainToolsCall, signal: AbortSignal): Promise<unknown>;
  /**
   * The request to hand the SDK server instead of answering directly (a result the fast path
   * does not recognise as plain, or a throw): the SDK's handler gives back `outcome` as the
   * call's result, so the SDK checks, encodes and sends it exactly as for any other call.
   */
  replay(call: PlainToolsCall, outcome: FastCallOutcome): JSONRPCMessage;
}

/**
 * The downstream stdio transport of a gateway connection, around the one it is given: a plain
 * `tools/call` request ({@link plainToolsCall}) on a connection the handler says is ready runs
 * the gateway's call handler directly, and its plain result ({@link isPlainCallToolResult}) is
 * written back as the JSON-RPC response the SDK v2 server would have sent, without the server's
 * per-message schema checks (which would accept both and give back equal values). On a
 * 2026-07-28 connection the same holds for a plain call whose `_meta` is exactly an envelope the
 * SDK server already accepted there ({@link plainModernToolsCall},
 * {@link FastCallHandler.acceptsEnvelope}); its result is encoded as the SDK encodes it for that
 * era ({@link FastCallHandler.modernResult}). Every other message, and every call the fast path
 * does not fully cover, goes to the SDK server as before.
 *
 * Cancellation is the SDK's: `notifications/cancelled` naming a call in flight here aborts its
 * signal, and an aborted call is not answered; the transport closing aborts every call in flight.
 */
export class FastCallTransport extends WrappedTransport {
  readonly #handler: FastCallHandler;
  /** The plain calls in flight here, by id (forgotten as each settles). */
  readonly #running = new FastCallsInFlight();

  constructor(inner: Transport, handler: FastCallHandler) {
    super(inner);
    this.#handler = handler;
  }

  /** The transport closed: every call in flight here is aborted. */
  protected override closed(): void {
    this.#running.abortAll(new Error('Connection closed'));
  }

  /** A plain call served here, anything else passed on to the SDK server. */
  protected override inbound(message: JSONRPCMessage, extra: MessageExtra): void {
    // `extra` (an in-memory pair's `authInfo`) is not read: `serveStdio`, the one entry this
    // transport is made for, drops it before the SDK server, so a call has no `http` either way.
    const call = this.#handler.ready() ? plainToolsCall(message) : this.#modernCall(message);
    // An id already in flight here goes to the SDK (which decides what a reused id means).
    if (call !== undefined && !this.#running.has(call.id)) {
      void this.#serve(call);
      return;
    }
    this.#running.cancel(message);
    this.onmessage?.(message, extra);
  }

  /** A plain 2026-07-28 call whose envelope the handler accepts, else undefined. */
  #modernCall(message: JSONRPCMessage): PlainToolsCall | undefined {
    const handler = this.#handler;
    if (handler.acceptsEnvelope === undefined || handler.modernResult === undefined) {
      return undefined;
    }
    const call = plainModernToolsCall(message);
    return call?.meta !== undefined && handler.acceptsEnvelope(call.meta) ? call : undefined;
  }

  async #serve(call: PlainToolsCall): Promise<void> {
    // Aborted only by the call's cancellation or the connection closing (through #running): the
    // upstream request joins it without an `abort` listener of its own (abort-link.ts).
    const controller = ownedAbort();
    const signal = controller.signal;
    const entry: FastCallInFlight = { controller };
    // In flight until the handler settles: forgotten before the outcome is looked at.
    this.#running.add(call.id, entry);
    let value: unknown;
    let outcome: FastCallOutcome | undefined;
    try {
      value = await this.#handler.call(call, signal);
    } catch (error) {
      outcome = { ok: false, error };
    } finally {
      this.#running.forget(call.id, entry);
    }
    // The SDK answers no request that was cancelled (or whose connection closed).
    if (signal.aborted) return;
    if (outcome === undefined && isPlainCallToolResult(value)) {
      const plain = value as Record<string, unknown>;
      const result =
        call.meta === undefined ? plain : (this.#handler.modernResult?.(plain) ?? plain);
      const response = { result, jsonrpc: '2.0', id: call.id } as JSONRPCMessage;
      await this.inner.send(response).catch((error: unknown) => {
        this.onerror?.(error instanceof Error ? error : new Error(String(error)));
      });
      return;
    }
    this.onmessage?.(this.#handler.replay(call, outcome ?? { ok: true, value }));
  }
}
