import { McpBridgeError } from '../mcp-bridge-error.js';
import { OAuthConfigurationError, OAuthTransportError } from './errors.js';
import { type AllowNonPublic, type FetchFunction, guardedOAuthFetch } from './guard.js';
import { refuseRenamedOAuthOptions } from './refuse-renamed-oauth-options.js';

export type { AllowNonPublic, FetchFunction };

/** Network options shared by every OAuth function. */
export interface OAuthNetworkOptions {
  /** Approves non-public addresses; see {@link AllowNonPublic}. Default `false`. */
  readonly allowNonPublic?: AllowNonPublic | undefined;
  /** Largest accepted response body, in bytes. Default 262,144 (256 KiB). */
  readonly maxResponseBytes?: number | undefined;
  /**
   * Time limit to open each connection (TCP and TLS handshake), in milliseconds. Default 15,000.
   * Applies to the built-in network guard (an injected `fetch` brings its own connect limit).
   */
  readonly connectTimeoutMs?: number | undefined;
  /**
   * Time limit of each HTTP exchange once connected (request sent, whole response read), in
   * milliseconds. Default 30,000.
   */
  readonly readTimeoutMs?: number | undefined;
  /**
   * The fetch under the bounds. Default: the toolfence network guard. Only inject your own for
   * tests or when you wrap the guard yourself; the bounds (size, no redirects, no compression)
   * are applied on top of it either way.
   */
  readonly fetch?: FetchFunction | undefined;
}

/** Default of {@link OAuthNetworkOptions.maxResponseBytes}. */
export const DEFAULT_OAUTH_MAX_RESPONSE_BYTES = 262_144;
/** Default of {@link OAuthNetworkOptions.connectTimeoutMs}: 15,000 milliseconds. */
export const DEFAULT_OAUTH_CONNECT_TIMEOUT_MS = 15_000;
/** Default of {@link OAuthNetworkOptions.readTimeoutMs}: 30,000 milliseconds. */
export const DEFAULT_OAUTH_READ_TIMEOUT_MS = 30_000;
/** @deprecated In seconds; use {@link DEFAULT_OAUTH_CONNECT_TIMEOUT_MS}. Removed in the next minor. */
export const DEFAULT_OAUTH_CONNECT_TIMEOUT_SECONDS = 15;
/** @deprecated In seconds; use {@link DEFAULT_OAUTH_READ_TIMEOUT_MS}. Removed in the next minor. */
export const DEFAULT_OAUTH_READ_TIMEOUT_SECONDS = 30;
/** @deprecated In seconds; use {@link DEFAULT_OAUTH_READ_TIMEOUT_MS}. Removed in the next minor. */
export const DEFAULT_OAUTH_TIMEOUT_SECONDS = 30;

/** Resolved network settings. */
export interface OAuthHttp {
  readonly fetch: FetchFunction;
  /** Sends a request and returns status and headers only; the body is discarded unread. */
  readonly probe: (
    input: string,
    init: RequestInit,
  ) => Promise<{ status: number; headers: Headers }>;
  readonly allowInsecure: boolean;
  readonly allowNonPublic: AllowNonPublic;
  readonly maxResponseBytes: number;
  readonly connectTimeoutMs: number;
  readonly readTimeoutMs: number;
}

function positiveInteger(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new OAuthConfigurationError(`${name} must be a positive integer`, {
      details: { option: name },
    });
  }
  return value;
}

function positiveNumber(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new OAuthConfigurationError(`${name} must be a positive number`, {
      details: { option: name },
    });
  }
  return value;
}

/** Validates the network options and builds the bounded fetch every OAuth request goes through. */
export function resolveOAuthHttp(options: OAuthNetworkOptions): OAuthHttp {
  refuseRenamedOAuthOptions(options);
  const allowNonPublic = options.allowNonPublic ?? false;
  if (typeof allowNonPublic !== 'boolean' && typeof allowNonPublic !== 'function') {
    throw new OAuthConfigurationError('allowNonPublic must be a boolean or a function', {
      details: { option: 'allowNonPublic' },
    });
  }
  const maxResponseBytes = positiveInteger(
    options.maxResponseBytes,
    'maxResponseBytes',
    DEFAULT_OAUTH_MAX_RESPONSE_BYTES,
  );
  const readTimeoutMs = positiveNumber(
    options.readTimeoutMs,
    'readTimeoutMs',
    DEFAULT_OAUTH_READ_TIMEOUT_MS,
  );
  const connectTimeoutMs = positiveNumber(
    options.connectTimeoutMs,
    'connectTimeoutMs',
    DEFAULT_OAUTH_CONNECT_TIMEOUT_MS,
  );
  if (options.fetch !== undefined && typeof options.fetch !== 'function') {
    throw new OAuthConfigurationError('fetch must be a function', { details: { option: 'fetch' } });
  }
  const inner =
    options.fetch ??
    guardedOAuthFetch({
      allowNonPublic,
      maxResponseBytes,
      connectTimeoutMs,
      readTimeoutMs,
    });
  return {
    fetch: boundedFetch(inner, maxResponseBytes, readTimeoutMs + connectTimeoutMs),
    probe: async (input, init) => {
      const url = new URL(input);
      const headers = new Headers(init.headers);
      headers.set('accept-encoding', 'identity');
      const timeout = AbortSignal.timeout(Math.ceil(readTimeoutMs + connectTimeoutMs));
      let response: Response;
      try {
        response = await inner(url.href, { ...init, headers, redirect: 'manual', signal: timeout });
      } catch (error) {
        throw transportFailure(error, url, timeout);
      }
      await response.body?.cancel().catch(() => undefined);
      if (response.status >= 300 && response.status < 400) {
        throw new OAuthTransportError('the MCP server answered with a redirect; none is followed', {
          reason: 'redirect',
          details: { origin: url.origin, status: response.status },
        });
      }
      return { status: response.status, headers: response.headers };
    },
    allowInsecure: allowNonPublic !== false,
    allowNonPublic,
    maxResponseBytes,
    connectTimeoutMs,
    readTimeoutMs,
  };
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError');
}

