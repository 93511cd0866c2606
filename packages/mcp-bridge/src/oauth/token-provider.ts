import {
  type ConnectionRecord,
  type ConnectionStore,
  DEFAULT_AUTHORIZATION_WINDOW_MS,
  recentAuthorizationAttempts,
} from '../store/connection-store.js';
import type {
  McpAuthHeaders,
  McpAuthRequest,
  McpAuthResponse,
} from '../transport/auth-provider.js';
import { parseAuthChallenge, widenScope } from './challenge.js';
import type { DpopKey } from './dpop.js';
import { checkNonce } from './dpop-nonce.js';
import {
  AuthorizationRequiredError,
  OAuthConfigurationError,
  OAuthDpopError,
  OAuthResourceMismatchError,
  OAuthStepUpLimitError,
} from './errors.js';
import type { OAuthNetworkOptions } from './http.js';
import { refuseRenamedOAuthOptions } from './refuse-renamed-oauth-options.js';

/** Options of {@link OAuthTokenProvider} (and McpClient's `oauth` option). */
export interface OAuthConnectionOptions extends OAuthNetworkOptions {
  /** Where the connection's record (client, tokens) is read and rotated tokens are written. */
  readonly store: ConnectionStore;
  /** Id of the connection's record in `store`, as given to {@link authorizeConnection}. */
  readonly connectionId: string;
  /** The MCP server URL, reported in errors when the store has no record yet. */
  readonly url?: string | undefined;
  /** Refresh this many milliseconds before `expiresAt`. Default 60,000. */
  readonly refreshSkewMs?: number | undefined;
  /** Authorization flows allowed in one series (see `authorizationWindowMs`). Default 3. */
  readonly maxAuthorizationAttempts?: number | undefined;
  /**
   * Flows started within this many milliseconds of the previous one count as one series.
   * Default 600,000 (ten minutes).
   */
  readonly authorizationWindowMs?: number | undefined;
}

/** Default of {@link OAuthConnectionOptions.refreshSkewMs}: 60,000 milliseconds. */
export const DEFAULT_REFRESH_SKEW_MS = 60_000;
/** @deprecated In seconds; use {@link DEFAULT_REFRESH_SKEW_MS}. Removed in the next minor. */
export const DEFAULT_REFRESH_SKEW_SECONDS = 60;
/** Default of {@link OAuthConnectionOptions.maxAuthorizationAttempts}. */
export const DEFAULT_MAX_AUTHORIZATION_ATTEMPTS = 3;

/**
 * Supplies bearer tokens for one stored connection: refreshes before expiry or after a 401
 * (single-flight, rotated tokens persisted), and raises {@link AuthorizationRequiredError} when
 * the user must authorize (again). Plug it into an MCP client's `token` function and 401/403
 * hooks.
 */
export class OAuthTokenProvider {
  readonly #options: OAuthConnectionOptions;
  readonly #network: OAuthNetworkOptions;
  readonly #skewMs: number;
  readonly #maxAttempts: number;
  readonly #windowMs: number;

