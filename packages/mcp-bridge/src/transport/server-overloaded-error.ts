import type { McpBridgeErrorOptions } from '../mcp-bridge-error.js';
import { TransportHttpError } from './errors.js';
import { waitText } from './server-rate-limited-error.js';

/**
 * The MCP server answered HTTP 529 (overloaded, as Anthropic's and some gateways' APIs say): it
 * refused the request under load. Never retried by the client, `tools/call` included; wait
 * `retryAfterMs` (from `Retry-After`, when the server sent one) before sending again.
 */
export class ServerOverloadedError extends TransportHttpError {
  static override readonly code: string = 'TRANSPORT_SERVER_OVERLOADED';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/ServerOverloadedError',
  );
  /** Milliseconds the server asked to wait (`Retry-After`), or `undefined` when it said none. */
  readonly retryAfterMs: number | undefined;

  /** Creates the error; `retryAfterMs` is also in `details.retryAfterMs`. */
  constructor(retryAfterMs: number | undefined, options: McpBridgeErrorOptions = {}) {
    super(529, {
      ...options,
      message: `The MCP server is overloaded (HTTP 529) and refused the request; ${waitText(retryAfterMs)}. It was not retried.`,
      details: { ...options.details, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) },
    });
    this.retryAfterMs = retryAfterMs;
  }
}
