// `subscriptions/listen` (MCP 2026-07-28) over Streamable HTTP: one long-lived POST whose SSE
// response carries the change notifications the client asked for. It replaces the legacy GET
// stream. The stream is reopened after it ends or is cut, with a capped exponential backoff.
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  type JSONRPCMessage,
  type JSONRPCRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { isRecord } from '../is-record.js';
import { isAuthRefusal } from '../transport/auth-refusal.js';
import { TransportHttpError, TransportUnauthorizedError } from '../transport/errors.js';
import type { McpBridgeLogger } from '../transport/logger.js';
import type { ListenStreamEnd } from '../transport/streamable-http-transport.js';

/** The `_meta` key that ties a notification on a listen stream to its subscription. */
export const SUBSCRIPTION_ID_KEY = 'io.modelcontextprotocol/subscriptionId';

/** Backoff of the listen stream, in milliseconds. */
export interface ListenBackoff {
  /** Delay before the first reopening. */
  readonly initialMs: number;
  /** The most any reopening waits (the doubling stops here). */
  readonly maxMs: number;
}

/** Options of {@link SubscriptionListener}. */
export interface SubscriptionListenerOptions extends ListenBackoff {
  /** Opens one stream for `message` (the HTTP transport's `listen`). */
  readonly open: (
    message: JSONRPCRequest,
    onMessage: (message: JSONRPCMessage) => void,
  ) => Promise<ListenStreamEnd>;
  /** Builds the `subscriptions/listen` request for one JSON-RPC id (with the modern `_meta`). */
  readonly request: (id: string) => JSONRPCRequest;
  /** Called for `notifications/tools/list_changed` on the stream. */
  readonly onToolsListChanged: () => void;
  /** Called whenever a change may have been missed (a stream acknowledged or lost). */
  readonly onToolsListStale: () => void;
  /** Diagnostics. */
  readonly logger?: McpBridgeLogger;
}

/** JSON-RPC errors that say the server will never serve this subscription. */
const PERMANENT_RPC_CODES: ReadonlySet<number> = new Set([-32601, -32602, -32021, -32003]);

function subscriptionOf(message: JSONRPCMessage): unknown {
  const params = 'params' in message && isRecord(message.params) ? message.params : undefined;
  return isRecord(params?._meta) ? params._meta[SUBSCRIPTION_ID_KEY] : undefined;
}

/**
 * Keeps one `subscriptions/listen` stream open for `toolsListChanged`. A stream that ends, or is
 * cut for a limit, a malformed record or a broken connection, is reopened after a delay that
 * doubles from `initialMs` up to `maxMs` (a 429/529 answer's `Retry-After` is waited for, within
 * `maxMs`); the doubling starts over only after a stream was
 * acknowledged and stayed open for at least `maxMs`, so no server can make it loop hot. It stops
 * for good on `stop()`, on an HTTP 4xx or auth refusal, on a JSON-RPC error that says the method
 * or filter is not served, and when the server acknowledges without `toolsListChanged`. Every time
 * a stream is lost or (re)acknowledged the catalog is marked stale, since a change may have been
 * missed.
 */
export class SubscriptionListener {
  readonly #options: SubscriptionListenerOptions;
  #stopped = false;
  #wake: (() => void) | undefined;
  #running: Promise<void> | undefined;
  #streams = 0;

  /** Validated options; nothing is sent before `start()`. */
  constructor(options: SubscriptionListenerOptions) {
    this.#options = options;
  }

  /** Streams opened so far (diagnostics and tests). */
  get streams(): number {
    return this.#streams;
  }

  /** Starts the loop in the background (once). */
  start(): void {
    if (this.#running !== undefined || this.#stopped) return;
    this.#running = this.#loop().catch((error: unknown) => {
      this.#options.logger?.warn?.('The subscriptions/listen loop stopped', {
        name: (error as Error | undefined)?.name,
      });
    });
  }

  /** Stops the loop; a pending delay ends at once. The open stream ends with the transport. */
  stop(): void {
    this.#stopped = true;
    this.#wake?.();
  }

  async #loop(): Promise<void> {
    const { initialMs, maxMs, logger } = this.#options;
    let failures = 0;
    while (!this.#stopped) {
      this.#streams++;
      const id = `toolfence-listen-${this.#streams}`;
      const opened = Date.now();
      const outcome = { acknowledged: false, unsupported: false, permanent: false };
      const end = await this.#options.open(this.#options.request(id), (message) =>
        this.#receive(id, message, outcome),
      );
      if (this.#stopped || end.kind === 'closed') return;
      if (end.kind === 'failed' && isPermanentFailure(end.error)) outcome.permanent = true;
      // The stream is gone: a change may have been missed while it was down.
      this.#options.onToolsListStale();
      if (outcome.permanent || outcome.unsupported) {
        logger?.warn?.('subscriptions/listen is not served; tool list changes are not followed', {
          ...(end.kind === 'failed' ? { code: (end.error as { code?: unknown }).code } : {}),
        });
        return;
      }
      if (outcome.acknowledged && Date.now() - opened >= maxMs) failures = 0;
      // A server that refused under load (429/529) with Retry-After is waited for, within maxMs.
      const retryAfterMs =
        end.kind === 'failed' ? (end.error as { retryAfterMs?: unknown }).retryAfterMs : undefined;
      const delayMs = Math.min(
        Math.max(
          initialMs * 2 ** Math.min(failures, 30),
          typeof retryAfterMs === 'number' && Number.isFinite(retryAfterMs) ? retryAfterMs : 0,
        ),
        maxMs,
      );
      failures++;
      logger?.debug?.('Reopening subscriptions/listen', {
        delayMs,
        attempt: this.#streams,
        ...(end.kind === 'failed' ? { code: (end.error as { code?: unknown }).code } : {}),
      });
      await this.#sleep(delayMs);
    }
  }

  #receive(
    id: string,
    message: JSONRPCMessage,
    outcome: { acknowledged: boolean; unsupported: boolean; permanent: boolean },
  ): void {
    if (isJSONRPCNotification(message)) {
      if (message.method === 'notifications/subscriptions/acknowledged') {
        if (subscriptionOf(message) !== id) return;
        outcome.acknowledged = true;
        const honored = isRecord(message.params?.notifications) ? message.params.notifications : {};
        if (honored.toolsListChanged !== true) outcome.unsupported = true;
        // Listings taken before the subscription may already be stale.
        this.#options.onToolsListStale();
        return;
      }
      if (message.method === 'notifications/tools/list_changed') {
        const subscription = subscriptionOf(message);
        if (subscription === undefined || subscription === id) this.#options.onToolsListChanged();
      }
      return;
    }
    if (isJSONRPCErrorResponse(message) && message.id === id) {
      if (PERMANENT_RPC_CODES.has(message.error.code)) outcome.permanent = true;
    }
    // A result for the listen id is the server's graceful close: the stream ends and is reopened.
  }

  #sleep(milliseconds: number): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, milliseconds);
      this.#wake = done;
    });
  }
}

/** An HTTP 4xx (but 408 and 429) or an auth refusal: reopening would be refused the same way. */
function isPermanentFailure(error: Error): boolean {
  if (isAuthRefusal(error) || error instanceof TransportUnauthorizedError) return true;
  return (
    error instanceof TransportHttpError &&
    error.status >= 400 &&
    error.status < 500 &&
    error.status !== 408 &&
    error.status !== 429
  );
}
