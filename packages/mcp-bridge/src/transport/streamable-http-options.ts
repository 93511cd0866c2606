import type { Dispatcher } from 'undici';
import type { McpAuthProvider } from './auth-provider.js';
import { TransportConfigurationError } from './errors.js';
import { copyFixedHeaders } from './header-rules.js';
import type { McpBridgeLogger } from './logger.js';
import {
  positiveInteger,
  positiveNumber,
  type RecordLimits,
  refuseRenamedOptions,
  resolveRecordLimits,
} from './record-limits.js';

/** Options of `StreamableHttpTransport`. */
export interface StreamableHttpTransportOptions extends Partial<RecordLimits> {
  /** The MCP endpoint. */
  readonly url: string | URL;
  /** The undici dispatcher every request goes through (the network guard's). */
  readonly dispatcher: Dispatcher;
  /** Owns `Authorization`: resolved for every request. */
  readonly authProvider?: McpAuthProvider;
  /** Fixed extra headers, copied and validated at construction. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Milliseconds for the first response byte and for each record to complete. Default 120,000. */
  readonly readTimeoutMs?: number;
  /** Send `DELETE` for the session on close. Default true. */
  readonly deleteSessionOnClose?: boolean;
  /** SSE resumption attempts (GET with `Last-Event-ID`) per stream. Default 2. */
  readonly maxSseReconnects?: number;
  /** Milliseconds to wait before resuming when the server sent no `retry:`. Default 1000. */
  readonly defaultSseRetryMs?: number;
  /** Milliseconds a server's `retry:` may ask for at most (a longer value is cut to this). Default 30,000. */
  readonly maxSseRetryMs?: number;
  /** Bytes of SSE comment lines allowed between two blank lines (comments are dropped, never kept). Default 64 KiB. */
  readonly maxSseCommentBytes?: number;
  /** Open the optional GET stream for server-initiated messages after the handshake. Default true. */
  readonly standaloneStream?: boolean;
  /** Diagnostics. */
  readonly logger?: McpBridgeLogger;
}

/** The options of a StreamableHttpTransport, checked, with their defaults filled in. */
export interface CheckedHttpTransportOptions {
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  readonly limits: RecordLimits;
  readonly readTimeoutMs: number;
  readonly deleteSessionOnClose: boolean;
  readonly maxSseReconnects: number;
  readonly defaultSseRetryMs: number;
  readonly maxSseRetryMs: number;
  readonly maxSseCommentBytes: number;
  readonly standaloneStream: boolean;
}

/**
 * Checks a StreamableHttpTransport's options as its constructor does (the constructor calls it).
 * Its own module, so McpClient refuses a bad HTTP option when it is built without loading the
 * transport, which it loads when it first connects to an HTTP server.
 * @throws {TransportConfigurationError} for an invalid or non-https (except loopback) URL, a URL
 *   with credentials, or a bad option.
 */
export function checkStreamableHttpOptions(
  options: StreamableHttpTransportOptions,
): CheckedHttpTransportOptions {
  refuseRenamedOptions(
    options,
    {
      readTimeout: 'readTimeoutMs',
      defaultSseRetry: 'defaultSseRetryMs',
      maxSseRetry: 'maxSseRetryMs',
    },
    'StreamableHttpTransport',
  );
  let url: URL;
  try {
    url = new URL(options.url);
  } catch (error) {
    throw new TransportConfigurationError('url is not a valid URL', { cause: error });
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TransportConfigurationError('url must use https (or http to loopback)');
  }
  if (url.username !== '' || url.password !== '') {
    throw new TransportConfigurationError('url must not carry credentials');
  }
  // A fragment is never sent; `href` keeps an empty `#` that `hash` reports as ''.
  if (url.href.includes('#')) {
    throw new TransportConfigurationError(
      'url must not have a fragment (#...): it is never sent to the server; give the endpoint URL without it',
      { details: { option: 'url', reason: 'fragment' } },
    );
  }
  const headers = copyFixedHeaders(options.headers);
  const limits = resolveRecordLimits(options);
  const readTimeoutMs = positiveNumber('readTimeoutMs', options.readTimeoutMs, 120_000);
  if (
    options.deleteSessionOnClose !== undefined &&
    typeof options.deleteSessionOnClose !== 'boolean'
  ) {
    throw new TransportConfigurationError('deleteSessionOnClose must be a boolean');
  }
  const maxSseReconnects =
    options.maxSseReconnects === 0
      ? 0
      : positiveInteger('maxSseReconnects', options.maxSseReconnects, 2);
  const defaultSseRetryMs = positiveInteger('defaultSseRetryMs', options.defaultSseRetryMs, 1000);
  const maxSseRetryMs = positiveInteger('maxSseRetryMs', options.maxSseRetryMs, 30_000);
  const maxSseCommentBytes = positiveInteger(
    'maxSseCommentBytes',
    options.maxSseCommentBytes,
    64 * 1024,
  );
  if (options.standaloneStream !== undefined && typeof options.standaloneStream !== 'boolean') {
    throw new TransportConfigurationError('standaloneStream must be a boolean');
  }
  return {
    url,
    headers,
    limits,
    readTimeoutMs,
    deleteSessionOnClose: options.deleteSessionOnClose ?? true,
    maxSseReconnects,
    defaultSseRetryMs,
    maxSseRetryMs,
    maxSseCommentBytes,
    standaloneStream: options.standaloneStream ?? true,
  };
}
