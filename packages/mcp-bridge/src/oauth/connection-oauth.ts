import {
  type ConnectionRecord,
  type ConnectionStore,
  DEFAULT_AUTHORIZATION_WINDOW_MS,
  recentAuthorizationAttempts,
} from '../store/connection-store.js';
import { ConnectionNotFoundError } from '../store/store-errors.js';
import {
  completeOAuth,
  parseAuthorizationCallback,
  type StartOAuthOptions,
  startOAuth,
} from './authorization-code.js';
import { DpopKey } from './dpop.js';
import {
  AuthorizationRequiredError,
  OAuthConfigurationError,
  OAuthError,
  OAuthStateMismatchError,
} from './errors.js';
import type { OAuthNetworkOptions } from './http.js';
import { refreshOAuth } from './refresh-token.js';
import { refuseRenamedOAuthOptions } from './refuse-renamed-oauth-options.js';

/** Options of {@link authorizeConnection}. */
export interface AuthorizeConnectionOptions extends Omit<StartOAuthOptions, 'url'> {
  /** The MCP server URL; required when the store has no record for the connection yet. */
  readonly url?: string | undefined;
  /**
   * Flows started within this many milliseconds of the previous one count as one series.
   * Default 600,000 (ten minutes).
   */
  readonly authorizationWindowMs?: number | undefined;
}

/** What the host needs to send the user on: the authorize URL. */
export interface ConnectionAuthorization {
  /** The connection the flow was started for; pass it to {@link completeConnection} at the callback. */
  readonly connectionId: string;
  /** Send the user's browser here to authorize (carries PKCE, `state` and the resource). */
  readonly authorizeUrl: string;
}

/** Default time a started authorization stays valid: 600,000 milliseconds (ten minutes). */
export const DEFAULT_PENDING_AUTHORIZATION_MS = 600_000;
/** @deprecated In seconds; use {@link DEFAULT_PENDING_AUTHORIZATION_MS}. Removed in the next minor. */
export const DEFAULT_PENDING_AUTHORIZATION_SECONDS = 600;

/**
 * Runs {@link startOAuth} for a stored connection and persists the flow state (state, PKCE
 * verifier, client registration, issuer, resource). A client registered earlier at the same
 * issuer with the same redirect URI is reused.
 */
export async function authorizeConnection(
  store: ConnectionStore,
  connectionId: string,
  options: AuthorizeConnectionOptions,
): Promise<ConnectionAuthorization> {
  refuseRenamedOAuthOptions(options);
  const window = options.authorizationWindowMs ?? DEFAULT_AUTHORIZATION_WINDOW_MS;
  if (typeof window !== 'number' || !Number.isFinite(window) || window <= 0) {
    throw new OAuthConfigurationError('authorizationWindowMs must be a positive number', {
      details: { option: 'authorizationWindowMs' },
    });
  }
  const record = await store.get(connectionId);
  const url = options.url ?? record?.url;
  if (url === undefined) {
    throw new ConnectionNotFoundError('no connection record and no url given', {
      details: { connectionId },
    });
  }
  const reuse =
    options.clientId === undefined &&
    record?.clientId !== undefined &&
    record.url === url &&
    record.redirectUri === options.redirectUri &&
    (options.issuer === undefined || options.issuer === record.issuer);
  const { authorizationWindowMs: _window, ...startOptions } = options;
  const fresh = { ...startOptions, url };
  let started: Awaited<ReturnType<typeof startOAuth>>;
  try {
    started = await startOAuth(
      reuse
        ? {
            ...fresh,
            clientId: record.clientId,
            clientSecret: record.clientSecret,
            tokenAuthMethod: record.tokenAuthMethod,
            issuer: record.issuer,
          }
        : fresh,
    );
  } catch (error) {
    // The resource moved to another authorization server (its stored issuer is no longer
    // listed): register afresh with the listed one (SEP-2352), unless the host pinned an issuer.
    const movedAway =
      reuse &&
      options.issuer === undefined &&
      OAuthConfigurationError.isInstance(error) &&
      error.details?.reason === 'issuer-not-listed';
    if (!movedAway) throw error;
    started = await startOAuth(fresh);
  }
  const now = Date.now();
  // One DPoP key per connection: kept once created, made at the first flow that needs one.
  const dpopKey =
    started.dpop && record?.dpopKey === undefined
      ? (await DpopKey.generate()).record
      : record?.dpopKey;
  await store.update(connectionId, (current) => {
    const changed = current !== undefined && current.url !== url;
    let base: ConnectionRecord =
      changed || current === undefined ? { id: connectionId, url } : current;
    if (base.issuer !== undefined && base.issuer !== started.issuer) {
      // Another authorization server (a migration): the old server's tokens and grant are
      // dropped, so no refresh ever sends them to the new one.
      const {
        accessToken: _access,
        refreshToken: _refresh,
        expiresAt: _expires,
        tokenType: _type,
        scope: _scope,
        ...kept
      } = base;
      base = kept;
    }
    return {
      ...base,
      ...(dpopKey === undefined ? {} : { dpopKey: current?.dpopKey ?? dpopKey }),
      url,
      issuer: started.issuer,
      resource: started.resource,
      clientId: started.clientId,
      clientSecret: started.clientSecret,
      tokenAuthMethod: started.tokenAuthMethod,
      redirectUri: started.redirectUri,
      authorizationAttempts: recentAuthorizationAttempts(base, now, window) + 1,
      lastAuthorizationAt: now,
      pending: {
        state: started.state,
        codeVerifier: started.codeVerifier,
        redirectUri: started.redirectUri,
        scope: started.scope,
        dpop: started.dpop,
        createdAt: Date.now(),
      },
    };
  });
  return { connectionId, authorizeUrl: started.authorizeUrl };
}

