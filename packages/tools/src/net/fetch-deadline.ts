import type {
  Dispatcher,
  RequestInit as UndiciRequestInit,
  Response as UndiciResponse,
} from 'undici';
import { lazyRequire } from '../internal/lazy-require.js';
import { NetworkLimitError } from './network-limit-error.js';

/** undici (CommonJS, tens of milliseconds to load), required on the first request. */
const undici = lazyRequire<typeof import('undici')>('undici');

type AbortRequest = (reason?: Error) => void;

/** The legacy undici handler API that undici's `fetch` hands to its dispatcher. */
type LegacyHandler = Dispatcher.DispatchHandler & {
  onConnect?(abort: AbortRequest, context?: object): void;
  onResponseStarted?(): void;
  onHeaders?(
    statusCode: number,
    headers: Buffer[],
    resume: () => void,
    statusText: string,
  ): boolean;
  onData?(chunk: Buffer): boolean;
  onComplete?(trailers: string[] | null): void;
  onError?(error: Error): void;
  onUpgrade?(statusCode: number, headers: Buffer[] | string[] | null, socket: unknown): void;
  onBodySent?(chunk: unknown): void;
  onRequestSent?(): void;
};

function expire(deadline: FetchDeadline): void {
  deadline.expire();
}

/**
 * The total time limit of one `guardedFetch` call: every hop, and the response body until its
 * last byte has arrived from the network.
 *
 * It stands in as the call's dispatcher (a pass-through to the guarded `Agent`, whose connector
 * still checks every connection), so it sees each hop on the wire: when the limit passes it
 * aborts the hop on its connection through undici's own abort, or, for a hop still waiting for a
 * connection, fails fetch at once and aborts the hop when the connection comes, before a byte of
 * it is written; when the call has returned its response and no hop is in flight, it releases
 * the timer.
 *
 * This replaces an `AbortController` per call passed as `signal`: in undici's fetch a signal
 * costs a listener, a `WeakRef` and a `FinalizationRegistry` entry per request, and the timer
 * kept all of it alive until the deadline (30 s by default) even after the response had arrived.
 * A body that has not fully arrived when the response is returned is read through `guardedFetch`'s
 * counting stream, which reports this deadline's `NetworkLimitError` itself; a body that has
 * arrived can no longer run late.
 */
export class FetchDeadline {
  /** The `NetworkLimitError` (`timeout`) once the limit has passed. */
  reason: NetworkLimitError | undefined;
  readonly #agent: Dispatcher;
  readonly #timeoutMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #inFlight = 0;
  #returned = false;
  /** The hop on the wire (or waiting for its connection), if any. */
  #hop: DeadlineHandler | undefined;
  /** The latest hop dispatched (the one whose response the call returns). */
  #last: DeadlineHandler | undefined;

  constructor(agent: Dispatcher, timeoutMs: number) {
    this.#agent = agent;
    this.#timeoutMs = timeoutMs;
    this.#timer = setTimeout(expire, timeoutMs, this);
    this.#timer.unref?.();
  }

  /** Read by undici's fetch; never a mock. */
  get isMockActive(): boolean {
    return false;
  }

  /** True when no hop is on the wire (the last response has fully arrived, or failed). */
  get idle(): boolean {
    return this.#inFlight === 0;
  }

  /** Body bytes the latest hop received from the wire (before any content decoding). */
  get receivedBytes(): number {
    return this.#last?.received ?? 0;
  }

  /**
   * One hop through undici's fetch; `init.dispatcher` must be this deadline. Fails with the
   * `NetworkLimitError` (undici's `TypeError` has it as `cause`) as soon as the limit passes,
   * even while the connection is still being made.
   */
  fetch(href: string, init: UndiciRequestInit): Promise<UndiciResponse> {
    if (this.reason !== undefined) return Promise.reject(this.reason);
    return undici().fetch(href, init);
  }

