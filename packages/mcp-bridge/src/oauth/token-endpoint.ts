// Shared by every grant: option checks, the guarded request options, token endpoint answers,
// error translation and client authentication.

import * as oauth from 'oauth4webapi';
import { McpBridgeError } from '../mcp-bridge-error.js';
import type { DpopKeyRecord, TokenAuthMethod } from '../store/connection-store.js';
import {
  type AuthorizationServerMetadata,
  checkEndpointUrl,
  discoverAuthorizationServer,
} from './discovery.js';
import { checkDpopAlgorithms, DpopKey } from './dpop.js';
import {
  OAuthConfigurationError,
  OAuthDiscoveryError,
  OAuthDpopError,
  OAuthError,
  OAuthIssuerMismatchError,
  OAuthResponseError,
} from './errors.js';
import { type OAuthHttp, type OAuthNetworkOptions, resolveOAuthHttp } from './http.js';
import { discoverLegacyAuthorizationServer } from './legacy-discovery.js';

/** Token endpoint authentication methods, in order of preference. */
export const TOKEN_AUTH_METHODS: readonly TokenAuthMethod[] = Object.freeze([
  'client_secret_basic',
  'client_secret_post',
  'none',
]);

/** Tokens from the token endpoint. */
export interface OAuthTokens {
  /** The access token, sent as `Authorization: <tokenType> <accessToken>`. Secret. */
  readonly accessToken: string;
  /**
   * `Bearer`, or `DPoP` when the request carried a DPoP proof (then a Bearer answer is refused,
   * and a DPoP answer to a request without a proof is refused too).
   */
  readonly tokenType: 'Bearer' | 'DPoP';
  /** `undefined` when the server issued none (after a refresh: keep the stored one). */
  readonly refreshToken: string | undefined;
  /** Epoch milliseconds, when the server said `expires_in`. */
  readonly expiresAt: number | undefined;
  /** Granted scope, when the server said (else keep the requested/stored one). */
  readonly scope: string | undefined;
}

/** The client registration + issuer every token request needs. */
export interface OAuthClientOptions extends OAuthNetworkOptions {
  /** The client id from {@link OAuthStart.clientId}. */
  readonly clientId: string;
  /** The client secret, for a confidential client. Secret. */
  readonly clientSecret?: string | undefined;
  /** How to authenticate at the token endpoint, from {@link OAuthStart.tokenAuthMethod}. */
  readonly tokenAuthMethod: TokenAuthMethod;
  /** The issuer chosen at start; the token endpoint is rediscovered from it every time. */
  readonly issuer: string;
  /** The RFC 8707 resource; always sent. */
  readonly resource: string;
  /** As given to `startOAuth` (the 2025-03-26 fallback). Default `false`. */
  readonly legacyAuthorizationServer?: boolean | undefined;
  /**
   * The connection's DPoP key (RFC 9449): the token request carries a proof signed with it and
   * the answer must be a DPoP-bound token. Default: none (a Bearer token is required). Secret.
   */
  readonly dpopKey?: DpopKeyRecord | undefined;
}

/** Validates a string option (non-empty, at most 4096 characters). */
export function requireString(value: unknown, name: string, optional = false): string | undefined {
  if (value === undefined && optional) return undefined;
  if (typeof value !== 'string' || value.length === 0 || value.length > 4096) {
    throw new OAuthConfigurationError(`${name} must be a non-empty string`, {
      details: { option: name },
    });
  }
  return value;
}

export function checkMethod(value: unknown): TokenAuthMethod | undefined {
  if (value === undefined) return undefined;
  if (!TOKEN_AUTH_METHODS.includes(value as TokenAuthMethod)) {
    throw new OAuthConfigurationError(
      'tokenAuthMethod must be client_secret_basic, client_secret_post or none',
      { details: { option: 'tokenAuthMethod' } },
    );
  }
  return value as TokenAuthMethod;
}