/** Options of {@link completeConnection}. */
export interface CompleteConnectionOptions extends OAuthNetworkOptions {
  /** How long a started authorization stays valid, in milliseconds. Default 600,000. */
  readonly pendingAuthorizationMs?: number | undefined;
  /** As given to `authorizeConnection` (the MCP 2025-03-26 fallback). Default `false`. */
  readonly legacyAuthorizationServer?: boolean | undefined;
}

/**
 * Completes the flow at the host's callback route: checks `state` (constant time) against the
 * stored flow, consumes the flow (single use), exchanges the code (RFC 9207 `iss` checked) and
 * stores the tokens.
 */
export async function completeConnection(
  store: ConnectionStore,
  connectionId: string,
  callback: string | URL | URLSearchParams,
  options: CompleteConnectionOptions = {},
): Promise<ConnectionRecord> {
  refuseRenamedOAuthOptions(options);
  const ttl = options.pendingAuthorizationMs ?? DEFAULT_PENDING_AUTHORIZATION_MS;
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0) {
    throw new OAuthConfigurationError('pendingAuthorizationMs must be a positive number', {
      details: { option: 'pendingAuthorizationMs' },
    });
  }
  const record = await store.get(connectionId);
  const pending = record?.pending;
  if (record === undefined || pending === undefined) {
    throw new OAuthStateMismatchError('no authorization is pending for this connection', {
      details: { connectionId },
    });
  }
  const parsed = parseAuthorizationCallback(callback, pending.state);
  // Single use: the flow is consumed before the code is exchanged.
  let consumed = false;
  await store.update(connectionId, (current) => {
    if (current?.pending?.state !== pending.state) return undefined;
    consumed = true;
    return { ...current, pending: undefined };
  });
  if (!consumed || Date.now() - pending.createdAt > ttl) {
    throw new OAuthStateMismatchError('the pending authorization was already used or expired', {
      details: { connectionId },
    });
  }
  if (
    record.clientId === undefined ||
    record.issuer === undefined ||
    record.resource === undefined ||
    record.tokenAuthMethod === undefined
  ) {
    throw new OAuthConfigurationError('the connection record lacks its client registration', {
      details: { connectionId },
    });
  }
  const exchange = {
    ...options,
    code: parsed.code,
    iss: parsed.iss,
    codeVerifier: pending.codeVerifier,
    redirectUri: pending.redirectUri,
    clientId: record.clientId,
    clientSecret: record.clientSecret,
    tokenAuthMethod: record.tokenAuthMethod,
    issuer: record.issuer,
    resource: record.resource,
    dpopKey: pending.dpop === true ? record.dpopKey : undefined,
  };
  if (pending.dpop === true && record.dpopKey === undefined) {
    throw new AuthorizationRequiredError('the connection lost its DPoP key; authorize again', {
      connectionId,
      url: record.url,
      reason: 'dpop-key-missing',
      scope: pending.scope,
      issuer: record.issuer,
    });
  }
  const tokens = await forgetClientOnInvalidClient(store, connectionId, exchange.clientId, () =>
    completeOAuth(exchange),
  );
  const stored = await store.update(connectionId, (current) => ({
    ...(current ?? record),
    pending: undefined,
    accessToken: tokens.accessToken,
    tokenType: tokens.tokenType,
    refreshToken: tokens.refreshToken,
    expiresAt: tokens.expiresAt,
    scope: tokens.scope ?? pending.scope,
  }));
  return stored as ConnectionRecord;
}