  /** Undici's fetch dispatches each hop here; the guarded agent does the work. */
  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const legacy = handler as LegacyHandler;
    if (this.reason !== undefined) {
      legacy.onError?.(this.reason);
      return false;
    }
    this.#inFlight += 1;
    const hop = new DeadlineHandler(legacy, this);
    this.#hop = hop;
    this.#last = hop;
    return this.#agent.dispatch(options, hop);
  }

  /** The call hands its response to the caller: release the timer once nothing is in flight. */
  returned(): void {
    this.#returned = true;
    if (this.#inFlight === 0) this.release();
  }

  /** One hop finished on the wire (its last byte arrived, or it failed). */
  settled(hop: DeadlineHandler): void {
    this.#inFlight -= 1;
    if (this.#hop === hop) this.#hop = undefined;
    if (this.#returned && this.#inFlight === 0) this.release();
  }

  /** Stops the timer (the call is over: finished, failed or cut off by a limit). */
  release(): void {
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
  }

  /** The limit passed: abort the hop in flight and reject the one being waited for. */
  expire(): void {
    this.#timer = undefined;
    if (this.reason !== undefined) return;
    const reason = new NetworkLimitError(
      'The request took longer than its time limit.',
      'timeout',
      { details: { timeoutMs: this.#timeoutMs } },
    );
    this.reason = reason;
    this.#hop?.expire(reason);
  }
}

/**
 * Undici's fetch handler with the hop's connection and end reported to the
 * {@link FetchDeadline}; every callback passes through unchanged.
 */
class DeadlineHandler {
  readonly #handler: LegacyHandler;
  readonly #deadline: FetchDeadline;
  /** undici's abort, once the hop has a connection. */
  #abort: AbortRequest | undefined;
  /** Set when the limit cut the hop off: undici's later callbacks are not passed on. */
  #cutOff: Error | undefined;
  #settled = false;
  /** Body bytes passed on so far. */
  received = 0;

  constructor(handler: LegacyHandler, deadline: FetchDeadline) {
    this.#handler = handler;
    this.#deadline = deadline;
  }

  #settle(): void {
    if (!this.#settled) {
      this.#settled = true;
      this.#deadline.settled(this);
    }
  }

  /**
   * The limit passed. On a connection: undici's abort errors the hop (and fetch with it). Still
   * waiting for one: fetch is failed now, and the hop is aborted when its connection comes,
   * before a byte of it is written.
   */
  expire(reason: Error): void {
    if (this.#settled) return;
    if (this.#abort !== undefined) {
      this.#abort(reason);
      return;
    }
    this.#cutOff = reason;
    this.#settle();
    this.#handler.onError?.(reason);
  }

  onConnect(abort: AbortRequest, context?: object): void {
    if (this.#cutOff !== undefined) {
      abort(this.#cutOff);
      return;
    }
    this.#abort = abort;
    this.#handler.onConnect?.(abort, context);
  }

  onResponseStarted(): void {
    if (this.#cutOff === undefined) this.#handler.onResponseStarted?.();
  }

  onHeaders(
    statusCode: number,
    headers: Buffer[],
    resume: () => void,
    statusText: string,
  ): boolean {
    if (this.#cutOff !== undefined) return false;
    return this.#handler.onHeaders?.(statusCode, headers, resume, statusText) ?? true;
  }

  onData(chunk: Buffer): boolean {
    if (this.#cutOff !== undefined) return false;
    this.received += chunk.length;
    return this.#handler.onData?.(chunk) ?? true;
  }

  onComplete(trailers: string[] | null): void {
    if (this.#cutOff !== undefined) return;
    try {
      this.#handler.onComplete?.(trailers);
    } finally {
      this.#settle();
    }
  }

  onError(error: Error): void {
    if (this.#cutOff !== undefined) return;
    try {
      this.#handler.onError?.(error);
    } finally {
      this.#settle();
    }
  }

  onUpgrade(statusCode: number, headers: Buffer[] | string[] | null, socket: unknown): void {
    if (this.#cutOff === undefined) this.#handler.onUpgrade?.(statusCode, headers, socket);
  }

  onBodySent(chunk: unknown): void {
    if (this.#cutOff === undefined) this.#handler.onBodySent?.(chunk);
  }

  onRequestSent(): void {
    if (this.#cutOff === undefined) this.#handler.onRequestSent?.();
  }
}