export function checkSecretConsistency(method: TokenAuthMethod, secret: string | undefined): void {
  if (method === 'none' && secret !== undefined) {
    throw new OAuthConfigurationError('a client secret was given for tokenAuthMethod "none"', {
      details: { option: 'clientSecret' },
    });
  }
  if (method !== 'none' && secret === undefined) {
    throw new OAuthConfigurationError(`tokenAuthMethod "${method}" needs a client secret`, {
      details: { option: 'clientSecret' },
    });
  }
}

/** oauth4webapi request options: the bounded, guarded fetch, and the DPoP handle if any. */
export function requestOptions(
  http: OAuthHttp,
  dpop?: DpopKey,
): {
  [oauth.customFetch]: (url: string, init: unknown) => Promise<Response>;
  [oauth.allowInsecureRequests]: boolean;
  DPoP?: oauth.DPoPHandle;
} {
  return {
    [oauth.customFetch]: (url, init) => http.fetch(url, init as RequestInit),
    [oauth.allowInsecureRequests]: http.allowInsecure,
    ...(dpop === undefined ? {} : { DPoP: dpop.handle }),
  };
}

/**
 * Resolves the DPoP key for a token request and checks the authorization server accepts ES256
 * proofs (when it lists algorithms).
 */
export async function dpopFor(
  record: DpopKeyRecord | undefined,
  metadata: AuthorizationServerMetadata,
): Promise<DpopKey | undefined> {
  if (record === undefined) return undefined;
  checkDpopAlgorithms(metadata.raw.dpop_signing_alg_values_supported);
  return DpopKey.fromRecord(record);
}

/**
 * Turns an error thrown inside oauth4webapi into one of ours. The server's `error_description`,
 * `error_uri` and response body are never copied, not even as `cause`.
 */
export function translate(error: unknown, step: string): McpBridgeError {
  if (McpBridgeError.isInstance(error)) return error;
  if (error instanceof oauth.ResponseBodyError) {
    return new OAuthError(`the authorization server refused the ${step}`, {
      error: error.error,
      status: error.status,
    });
  }
  if (error instanceof oauth.WWWAuthenticateChallengeError) {
    const challenge = error.cause.find((item) => item.scheme === 'bearer') ?? error.cause[0];
    return new OAuthError(`the authorization server refused the ${step}`, {
      error: challenge?.parameters.error ?? 'invalid_client',
      status: error.status,
    });
  }
  if (error instanceof oauth.AuthorizationResponseError) {
    return new OAuthError('the authorization response is an error', { error: error.error });
  }
  const check =
    error instanceof oauth.OperationProcessingError ||
    error instanceof oauth.UnsupportedOperationError
      ? error.code
      : undefined;
  return new OAuthResponseError(`the ${step} response is invalid`, {
    details: { step, check: typeof check === 'string' ? check : 'unknown' },
  });
}

/**
 * RFC 6749 §2.3.1 Basic authentication with `application/x-www-form-urlencoded` id and secret
 * (oauth4webapi also escapes `-._~`, which servers that do not decode reject).
 */
export function basicAuth(secret: string): oauth.ClientAuth {
  const encode = (value: string): string => new URLSearchParams({ v: value }).toString().slice(2);
  return (_as, client, _body, headers) => {
    const credentials = `${encode(client.client_id)}:${encode(secret)}`;
    headers.set('authorization', `Basic ${Buffer.from(credentials, 'utf8').toString('base64')}`);
  };
}

export function clientAuth(method: TokenAuthMethod, secret: string | undefined): oauth.ClientAuth {
  switch (method) {
    case 'client_secret_basic':
      return basicAuth(secret as string);
    case 'client_secret_post':
      return oauth.ClientSecretPost(secret as string);
    default:
      return oauth.None();
  }
}

export function checkLegacyOption(value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new OAuthConfigurationError('legacyAuthorizationServer must be a boolean', {
      details: { option: 'legacyAuthorizationServer' },
    });
  }
  return value;
}