async function readBounded(response: Response, limit: number, url: URL): Promise<Uint8Array> {
  const body = response.body;
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => undefined);
      throw new OAuthTransportError('OAuth response body exceeds maxResponseBytes', {
        reason: 'too-large',
        details: { origin: url.origin, limit },
      });
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}

/**
 * Wraps a fetch so that: no redirect is followed (a 3xx is an error), no compression is asked
 * for or accepted, the body is read fully under a byte limit, and a time limit applies. Errors
 * never carry remote text.
 */
export function boundedFetch(
  inner: FetchFunction,
  maxResponseBytes: number,
  timeoutMs: number,
): FetchFunction {
  return async (input, init) => {
    const url = new URL(input);
    const headers = new Headers(init.headers);
    headers.set('accept-encoding', 'identity');
    const timeout = AbortSignal.timeout(Math.ceil(timeoutMs));
    const signal = init.signal ? AbortSignal.any([init.signal, timeout]) : timeout;
    let response: Response;
    try {
      response = await inner(url.href, { ...init, headers, redirect: 'manual', signal });
    } catch (error) {
      throw transportFailure(error, url, timeout);
    }
    try {
      if (response.status >= 300 && response.status < 400) {
        throw new OAuthTransportError('OAuth endpoint answered with a redirect; none is followed', {
          reason: 'redirect',
          details: { origin: url.origin, status: response.status },
        });
      }
      const encoding = response.headers.get('content-encoding');
      if (encoding !== null && encoding.trim().toLowerCase() !== 'identity') {
        throw new OAuthTransportError('OAuth response is compressed; only identity is accepted', {
          reason: 'compressed',
          details: { origin: url.origin },
        });
      }
      const declared = response.headers.get('content-length');
      if (declared !== null && Number(declared) > maxResponseBytes) {
        throw new OAuthTransportError('OAuth response body exceeds maxResponseBytes', {
          reason: 'too-large',
          details: { origin: url.origin, limit: maxResponseBytes },
        });
      }
      const bytes = await readBounded(response, maxResponseBytes, url);
      const nullBody =
        response.status === 204 || response.status === 205 || response.status === 304;
      return new Response(nullBody ? null : bytes, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    } catch (error) {
      await response.body?.cancel().catch(() => undefined);
      throw transportFailure(error, url, timeout);
    }
  };
}

/** Maps any failure of the inner fetch (guard refusals and limits included) to our error. */
function transportFailure(error: unknown, url: URL, timeout: AbortSignal): McpBridgeError {
  if (McpBridgeError.isInstance(error)) return error;
  const details = { origin: url.origin };
  const code = (error as { code?: unknown } | null)?.code;
  const limit = (error as { limit?: unknown } | null)?.limit;
  if (code === 'NET_LIMIT_EXCEEDED' && limit === 'response-bytes') {
    return new OAuthTransportError('OAuth response body exceeds maxResponseBytes', {
      reason: 'too-large',
      details,
    });
  }
  const causeCode = (error as { cause?: { code?: unknown } } | null)?.cause?.code;
  if (code === 'UND_ERR_CONNECT_TIMEOUT' || causeCode === 'UND_ERR_CONNECT_TIMEOUT') {
    return new OAuthTransportError('OAuth connection timed out (connectTimeoutMs)', {
      reason: 'timeout',
      details: { ...details, phase: 'connect' },
    });
  }
  if (isTimeout(error) || timeout.aborted || code === 'NET_LIMIT_EXCEEDED') {
    return new OAuthTransportError('OAuth request timed out (readTimeoutMs)', {
      reason: 'timeout',
      details: { ...details, phase: 'read' },
    });
  }
  if (code === 'NET_POLICY_DENIED') {
    const rule = (error as { reason?: unknown }).reason;
    return new OAuthTransportError('OAuth request refused by the network guard', {
      reason: 'blocked',
      cause: error,
      details: { ...details, rule: typeof rule === 'string' ? rule : 'unknown' },
    });
  }
  return new OAuthTransportError('OAuth request failed', { reason: 'network', details });
}
