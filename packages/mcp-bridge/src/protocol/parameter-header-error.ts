import { McpBridgeError, type McpBridgeErrorOptions } from '../mcp-bridge-error.js';

/**
 * A `tools/call` argument that the tool's schema mirrors into an `Mcp-Param-*` header (its
 * `x-mcp-header` annotation) has a value that cannot be sent as that header: not of the
 * declared type, or an integer outside the safe range. Nothing was sent.
 */
export class ParameterHeaderError extends McpBridgeError {
  static override readonly code: string = 'PROTOCOL_PARAM_HEADER_INVALID';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/ParameterHeaderError');
  /** The header names (after `Mcp-Param-`) whose values could not be sent. */
  readonly headers: readonly string[];

  /** Creates the error for `headers`; no argument value is copied. */
  constructor(headers: readonly string[], options: McpBridgeErrorOptions = {}) {
    super(
      'A tool argument mirrored into an Mcp-Param header is not of its declared type (string, boolean or safe integer); nothing was sent',
      { ...options, details: { headers: [...headers], ...options.details } },
    );
    this.headers = Object.freeze([...headers]);
  }
}