/** Options of {@link refreshConnection}. */
export interface RefreshConnectionOptions extends OAuthNetworkOptions {
  /**
   * The access token the caller found stale or refused. When the stored access token is no
   * longer this one (another caller or process refreshed meanwhile), the stored record is
   * returned and no refresh request is sent. Default: always refresh.
   */
  readonly staleAccessToken?: string | undefined;
}

/**
 * Refreshes a connection's tokens, once per connection at a time (concurrent callers share the
 * refresh; with `SqliteConnectionStore`, other processes on the same file wait for it and then
 * find the rotated tokens). The update is atomic and conditional: nothing is written when the
 * refresh fails or when the record changed meanwhile, so the old token is never lost. A refused
 * refresh (`invalid_grant`) raises {@link AuthorizationRequiredError}.
 */
export function refreshConnection(
  store: ConnectionStore,
  connectionId: string,
  options: RefreshConnectionOptions = {},
): Promise<ConnectionRecord> {
  try {
    refuseRenamedOAuthOptions(options);
  } catch (error) {
    return Promise.reject(error);
  }
  const { staleAccessToken, ...network } = options;
  return store.singleFlight(`refresh:${connectionId}`, async () => {
    const record = await store.get(connectionId);
    if (record === undefined) {
      throw new ConnectionNotFoundError('no connection record', { details: { connectionId } });
    }
    if (
      staleAccessToken !== undefined &&
      record.accessToken !== undefined &&
      record.accessToken !== staleAccessToken
    ) {
      return record;
    }
    const used = record.refreshToken;
    if (
      used === undefined ||
      record.clientId === undefined ||
      record.issuer === undefined ||
      record.resource === undefined ||
      record.tokenAuthMethod === undefined
    ) {
      throw new AuthorizationRequiredError('the connection has no refresh token', {
        connectionId,
        url: record.url,
        reason: 'no-token',
        scope: record.scope,
        issuer: record.issuer,
      });
    }
    let tokens: Awaited<ReturnType<typeof refreshOAuth>>;
    try {
      const refresh = {
        ...network,
        refreshToken: used,
        clientId: record.clientId,
        clientSecret: record.clientSecret,
        tokenAuthMethod: record.tokenAuthMethod,
        issuer: record.issuer,
        resource: record.resource,
        scope: record.scope,
        dpopKey: record.tokenType === 'DPoP' ? record.dpopKey : undefined,
      };
      if (record.tokenType === 'DPoP' && record.dpopKey === undefined) {
        throw new AuthorizationRequiredError('the connection lost its DPoP key; authorize again', {
          connectionId,
          url: record.url,
          reason: 'dpop-key-missing',
          scope: record.scope,
          issuer: record.issuer,
        });
      }
      tokens = await forgetClientOnInvalidClient(store, connectionId, refresh.clientId, () =>
        refreshOAuth(refresh),
      );
    } catch (error) {
      if (
        OAuthError.isInstance(error) &&
        ['invalid_grant', 'invalid_client', 'unauthorized_client'].includes(error.error)
      ) {
        throw new AuthorizationRequiredError('the authorization server refused the refresh', {
          connectionId,
          url: record.url,
          reason: 'refresh-failed',
          scope: record.scope,
          issuer: record.issuer,
          cause: error,
        });
      }
      throw error;
    }
    const stored = await store.update(connectionId, (current) => {
      if (current === undefined || current.refreshToken !== used) return undefined;
      return {
        ...current,
        accessToken: tokens.accessToken,
        tokenType: tokens.tokenType,
        refreshToken: tokens.refreshToken ?? current.refreshToken,
        expiresAt: tokens.expiresAt,
        scope: tokens.scope ?? current.scope,
      };
    });
    return stored as ConnectionRecord;
  });
}

/**
 * Runs a token request; on `invalid_client` (a registration the server no longer knows, or an
 * expired secret) the stored client registration is dropped, so the next `authorizeConnection`
 * registers afresh. Tokens are kept.
 */
async function forgetClientOnInvalidClient<T>(
  store: ConnectionStore,
  connectionId: string,
  clientId: string,
  request: () => Promise<T>,
): Promise<T> {
  try {
    return await request();
  } catch (error) {
    if (OAuthError.isInstance(error) && error.error === 'invalid_client') {
      await store.update(connectionId, (current) =>
        current?.clientId === clientId
          ? { ...current, clientId: undefined, clientSecret: undefined, tokenAuthMethod: undefined }
          : undefined,
      );
    }
    throw error;
  }
}