  /**
   * Validates `options`; reads nothing from the store until a token is asked for.
   * @throws {OAuthConfigurationError} when `store` is not a ConnectionStore, `connectionId` is
   *   empty, or a limit is not a valid number.
   */
  constructor(options: OAuthConnectionOptions) {
    if (
      typeof options?.store?.get !== 'function' ||
      typeof options.store.singleFlight !== 'function'
    ) {
      throw new OAuthConfigurationError('oauth.store must be a ConnectionStore', {
        details: { option: 'store' },
      });
    }
    if (typeof options.connectionId !== 'string' || options.connectionId.length === 0) {
      throw new OAuthConfigurationError('oauth.connectionId must be a non-empty string', {
        details: { option: 'connectionId' },
      });
    }
    refuseRenamedOAuthOptions(options);
    const skew = options.refreshSkewMs ?? DEFAULT_REFRESH_SKEW_MS;
    if (typeof skew !== 'number' || !Number.isFinite(skew) || skew < 0) {
      throw new OAuthConfigurationError('refreshSkewMs must be a non-negative number', {
        details: { option: 'refreshSkewMs' },
      });
    }
    const attempts = options.maxAuthorizationAttempts ?? DEFAULT_MAX_AUTHORIZATION_ATTEMPTS;
    if (typeof attempts !== 'number' || !Number.isSafeInteger(attempts) || attempts < 1) {
      throw new OAuthConfigurationError('maxAuthorizationAttempts must be a positive integer', {
        details: { option: 'maxAuthorizationAttempts' },
      });
    }
    const window = options.authorizationWindowMs ?? DEFAULT_AUTHORIZATION_WINDOW_MS;
    if (typeof window !== 'number' || !Number.isFinite(window) || window <= 0) {
      throw new OAuthConfigurationError('authorizationWindowMs must be a positive number', {
        details: { option: 'authorizationWindowMs' },
      });
    }
    this.#windowMs = window;
    this.#options = options;
    this.#skewMs = skew;
    this.#maxAttempts = attempts;
    this.#network = {
      allowNonPublic: options.allowNonPublic,
      maxResponseBytes: options.maxResponseBytes,
      connectTimeoutMs: options.connectTimeoutMs,
      readTimeoutMs: options.readTimeoutMs,
      fetch: options.fetch,
    };
  }

  /** The connection id this provider serves. */
  get connectionId(): string {
    return this.#options.connectionId;
  }

  #required(
    reason: AuthorizationRequiredError['reason'],
    record: { url?: string; scope?: string | undefined; issuer?: string | undefined } | undefined,
    scope?: string,
    attempt?: number,
  ): AuthorizationRequiredError {
    return new AuthorizationRequiredError('the MCP server connection needs authorization', {
      connectionId: this.#options.connectionId,
      url: record?.url ?? this.#options.url ?? '',
      reason,
      scope: scope ?? record?.scope,
      issuer: record?.issuer,
      attempt,
    });
  }

  /**
   * Refuses to hand out the record's token for `target` unless the record was authorized for it:
   * its `url` or its RFC 8707 `resource` names the same origin and path (query and fragment
   * aside), or an origin-level resource of the same origin. A token is never sent to a server it was not issued for.
   * @throws {OAuthResourceMismatchError} naming both (origin and path only).
   */
  #checkTarget(record: ConnectionRecord, target: string | undefined): void {
    if (target === undefined) return;
    const wanted = parseUrl(target);
    if (wanted !== undefined && authorizedFor(record, wanted)) return;
    const shown = (value: string | undefined): string => {
      const parsed = value === undefined ? undefined : parseUrl(value);
      return parsed === undefined ? '(none)' : `${parsed.origin}${parsed.pathname}`;
    };
    throw new OAuthResourceMismatchError(
      `the stored connection ${JSON.stringify(this.#options.connectionId)} was authorized for ${shown(record.resource ?? record.url)}, not for ${shown(target)}: its token is not sent (use the connection authorized for this server, or authorize one)`,
      {
        details: {
          connectionId: this.#options.connectionId,
          authorizedFor: shown(record.resource ?? record.url),
          url: shown(target),
        },
      },
    );
  }

  /** The skew, capped at half the token's lifetime so short-lived tokens are not refreshed on every call. */
  #skew(record: {
    readonly expiresAt?: number | undefined;
    readonly updatedAt?: number | undefined;
  }): number {
    if (record.expiresAt === undefined || record.updatedAt === undefined) return this.#skewMs;
    return Math.min(this.#skewMs, Math.max(0, (record.expiresAt - record.updatedAt) / 2));
  }

  /**
   * The access token to send now as a Bearer token; refreshes first when it expires within the
   * skew.
   * @throws {OAuthDpopError} `bearer-refused` when the token is DPoP-bound (use {@link headers}).
   */
  async getToken(): Promise<string> {
    const record = await this.#current(this.#options.url);
    if (record.tokenType === 'DPoP') {
      // A DPoP-bound token is never sent as a bearer token.
      throw new OAuthDpopError(
        'the connection holds a DPoP-bound token; it is never sent as Bearer',
        {
          reason: 'bearer-refused',
          details: { connectionId: this.#options.connectionId },
        },
      );
    }
    return record.accessToken as string;
  }

  /**
   * The record with a fresh access token (refreshed first when it expires within the skew), for a
   * request to `target` (when known): a record authorized for another server is refused before
   * its token is read.
   */
  async #current(
    target: string | undefined,
  ): Promise<ConnectionRecord & { readonly accessToken: string }> {
    const record = await this.#options.store.get(this.#options.connectionId);
    if (record === undefined) throw this.#required('no-token', undefined);
    this.#checkTarget(record, target);
    const fresh =
      record.accessToken !== undefined &&
      (record.expiresAt === undefined || record.expiresAt - this.#skew(record) > Date.now());
    if (fresh) return record as ConnectionRecord & { readonly accessToken: string };
    if (record.refreshToken === undefined) throw this.#required('no-token', record);
    return this.#refresh(record);
  }

  /** Refreshes the stored tokens (single-flight per connection) and returns the new record. */
  async #refresh(
    record: ConnectionRecord,
  ): Promise<ConnectionRecord & { readonly accessToken: string }> {
    const { refreshConnection } = await import('./connection-oauth.js');
    const refreshed = await refreshConnection(this.#options.store, this.#options.connectionId, {
      ...this.#network,
      staleAccessToken: record.accessToken,
    });
    if (refreshed?.accessToken === undefined) throw this.#required('refresh-failed', record);
    return refreshed as ConnectionRecord & { readonly accessToken: string };
  }

  /** The DPoP key of the connection, once a DPoP request was made (for nonces). */
  #key: DpopKey | undefined;

  /**
   * McpClient seam: the `Authorization` header for one request: `Bearer <token>`, or for a
   * DPoP-bound token `DPoP <token>` with a fresh proof for this method and URL (`ath` bound to
   * the token, the origin's latest nonce).
   * @throws {AuthorizationRequiredError} `dpop-key-missing` when the record holds a DPoP token
   *   but no key (it cannot be used; authorize again).
   */
  async headers(request: McpAuthRequest): Promise<McpAuthHeaders | undefined> {
    const stored = await this.#options.store.get(this.#options.connectionId);
    if (stored?.accessToken === undefined && stored?.refreshToken === undefined) {
      // No credential yet: the request goes without one, so the server's 401 challenge names
      // the scope the first authorization asks for (answered in onChallenge).
      this.#lastToken = undefined;
      return undefined;
    }
    const record = await this.#current(request.url);
    const token = record.accessToken;
    this.#lastToken = token;
    if (record.tokenType !== 'DPoP') return { authorization: `Bearer ${token}` };
    if (record.dpopKey === undefined) throw this.#required('dpop-key-missing', record);
    const key = await (await import('./dpop.js')).DpopKey.fromRecord(record.dpopKey);
    this.#key = key;
    return {
      authorization: `DPoP ${token}`,
      dpop: await key.proof(request.method, request.url, token),
    };
  }

  /** McpClient seam: keeps the MCP server's latest `DPoP-Nonce` (RFC 9449 §9). */
  onResponse(response: McpAuthResponse): void {
    if (response.dpopNonce !== undefined)
      this.#key?.rememberNonce(response.url, response.dpopNonce);
  }

  /**
   * The server answered 401 to `rejectedToken`: refresh once (unless another caller already
   * replaced that token) and return the token to retry with. A 403-style `insufficient_scope`
   * challenge in `wwwAuthenticate` is handled as {@link onInsufficientScope}.
   */
  async onUnauthorized(wwwAuthenticate?: string | null, rejectedToken?: string): Promise<string> {
    const challenge = parseAuthChallenge(wwwAuthenticate);
    if (challenge?.error === 'insufficient_scope') return this.onInsufficientScope(challenge.scope);
    const record = await this.#options.store.get(this.#options.connectionId);
    if (record === undefined) throw this.#required('no-token', undefined, challenge?.scope);
    this.#checkTarget(record, this.#options.url);
    if (record.accessToken === undefined && record.refreshToken === undefined) {
      throw this.#required('no-token', record, widenScope(record, challenge?.scope));
    }
    if (
      rejectedToken !== undefined &&
      record.accessToken !== undefined &&
      record.accessToken !== rejectedToken
    ) {
      return record.accessToken;
    }
    if (challenge?.scheme === 'dpop' && record.tokenType !== 'DPoP') {
      // The server now wants DPoP-bound tokens: never upgraded silently; authorize again.
      throw this.#required('dpop-required', record, widenScope(record, challenge.scope));
    }
    if (record.refreshToken === undefined) {
      throw this.#required('unauthorized', record, widenScope(record, challenge?.scope));
    }
    return (await this.#refresh(record)).accessToken;
  }

  /**
   * The server answered 403 `insufficient_scope`: raises {@link AuthorizationRequiredError}
   * with the widened scope (stored plus challenged), or {@link OAuthStepUpLimitError} once
   * `maxAuthorizationAttempts` flows were started in one series (each within
   * `authorizationWindowMs` of the previous one, with no `onSuccess()` in between).
   */
  async onInsufficientScope(scope: string | undefined): Promise<never> {
    const record = await this.#options.store.get(this.#options.connectionId);
    const attempts = recentAuthorizationAttempts(record, Date.now(), this.#windowMs);
    if (attempts >= this.#maxAttempts) {
      throw new OAuthStepUpLimitError('too many authorization attempts for this connection', {
        details: { connectionId: this.#options.connectionId, limit: this.#maxAttempts },
      });
    }
    throw this.#required('insufficient-scope', record, widenScope(record, scope), attempts + 1);
  }

  /** The token last handed out by {@link token}, to recognise a stale 401. */
  #lastToken: string | undefined;

  /**
   * How many challenges one McpClient request may answer with a retry: a DPoP nonce, a refresh,
   * then a step-up.
   */
  readonly maxChallengesPerRequest: number = 3;

  /** McpClient seam: the bearer token for the next request (see {@link getToken}). */
  async token(): Promise<string> {
    const token = await this.getToken();
    this.#lastToken = token;
    return token;
  }

  /**
   * McpClient seam: a 401 refreshes once (a second 401 for the same request means the fresh
   * token was refused too: authorization required), and only if the refused request's
   * `authorization` still holds the stored token (otherwise another request already refreshed
   * it, and this one retries with the fresh token); a 403 `insufficient_scope` raises the
   * step-up {@link AuthorizationRequiredError}; any other 403 fails the request.
   */
  async onChallenge(challenge: {
    readonly status: number;
    readonly wwwAuthenticate: string | undefined;
    readonly attempt: number;
    readonly url?: string;
    readonly authorization?: string | undefined;
    readonly dpopNonce?: string | undefined;
    readonly previous?:
      | { readonly status: number; readonly wwwAuthenticate: string | undefined }
      | undefined;
  }): Promise<boolean> {
    const parsed = parseAuthChallenge(challenge.wwwAuthenticate);
    // A nonce request answers a DPoP request; to a Bearer one it means the server now wants DPoP
    // (handled below as dpop-required, never a silent upgrade).
    if (parsed?.scheme === 'dpop' && parsed.error === 'use_dpop_nonce' && this.#key !== undefined) {
      return this.#onNonce(challenge);
    }
    if (challenge.status === 403 || parsed?.error === 'insufficient_scope') {
      if (parsed?.error !== 'insufficient_scope') return false;
      return this.onInsufficientScope(parsed.scope);
    }
    const previous = challenge.previous;
    const refreshedAlready =
      previous === undefined
        ? challenge.attempt > 1
        : previous.status === 401 &&
          parseAuthChallenge(previous.wwwAuthenticate)?.error !== 'use_dpop_nonce';
    if (refreshedAlready) {
      const record = await this.#options.store.get(this.#options.connectionId);
      throw this.#required('unauthorized', record, widenScope(record, parsed?.scope));
    }
    // The token the server refused is the one the refused request carried, not whatever this
    // provider handed out last: two requests refused with the same token (concurrent requests,
    // replicas sharing a store) must cause one refresh, the later one just retries with its
    // result. Only a caller that does not pass `authorization` falls back to the last token.
    const refused =
      'authorization' in challenge
        ? challenge.authorization?.replace(/^(?:Bearer|DPoP) /i, '')
        : this.#lastToken;
    this.#lastToken = await this.onUnauthorized(challenge.wwwAuthenticate, refused);
    return true;
  }

  /**
   * The MCP server answered `DPoP error="use_dpop_nonce"`: keep its nonce and retry once; a
   * second nonce challenge in a row for the same request is an error, not a loop.
   */
  #onNonce(challenge: {
    readonly url?: string;
    readonly dpopNonce?: string | undefined;
    readonly previous?: { readonly wwwAuthenticate: string | undefined } | undefined;
  }): boolean {
    const previous = parseAuthChallenge(challenge.previous?.wwwAuthenticate);
    if (previous?.scheme === 'dpop' && previous.error === 'use_dpop_nonce') {
      throw new OAuthDpopError('the MCP server asked for a DPoP nonce twice in a row; giving up', {
        reason: 'nonce-loop',
        details: { connectionId: this.#options.connectionId },
      });
    }
    const nonce = checkNonce(challenge.dpopNonce);
    if (nonce === undefined || challenge.url === undefined) {
      throw new OAuthDpopError('the MCP server asked for a DPoP nonce without giving one', {
        reason: 'nonce-missing',
        details: { connectionId: this.#options.connectionId },
      });
    }
    this.#key?.rememberNonce(challenge.url, nonce);
    return true;
  }

  /** Call after an authorized request succeeded: resets the authorization attempt counter. */
  async onSuccess(): Promise<void> {
    await this.#options.store.update(this.#options.connectionId, (current) =>
      current === undefined || (current.authorizationAttempts ?? 0) === 0
        ? undefined
        : { ...current, authorizationAttempts: 0 },
    );
  }
}

/** A URL without its fragment, or undefined when `value` is not an absolute URL. */
function parseUrl(value: string): URL | undefined {
  try {
    const parsed = new URL(value);
    parsed.hash = '';
    return parsed;
  } catch {
    return undefined;
  }
}

/** The part of a URL that names a resource server: origin and path (no query, no fragment). */
function resourceKey(url: URL): string {
  return `${url.origin}${url.pathname}`;
}

/**
 * True when the record was authorized for `target`: its `url` or its `resource` names the same
 * origin and path (the query is not part of it: RFC 8707 resources carry none), or its resource
 * is origin-level and `target` is on that origin.
 */
function authorizedFor(record: ConnectionRecord, target: URL): boolean {
  const wanted = resourceKey(target);
  const url = typeof record.url === 'string' ? parseUrl(record.url) : undefined;
  if (url !== undefined && resourceKey(url) === wanted) return true;
  const resource = typeof record.resource === 'string' ? parseUrl(record.resource) : undefined;
  if (resource === undefined) return false;
  if (resourceKey(resource) === wanted) return true;
  // An origin-level resource (RFC 9728 §3.3, accepted at authorization only when the host opted
  // in) covers the whole origin.
  return resource.pathname === '/' && resource.origin === target.origin;
}
