import type { McpBridgeErrorOptions } from '../mcp-bridge-error.js';
import { TransportHttpError } from './errors.js';

/**
 * The MCP server answered HTTP 429 (too many requests): it refused the request. Never retried by
 * the client, `tools/call` included; wait `retryAfterMs` (from `Retry-After`, when the server
 * sent one) before sending again.
 */
export class ServerRateLimitedError extends TransportHttpError {
  static override readonly code: string = 'TRANSPORT_RATE_LIMITED';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/ServerRateLimitedError',
  );
  /** Milliseconds the server asked to wait (`Retry-After`), or `undefined` when it said none. */
  readonly retryAfterMs: number | undefined;

  /** Creates the error; `retryAfterMs` is also in `details.retryAfterMs`. */
  constructor(retryAfterMs: number | undefined, options: McpBridgeErrorOptions = {}) {
    super(429, {
      ...options,
      message: `The MCP server is rate limiting this client (HTTP 429) and refused the request; ${waitText(retryAfterMs)}. It was not retried.`,
      details: { ...options.details, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) },
    });
    this.retryAfterMs = retryAfterMs;
  }
}

/** What to do, in words: the server's wait when it gave one. */
export function waitText(retryAfterMs: number | undefined): string {
  return retryAfterMs === undefined
    ? 'wait before sending it again (the server gave no Retry-After)'
    : `wait at least ${retryAfterMs} ms (Retry-After) before sending it again`;
}
