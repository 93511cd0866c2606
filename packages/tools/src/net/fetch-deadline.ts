import {
  type Dispatcher,
  type RequestInit as UndiciRequestInit,
  type Response as UndiciResponse,
  fetch as undiciFetch,
} from 'undici';
import { NetworkLimitError } from './network-limit-error.js';

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
 * aborts the hop in flight through undici's own abort (a hop not yet on a connection is aborted
 * before a byte is written) and rejects the pending hop with the `NetworkLimitError` at once; when
 * the call has returned its response and no hop is in flight, it releases the timer.
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
  /** undici's abort of the hop on a connection, if any. */
  #abort: AbortRequest | undefined;
  /** Rejects the hop `fetch` is waiting for. */
  #reject: ((reason: Error) => void) | undefined;

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

  /**
   * One hop through undici's fetch; `init.dispatcher` must be this deadline. Rejects with the
   * `NetworkLimitError` as soon as the limit passes, even while a connection is still being made.
   */
  fetch(href: string, init: UndiciRequestInit): Promise<UndiciResponse> {
    if (this.reason !== undefined) return Promise.reject(this.reason);
    return new Promise<UndiciResponse>((resolve, reject) => {
      this.#reject = reject;
      undiciFetch(href, init).then(resolve, reject);
    });
  }

  /** Undici's fetch dispatches each hop here; the guarded agent does the work. */
  dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    this.#inFlight += 1;
    return this.#agent.dispatch(options, new DeadlineHandler(handler as LegacyHandler, this));
  }

  /** The call hands its response to the caller: release the timer once nothing is in flight. */
  returned(): void {
    this.#returned = true;
    if (this.#inFlight === 0) this.release();
  }

  /** A hop reached a connection: `abort` cancels it (before it is written, if called now). */
  connected(abort: AbortRequest): boolean {
    if (this.reason !== undefined) {
      abort(this.reason);
      return false;
    }
    this.#abort = abort;
    return true;
  }

  /** One hop finished on the wire (its last byte arrived, or it failed). */
  settled(abort: AbortRequest | undefined): void {
    this.#inFlight -= 1;
    if (abort !== undefined && this.#abort === abort) this.#abort = undefined;
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
    const abort = this.#abort;
    this.#abort = undefined;
    abort?.(reason);
    this.#reject?.(reason);
  }
}

/**
 * Undici's fetch handler with the hop's connection and end reported to the
 * {@link FetchDeadline}; every callback passes through unchanged.
 */
class DeadlineHandler {
  readonly #handler: LegacyHandler;
  readonly #deadline: FetchDeadline;
  #abort: AbortRequest | undefined;
  #settled = false;

  constructor(handler: LegacyHandler, deadline: FetchDeadline) {
    this.#handler = handler;
    this.#deadline = deadline;
  }

  #settle(): void {
    if (!this.#settled) {
      this.#settled = true;
      this.#deadline.settled(this.#abort);
    }
  }

  onConnect(abort: AbortRequest, context?: object): void {
    this.#abort = abort;
    // Past the limit already: undici's abort errors the request before a byte is written.
    if (this.#deadline.connected(abort)) this.#handler.onConnect?.(abort, context);
  }

  onResponseStarted(): void {
    this.#handler.onResponseStarted?.();
  }

  onHeaders(
    statusCode: number,
    headers: Buffer[],
    resume: () => void,
    statusText: string,
  ): boolean {
    return this.#handler.onHeaders?.(statusCode, headers, resume, statusText) ?? true;
  }

  onData(chunk: Buffer): boolean {
    return this.#handler.onData?.(chunk) ?? true;
  }

  onComplete(trailers: string[] | null): void {
    try {
      this.#handler.onComplete?.(trailers);
    } finally {
      this.#settle();
    }
  }

  onError(error: Error): void {
    try {
      this.#handler.onError?.(error);
    } finally {
      this.#settle();
    }
  }

  onUpgrade(statusCode: number, headers: Buffer[] | string[] | null, socket: unknown): void {
    this.#handler.onUpgrade?.(statusCode, headers, socket);
  }

  onBodySent(chunk: unknown): void {
    this.#handler.onBodySent?.(chunk);
  }

  onRequestSent(): void {
    this.#handler.onRequestSent?.();
  }
}
