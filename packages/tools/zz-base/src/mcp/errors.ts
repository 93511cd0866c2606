import { ToolsError, type ToolsErrorOptions } from '../tools-error.js';

/** A server configuration, limit or option is invalid. */
export class McpConfigurationError extends ToolsError {
  static override readonly code: string = 'MCP_CONFIGURATION';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/McpConfigurationError');
}

/**
 * A server is used in the wrong lifecycle state: unknown name, already registered, not
 * initialized when it must be, unregistered, or the registry is closed.
 */
export class McpLifecycleError extends ToolsError {
  static override readonly code: string = 'MCP_LIFECYCLE';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/McpLifecycleError');
}

/** A request to the server did not finish within its time limit. */
export class McpTimeoutError extends ToolsError {
  static override readonly code: string = 'MCP_TIMEOUT';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/McpTimeoutError');
}

/** The session failed below the protocol (connection lost, transport error, unknown failure). */
export class McpTransportError extends ToolsError {
  static override readonly code: string = 'MCP_TRANSPORT';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/McpTransportError');
}

/** The server answered with a payload that breaks the protocol (wrong shape, repeated cursor). */
export class McpProtocolError extends ToolsError {
  static override readonly code: string = 'MCP_PROTOCOL';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/McpProtocolError');
}

/** What {@link McpRemoteError} carries. */
export interface McpRemoteErrorOptions extends ToolsErrorOptions {
  /** The JSON-RPC error code the server sent. */
  readonly remoteCode: number;
}

/**
 * The server answered a request with a JSON-RPC error. Only its numeric code is kept: the
 * server's message and data are never copied (they are untrusted remote text).
 */
export class McpRemoteError extends ToolsError {
  static override readonly code: string = 'MCP_REMOTE_ERROR';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/McpRemoteError');
  /** The JSON-RPC error code the server sent. */
  readonly remoteCode: number;

  /** Creates the error; `options.remoteCode` is kept on the instance and in `details`. */
  constructor(message: string, options: McpRemoteErrorOptions) {
    super(message, {
      ...options,
      details: { ...(options.details ?? {}), remoteCode: options.remoteCode },
    });
    this.remoteCode = options.remoteCode;
  }
}

/** A page, item, content-block or character limit was exceeded. */
export class McpLimitError extends ToolsError {
  static override readonly code: string = 'MCP_LIMIT_EXCEEDED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/McpLimitError');
}

/** The server's declared capabilities explicitly lack the one a request needs. */
export class McpCapabilityError extends ToolsError {
  static override readonly code: string = 'MCP_CAPABILITY_MISSING';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/McpCapabilityError');
}

/** A tool adapter belongs to a catalog that was replaced or changed: rediscover the tools. */
export class McpCatalogStaleError extends ToolsError {
  static override readonly code: string = 'MCP_CATALOG_STALE';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/McpCatalogStaleError');
}

/** Two tools of one catalog map to the same registry name. */
export class McpToolNameCollisionError extends ToolsError {
  static override readonly code: string = 'MCP_TOOL_NAME_COLLISION';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/McpToolNameCollisionError');
}
