import { McpBridgeError, type McpBridgeErrorOptions } from '../mcp-bridge-error.js';

/** Why version negotiation stopped. */
export type NegotiationFailureReason =
  /** The host pinned a modern version and the server showed no modern support. */
  | 'pinned-version-refused'
  /** The host offered only modern versions and the server is legacy (or showed no modern sign). */
  | 'no-legacy-fallback'
  /** The server answered the `server/discover` probe with a malformed result. */
  | 'invalid-discover-result'
  /** The server asked for a version retry a second time (retries are never looped). */
  | 'retry-loop';

/**
 * Version negotiation ended without an era: see `reason`. Only the probe (`server/discover`,
 * which changes nothing on a server) or a refused `initialize` was sent.
 */
export class VersionNegotiationError extends McpBridgeError {
  static override readonly code: string = 'PROTOCOL_NEGOTIATION_FAILED';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/VersionNegotiationError',
  );
  /** Why negotiation stopped. */
  readonly reason: NegotiationFailureReason;

  /** Creates the error with a safe message; `reason` is also in `details.reason`. */
  constructor(
    reason: NegotiationFailureReason,
    message: string,
    options: McpBridgeErrorOptions = {},
  ) {
    super(message, { ...options, details: { reason, ...options.details } });
    this.reason = reason;
  }
}
