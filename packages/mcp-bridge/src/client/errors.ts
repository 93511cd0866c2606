import { McpBridgeError, type McpBridgeErrorOptions } from '../mcp-bridge-error.js';

/** Why a call's outcome is unknown. */
export type AmbiguityReason =
  | 'wire-failed'
  | 'timeout'
  | 'response-too-large'
  | 'response-too-complex'
  | 'invalid-response'
  | 'server-error-status'
  | 'aborted'
  | 'closed';

/**
 * A `tools/call` may have reached the server, and no matching result was confirmed. The
 * operation may have completed: verify external state before retrying. Never replayed.
 */
export class AmbiguousDeliveryError extends McpBridgeError {
  static override readonly code: string = 'CLIENT_AMBIGUOUS_DELIVERY';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/AmbiguousDeliveryError',
  );
  /** Why the outcome is unknown. */
  readonly reason: AmbiguityReason;

  /** Creates the error with a fixed message; `reason` is also recorded in `details.reason`. */
  constructor(reason: AmbiguityReason, options: McpBridgeErrorOptions = {}) {
    super(
      'The tool call may have completed; verify external state before retrying (its outcome is unknown)',
      { ...options, details: { reason, ...options.details } },
    );
    this.reason = reason;
  }
}

/**
 * The server answered the request with a JSON-RPC error. The error's own `message` never holds
 * the server's text; `serverMessage` does, bounded and made printable, for a caller that shows it
 * as the server's words (the bridge does, so a model can correct its arguments).
 */
export class ServerRpcError extends McpBridgeError {
  static override readonly code: string = 'CLIENT_REMOTE_ERROR';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/ServerRpcError');
  /** The JSON-RPC error code. */
  readonly rpcCode: number;
  /**
   * The server's error message: control and invisible characters escaped, at most
   * `maxServerMessageChars` characters of it (McpClient option, default 2,048); `undefined` when
   * the server sent none or the option is 0. Remote text: show it labelled as the server's words.
   */
  readonly serverMessage: string | undefined;

  /** Creates the error for JSON-RPC error `rpcCode` (also in `details.rpcCode`). */
  constructor(
    rpcCode: number,
    options: McpBridgeErrorOptions & { readonly serverMessage?: string | undefined } = {},
  ) {
    const { serverMessage, ...rest } = options;
    super(`The MCP server answered with JSON-RPC error ${rpcCode}`, {
      ...rest,
      details: { rpcCode, ...rest.details },
    });
    this.rpcCode = rpcCode;
    this.serverMessage = serverMessage;
  }
}

/** An `McpClient` option is invalid. */
export class ClientConfigurationError extends McpBridgeError {
  static override readonly code: string = 'CLIENT_CONFIGURATION';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/ClientConfigurationError',
  );
}

/** The handshake (`initialize`) failed or timed out. */
export class HandshakeError extends McpBridgeError {
  static override readonly code: string = 'CLIENT_HANDSHAKE';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/HandshakeError');
}

/** A replayable read (`tools/list`) failed: timed out or got a malformed answer. */
export class RequestFailedError extends McpBridgeError {
  static override readonly code: string = 'CLIENT_REQUEST_FAILED';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/RequestFailedError');
}

/**
 * `resources/read` named a resource the server does not have (SEP-2164: JSON-RPC `-32602` with
 * data `{ uri }`, or the older `-32002`). The server's text is not kept.
 */
export class ResourceNotFoundError extends McpBridgeError {
  static override readonly code: string = 'CLIENT_RESOURCE_NOT_FOUND';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/ResourceNotFoundError',
  );
  /** The URI that was asked for (the caller's own value, not the server's text). */
  readonly uri: string;

  /** Creates the error for `uri` (kept on the instance, not in the message). */
  constructor(uri: string, options: McpBridgeErrorOptions = {}) {
    super('The MCP server has no resource with the requested URI', options);
    this.uri = uri;
  }
}
