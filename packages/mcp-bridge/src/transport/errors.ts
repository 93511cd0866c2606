import { McpBridgeError, type McpBridgeErrorOptions } from '../mcp-bridge-error.js';

// `CALL_NOT_RUN` of `@toolfence/tools`: a registered symbol, so the transport room marks its
// errors without loading the tools package (the scanner and transports stay importable alone).
const CALL_NOT_RUN: unique symbol = Symbol.for('@toolfence/tools/call-not-run');

/**
 * Which byte limit a record broke: `json`, `sse`, `stdio` and `content-length` are
 * `maxRecordBytes`; `sse-comment` is `maxSseCommentBytes` (SSE comment lines in a row).
 */
export type RecordSizeKind = 'json' | 'sse' | 'sse-comment' | 'stdio' | 'content-length';

/** Which kind of record was not valid UTF-8. */
export type RecordEncodingKind = 'json' | 'sse' | 'stdio';

/** Which structure limit a record broke. */
export type RecordComplexityKind = 'tokens' | 'depth' | 'number';

/**
 * A record from the server (a JSON body, one SSE event, one stdio line) exceeded `maxRecordBytes`.
 * The wire and the session are reset; pending requests are rejected at once.
 */
export class ResponseTooLargeError extends McpBridgeError {
  static override readonly code: string = 'TRANSPORT_RESPONSE_TOO_LARGE';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/ResponseTooLargeError',
  );
  /** The kind of record that was too large. */
  readonly kind: RecordSizeKind;
  /** The limit in bytes. */
  readonly limit: number;

  /** Creates the error for a `kind` record over `limit` bytes (both also in `details`). */
  constructor(kind: RecordSizeKind, limit: number, options: McpBridgeErrorOptions = {}) {
    const what = kind === 'sse-comment' ? 'A run of SSE comment lines' : `A ${kind} record`;
    super(`${what} from the MCP server exceeded the limit of ${limit} bytes`, {
      ...options,
      details: { kind, limit, ...options.details },
    });
    this.kind = kind;
    this.limit = limit;
  }
}

/**
 * A record from the server exceeded a structure limit (token count, nesting depth, numeric token
 * length) during the structural scan that precedes `JSON.parse`.
 */
export class ResponseTooComplexError extends McpBridgeError {
  static override readonly code: string = 'TRANSPORT_RESPONSE_TOO_COMPLEX';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/ResponseTooComplexError',
  );
  /** The structure limit that was exceeded. */
  readonly kind: RecordComplexityKind;
  /** The limit's value. */
  readonly limit: number;

  /** Creates the error for exceeding the `kind` structure limit `limit` (both also in `details`). */
  constructor(kind: RecordComplexityKind, limit: number, options: McpBridgeErrorOptions = {}) {
    super(`A record from the MCP server exceeded the ${kind} limit of ${limit}`, {
      ...options,
      details: { kind, limit, ...options.details },
    });
    this.kind = kind;
    this.limit = limit;
  }
}

/** The wire failed (connection reset, process exited, stream ended early). */
export class TransportError extends McpBridgeError {
  static override readonly code: string = 'TRANSPORT_FAILED';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/TransportError');
}

/** The server sent something that is not an MCP record (a stray stdout line, invalid JSON, a wrong content type). */
export class TransportProtocolError extends McpBridgeError {
  static override readonly code: string = 'TRANSPORT_PROTOCOL';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/TransportProtocolError',
  );
}

/**
 * A record from the server (a JSON body, an SSE line, a stdio line) is not valid UTF-8. The
 * record is refused rather than decoded with replacement characters; like any
 * {@link TransportProtocolError} it resets the wire and the session.
 */
export class RecordEncodingError extends TransportProtocolError {
  static override readonly code: string = 'TRANSPORT_INVALID_UTF8';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/RecordEncodingError');
  /** The kind of record that was not valid UTF-8. */
  readonly kind: RecordEncodingKind;

  /** Creates the error for a `kind` record that is not valid UTF-8 (`kind` also in `details`). */
  constructor(kind: RecordEncodingKind, options: McpBridgeErrorOptions = {}) {
    super(`A ${kind} record from the MCP server is not valid UTF-8; only UTF-8 text is accepted`, {
      ...options,
      details: { kind, ...options.details },
    });
    this.kind = kind;
  }
}

/** A record did not complete within `readTimeoutMs`. */
export class TransportTimeoutError extends McpBridgeError {
  static override readonly code: string = 'TRANSPORT_TIMEOUT';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/TransportTimeoutError',
  );
}

/** The server answered an HTTP request with an unexpected status. */
export class TransportHttpError extends McpBridgeError {
  static override readonly code: string = 'TRANSPORT_HTTP_STATUS';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/TransportHttpError');
  /** The HTTP status. */
  readonly status: number;

  /**
   * Creates the error for HTTP `status` (also in `details.status`); the body is not kept.
   * `options.message` replaces the default message (subclasses say what to do).
   */
  constructor(status: number, options: McpBridgeErrorOptions & { readonly message?: string } = {}) {
    const { message, ...rest } = options;
    super(message ?? `The MCP server answered with HTTP status ${status}`, {
      ...rest,
      details: { status, ...rest.details },
    });
    this.status = status;
  }
}

/** A transport option is invalid (a refused header, a bearer token over plain HTTP, a bad limit). */
export class TransportConfigurationError extends McpBridgeError {
  static override readonly code: string = 'TRANSPORT_CONFIGURATION';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/TransportConfigurationError',
  );
}

/**
 * The request provably never left this process (the connection failed before any byte was
 * written, or the process was gone). Safe to retry.
 */
export class RequestNotSentError extends McpBridgeError {
  static override readonly code: string = 'TRANSPORT_NOT_SENT';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/RequestNotSentError');

  /** Creates the error, marked `CALL_NOT_RUN` (of `@toolfence/tools`): a budget refunds it. */
  constructor(message: string, options: McpBridgeErrorOptions = {}) {
    super(message, options);
    Object.defineProperty(this, CALL_NOT_RUN, { value: true });
  }
}

/** The server answered HTTP 401/403 and no fresh credential fixed it. */
export class TransportUnauthorizedError extends McpBridgeError {
  static override readonly code: string = 'TRANSPORT_UNAUTHORIZED';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/TransportUnauthorizedError',
  );
  /** 401 or 403. */
  readonly status: number;

  /** Creates the error for HTTP `status` 401 or 403 (also in `details.status`). */
  constructor(status: number, options: McpBridgeErrorOptions = {}) {
    super(`The MCP server refused the credentials (HTTP ${status})`, {
      ...options,
      details: { status, ...options.details },
    });
    this.status = status;
  }
}

/** The server answered HTTP 404 for the current `Mcp-Session-Id`: the session is gone. */
export class SessionExpiredError extends McpBridgeError {
  static override readonly code: string = 'TRANSPORT_SESSION_EXPIRED';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/SessionExpiredError');
}