export function isNoMetadata(error: unknown): boolean {
  return OAuthDiscoveryError.isInstance(error) && error.details?.reason === 'no-metadata';
}

/**
 * The token endpoint comes from the stored issuer's metadata. With the 2025-03-26 fallback, an
 * issuer that publishes no metadata of its own is looked up at the MCP server's origin again,
 * and must still be the identical issuer.
 */
export async function rediscover(
  http: OAuthHttp,
  issuer: string,
  resource: URL,
  legacy: boolean,
): Promise<AuthorizationServerMetadata> {
  try {
    return await discoverAuthorizationServer(http, issuer);
  } catch (error) {
    if (!legacy || !isNoMetadata(error)) throw error;
  }
  const metadata = await discoverLegacyAuthorizationServer(http, resource);
  if (metadata.issuer !== issuer) {
    throw new OAuthIssuerMismatchError(
      'the MCP server now names another authorization server than the stored issuer',
      { details: { expected: issuer } },
    );
  }
  return metadata;
}

export interface TokenContext {
  readonly http: OAuthHttp;
  readonly metadata: AuthorizationServerMetadata;
  readonly client: oauth.Client;
  readonly auth: oauth.ClientAuth;
  readonly resource: string;
  readonly dpop: DpopKey | undefined;
}

export async function tokenContext(options: OAuthClientOptions): Promise<TokenContext> {
  const http = resolveOAuthHttp(options);
  const clientId = requireString(options.clientId, 'clientId') as string;
  const clientSecret = requireString(options.clientSecret, 'clientSecret', true);
  const issuer = requireString(options.issuer, 'issuer') as string;
  const resource = requireString(options.resource, 'resource') as string;
  const method = checkMethod(options.tokenAuthMethod);
  if (method === undefined) {
    throw new OAuthConfigurationError('tokenAuthMethod is required', {
      details: { option: 'tokenAuthMethod' },
    });
  }
  checkSecretConsistency(method, clientSecret);
  const resourceUrl = checkEndpointUrl(resource, 'resource', http);
  const metadata = await rediscover(
    http,
    issuer,
    resourceUrl,
    checkLegacyOption(options.legacyAuthorizationServer),
  );
  return {
    http,
    metadata,
    client: { client_id: clientId, token_endpoint_auth_method: method },
    auth: clientAuth(method, clientSecret),
    resource,
    dpop: await dpopFor(options.dpopKey, metadata),
  };
}

/**
 * Reads a token endpoint answer: non-empty access token of the expected type (`DPoP` when the
 * request carried a proof, else `Bearer`), expiry, scope.
 */
export function readTokens(
  result: oauth.TokenEndpointResponse,
  now: number,
  dpop = false,
): OAuthTokens {
  const accessToken = result.access_token;
  if (typeof accessToken !== 'string' || accessToken.length === 0) {
    throw new OAuthResponseError('the token response has no access token', {
      details: { step: 'token' },
    });
  }
  const type = String(result.token_type).toLowerCase();
  if (dpop && type === 'bearer') {
    // Never downgraded: the connection asked for a sender-bound token.
    throw new OAuthDpopError(
      'the authorization server issued a Bearer token to a DPoP token request',
      { reason: 'not-bound' },
    );
  }
  if (type !== (dpop ? 'dpop' : 'bearer')) {
    throw new OAuthResponseError(
      dpop ? 'the token response is not a DPoP token' : 'the token response is not a Bearer token',
      { details: { step: 'token' } },
    );
  }
  const refresh = result.refresh_token;
  const expiresIn = result.expires_in;
  const scope = result.scope;
  return {
    accessToken,
    tokenType: dpop ? 'DPoP' : 'Bearer',
    refreshToken: typeof refresh === 'string' && refresh.length > 0 ? refresh : undefined,
    expiresAt:
      typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn > 0
        ? now + Math.floor(expiresIn * 1000)
        : undefined,
    scope: typeof scope === 'string' && scope.length > 0 ? scope : undefined,
  };
}
