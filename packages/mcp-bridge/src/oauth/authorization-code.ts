// The authorization code grant (PKCE, RFC 8707 resource, RFC 9207 iss), with registration.

import { createHash, timingSafeEqual } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import type { TokenAuthMethod } from '../store/connection-store.js';
import { joinScopes, scopeList } from './challenge.js';
import {
  type AuthorizationServerMetadata,
  canonicalResource,
  chooseIssuer,
  chooseScope,
  discoverAuthorizationServer,
  discoverProtectedResource,
  type ProtectedResourceMetadata,
} from './discovery.js';
import { checkDpopAlgorithms, withDpopNonceRetry } from './dpop.js';
import {
  OAuthConfigurationError,
  OAuthError,
  OAuthIssuerMismatchError,
  OAuthResponseError,
  OAuthStateMismatchError,
  OAuthUnsupportedServerError,
  standardOAuthError,
} from './errors.js';
import { type OAuthHttp, type OAuthNetworkOptions, resolveOAuthHttp } from './http.js';
import { discoverLegacyAuthorizationServer } from './legacy-discovery.js';
import { probe } from './probe.js';
import {
  checkLegacyOption,
  checkMethod,
  checkSecretConsistency,
  isNoMetadata,
  type OAuthClientOptions,
  type OAuthTokens,
  readTokens,
  requestOptions,
  requireString,
  TOKEN_AUTH_METHODS,
  tokenContext,
  translate,
} from './token-endpoint.js';

/** Options of {@link startOAuth}. */
export interface StartOAuthOptions extends OAuthNetworkOptions {
  /** The MCP server URL (the protected resource). */
  readonly url: string;
  /** Where the authorization server sends the user back (your callback route). */
  readonly redirectUri: string;
  /** `client_name` for dynamic registration. Default `toolfence`. */
  readonly clientName?: string | undefined;
  /** Scope to request; must contain every scope the server's challenge names. */
  readonly scope?: string | undefined;
  /** A pre-registered client id (requires `issuer`). Without it, RFC 7591 registration runs. */
  readonly clientId?: string | undefined;
  /** The pre-registered client's secret, if it is confidential. */
  readonly clientSecret?: string | undefined;
  /** Token endpoint auth method of the pre-registered client, or the one to register. */
  readonly tokenAuthMethod?: TokenAuthMethod | undefined;
  /** The authorization server to use; must be listed by the protected resource. */
  readonly issuer?: string | undefined;
  /**
   * Opt in to the MCP 2025-03-26 fallback for servers that publish no RFC 9728 metadata (and
   * name none in their challenge): authorization-server metadata at the MCP server's origin,
   * else the default endpoints `/authorize`, `/token`, `/register` there. Weaker: the MCP
   * server names its own authorization server. Default `false` (such servers are refused).
   * Pass the same value to `completeOAuth`/`refreshOAuth`.
   */
  readonly legacyAuthorizationServer?: boolean | undefined;
  /**
   * The https URL of your client ID metadata document (CIMD, SEP-991). When the authorization
   * server advertises `client_id_metadata_document_supported`, this URL is the `client_id`
   * (a public client, `none`) and no registration runs; otherwise RFC 7591 registration runs as
   * usual. The document must list `redirectUri`. Not with `clientId`. Default: none.
   */
  readonly clientMetadataUrl?: string | undefined;
  /**
   * Ask for DPoP-bound tokens (RFC 9449) even when nothing requires them. DPoP is used anyway
   * when the protected-resource or authorization-server metadata says
   * `dpop_bound_access_tokens_required`, or the MCP server's challenge uses the `DPoP` scheme.
   * Default `false`.
   */
  readonly dpop?: boolean | undefined;
  /**
   * SEP-2207: add `offline_access` to the requested scope when the authorization server lists it
   * in `scopes_supported` (never when it does not). Default `true`.
   */
  readonly offlineAccess?: boolean | undefined;
  /**
   * Host policy: accept protected-resource metadata found only at the origin-level well-known
   * URL (`/.well-known/oauth-protected-resource`) whose `resource` is the MCP server's origin
   * (RFC 9728 §3.3 allows it). The token's audience is then the whole origin, valid for every
   * path on it, not just the MCP server URL. Never for a document named by the challenge or at
   * the path-specific URL. Default `false` (refused as a resource mismatch).
   */
  readonly acceptOriginResource?: boolean | undefined;
}

/** What {@link startOAuth} returns: everything the host must persist until the callback. */
export interface OAuthStart {
  /** Send the user's browser here. */
  readonly authorizeUrl: string;
  /** Compare with the callback's `state` using {@link verifyState}. Secret. */
  readonly state: string;
  /** The PKCE verifier (S256). Secret. */
  readonly codeVerifier: string;
  /** The client id used: the given one, the client metadata URL, or the one just registered. */
  readonly clientId: string;
  /** Secret, when the client is confidential. */
  readonly clientSecret: string | undefined;
  /** How the client authenticates at the token endpoint (as registered or given). */
  readonly tokenAuthMethod: TokenAuthMethod;
  /** The chosen authorization server's issuer identifier; token requests rediscover from it. */
  readonly issuer: string;
  /** The RFC 8707 resource (the MCP server URL as its metadata declares it). */
  readonly resource: string;
  /** The redirect URI sent in the authorize URL; the code exchange must send the same. */
  readonly redirectUri: string;
  /** The scope requested, if any. */
  readonly scope: string | undefined;
  /** True when the flow must end in a DPoP-bound token (pass a DPoP key to `completeOAuth`). */
  readonly dpop: boolean;
}

/** Options of {@link completeOAuth}. */
export interface CompleteOAuthOptions extends OAuthClientOptions {
  /** The `code` from the callback. */
  readonly code: string;
  /** The RFC 9207 `iss` from the callback, if present. */
  readonly iss?: string | undefined;
  /** The PKCE verifier from {@link OAuthStart.codeVerifier}. Secret. */
  readonly codeVerifier: string;
  /** The redirect URI from {@link OAuthStart.redirectUri}; must match the authorize request. */
  readonly redirectUri: string;
}

/** The parsed authorization response of the callback route. */
export interface AuthorizationCallback {
  /** The authorization code to pass to {@link completeOAuth}. Secret. */
  readonly code: string;
  /** The RFC 9207 `iss` parameter, when the server sent one; checked by {@link completeOAuth}. */
  readonly iss: string | undefined;
}

function checkClientMetadataUrl(value: unknown): string | undefined {
  const text = requireString(value, 'clientMetadataUrl', true);
  if (text === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  // draft-ietf-oauth-client-id-metadata-document: https, a path, no fragment, no credentials,
  // no dot segments.
  const segments = url?.pathname.split('/') ?? [];
  if (
    url === undefined ||
    url.protocol !== 'https:' ||
    url.pathname === '/' ||
    url.hash !== '' ||
    text.includes('#') ||
    url.username !== '' ||
    url.password !== '' ||
    text !== url.href ||
    segments.includes('.') ||
    segments.includes('..')
  ) {
    throw new OAuthConfigurationError(
      'clientMetadataUrl must be a normalized https URL with a path, without fragment or credentials',
      { details: { option: 'clientMetadataUrl' } },
    );
  }
  return text;
}

function checkRedirectUri(value: unknown): string {
  const text = requireString(value, 'redirectUri') as string;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new OAuthConfigurationError('redirectUri must be an absolute URL', {
      details: { option: 'redirectUri' },
    });
  }
  const loopback = ['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname);
  const privateScheme = /^[a-z][a-z0-9+-]*\.[a-z0-9+.-]+:$/.test(url.protocol);
  if (
    url.hash !== '' ||
    url.username !== '' ||
    url.password !== '' ||
    !(url.protocol === 'https:' || (url.protocol === 'http:' && loopback) || privateScheme)
  ) {
    throw new OAuthConfigurationError(
      'redirectUri must be https, http on a loopback host, or a private-use scheme, without fragment',
      { details: { option: 'redirectUri' } },
    );
  }
  return text;
}

function selectRegistrationMethod(
  metadata: AuthorizationServerMetadata,
  requested: TokenAuthMethod | undefined,
): TokenAuthMethod {
  // RFC 8414 §2: absent means client_secret_basic only.
  const supported = metadata.tokenEndpointAuthMethodsSupported ?? ['client_secret_basic'];
  if (requested !== undefined) {
    if (!supported.includes(requested)) {
      throw new OAuthUnsupportedServerError(
        'the authorization server does not support the requested tokenAuthMethod',
        { details: { tokenAuthMethod: requested } },
      );
    }
    return requested;
  }
  const method = TOKEN_AUTH_METHODS.find((candidate) => supported.includes(candidate));
  if (method === undefined) {
    throw new OAuthUnsupportedServerError(
      'the authorization server supports none of client_secret_basic, client_secret_post, none',
      { details: { issuer: metadata.issuer } },
    );
  }
  return method;
}

async function register(
  http: OAuthHttp,
  metadata: AuthorizationServerMetadata,
  method: TokenAuthMethod,
  redirectUri: string,
  clientName: string,
): Promise<{
  clientId: string;
  clientSecret: string | undefined;
  tokenAuthMethod: TokenAuthMethod;
}> {
  if (metadata.registrationEndpoint === undefined) {
    throw new OAuthUnsupportedServerError(
      'the authorization server offers no dynamic client registration; pass a clientId',
      { details: { issuer: metadata.issuer } },
    );
  }
  let response: Response;
  try {
    response = await oauth.dynamicClientRegistrationRequest(
      metadata.raw as oauth.AuthorizationServer,
      {
        client_name: clientName,
        // SEP-837: `native` for loopback and private-use redirect URIs, `web` for https ones.
        application_type: redirectUri.startsWith('https:') ? 'web' : 'native',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: method,
        // No `scope`: a scope fixed at registration would block a later step-up.
      },
      requestOptions(http),
    );
  } catch (error) {
    throw translate(error, 'client registration');
  }
  // Processed here rather than by oauth4webapi so that an omitted `client_secret_expires_at`
  // does not block a public client whose server echoes a secret (see below).
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    body = undefined;
  }
  const registered =
    typeof body === 'object' && body !== null && !Array.isArray(body)
      ? (body as Record<string, unknown>)
      : undefined;
  if (response.status !== 201 && response.status !== 200) {
    if (response.status >= 400 && response.status < 500 && typeof registered?.error === 'string') {
      throw new OAuthError('the authorization server refused the client registration', {
        error: registered.error,
        status: response.status,
      });
    }
    throw new OAuthResponseError('the client registration failed', {
      details: { step: 'client registration', status: response.status },
    });
  }
  if (registered === undefined) {
    throw new OAuthResponseError('the registration response is not a JSON object', {
      details: { step: 'client registration' },
    });
  }
  const clientId = registered.client_id;
  const returnedMethod = registered.token_endpoint_auth_method;
  let secret = registered.client_secret;
  if (typeof clientId !== 'string' || clientId.length === 0) {
    throw new OAuthResponseError('the registration response has no client_id', {
      details: { step: 'client registration' },
    });
  }
  if (returnedMethod !== undefined && returnedMethod !== method) {
    throw new OAuthResponseError('the server registered another token endpoint auth method', {
      details: { step: 'client registration', requested: method },
    });
  }
  if (method === 'none' && secret !== undefined) {
    if (returnedMethod === 'none') {
      throw new OAuthResponseError('the server returned a client secret for a public client', {
        details: { step: 'client registration' },
      });
    }
    // The server did not confirm the method: we registered a public client and never send
    // the echoed secret (a server that really wanted it answers invalid_client).
    secret = undefined;
  }
  if (method !== 'none' && (typeof secret !== 'string' || secret.length === 0)) {
    throw new OAuthResponseError('the server returned no client secret for a confidential client', {
      details: { step: 'client registration' },
    });
  }
  const uris = registered.redirect_uris;
  if (uris !== undefined && (!Array.isArray(uris) || !uris.includes(redirectUri))) {
    throw new OAuthResponseError('the server registered other redirect URIs', {
      details: { step: 'client registration' },
    });
  }
  return {
    clientId,
    clientSecret: method === 'none' ? undefined : (secret as string),
    tokenAuthMethod: method,
  };
}

const REPLACED_AUTHORIZE_PARAMETERS = [
  'response_type',
  'client_id',
  'redirect_uri',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'resource',
  'request',
  'request_uri',
  'response_mode',
];

/**
 * Starts the authorization code flow for an MCP server: probe, RFC 9728 metadata, issuer choice,
 * RFC 8414 metadata, scope choice, RFC 7591 registration when no client id is given, then the
 * authorize URL (PKCE S256, state, RFC 8707 resource). Persist the whole result (secrets
 * encrypted) until the callback.
 */
export async function startOAuth(options: StartOAuthOptions): Promise<OAuthStart> {
  const http = resolveOAuthHttp(options);
  const redirectUri = checkRedirectUri(options.redirectUri);
  const clientId = requireString(options.clientId, 'clientId', true);
  const clientSecret = requireString(options.clientSecret, 'clientSecret', true);
  const issuerOption = requireString(options.issuer, 'issuer', true);
  const scopeOption = options.scope === undefined ? undefined : String(options.scope);
  const clientName = requireString(options.clientName ?? 'toolfence', 'clientName') as string;
  const requestedMethod = checkMethod(options.tokenAuthMethod);
  const legacy = checkLegacyOption(options.legacyAuthorizationServer);
  const clientMetadataUrl = checkClientMetadataUrl(options.clientMetadataUrl);
  const dpopOption = checkBoolean(options.dpop, 'dpop', false);
  const offlineAccess = checkBoolean(options.offlineAccess, 'offlineAccess', true);
  const acceptOriginResource = checkBoolean(
    options.acceptOriginResource,
    'acceptOriginResource',
    false,
  );
  if (clientMetadataUrl !== undefined && clientId !== undefined) {
    throw new OAuthConfigurationError('pass either clientId or clientMetadataUrl, not both', {
      details: { option: 'clientMetadataUrl' },
    });
  }
  if (
    clientMetadataUrl !== undefined &&
    requestedMethod !== undefined &&
    requestedMethod !== 'none'
  ) {
    throw new OAuthConfigurationError('a client ID metadata document client uses "none"', {
      details: { option: 'tokenAuthMethod' },
    });
  }
  if (clientId !== undefined && issuerOption === undefined) {
    throw new OAuthConfigurationError('a pre-registered clientId requires the exact issuer', {
      details: { option: 'issuer' },
    });
  }
  if (clientId === undefined && clientSecret !== undefined) {
    throw new OAuthConfigurationError('clientSecret was given without clientId', {
      details: { option: 'clientSecret' },
    });
  }
  const resource = canonicalResource(options.url, http);

  const challenge = await probe(http, resource);
  let prm: ProtectedResourceMetadata | undefined;
  try {
    prm = await discoverProtectedResource(http, resource, challenge.resourceMetadata, {
      acceptOriginResource,
    });
  } catch (error) {
    // The 2025-03-26 fallback applies only when opted in and the server names no metadata at all.
    if (!legacy || challenge.resourceMetadata !== undefined || !isNoMetadata(error)) throw error;
  }
  let issuer: string;
  let metadata: AuthorizationServerMetadata;
  if (prm === undefined) {
    metadata = await discoverLegacyAuthorizationServer(http, resource);
    issuer = metadata.issuer;
    if (issuerOption !== undefined && issuerOption !== issuer) {
      throw new OAuthIssuerMismatchError(
        'the MCP server names another authorization server than the configured issuer',
        { details: { expected: issuerOption } },
      );
    }
  } else {
    issuer = chooseIssuer(prm.authorizationServers, issuerOption, http);
    metadata = await discoverAuthorizationServer(http, issuer);
  }
  const resourceValue = prm?.resource ?? resource.href;
  let scope = chooseScope(scopeOption, challenge.scope, prm?.scopesSupported);
  // SEP-2207: ask for a refresh token with offline_access only where the authorization server
  // lists it; a challenge or resource metadata naming it elsewhere is not followed.
  if (metadata.scopesSupported?.includes('offline_access')) {
    if (offlineAccess) scope = joinScopes(scope, 'offline_access');
  } else if (scopeOption === undefined && scope !== undefined) {
    scope =
      scopeList(scope)
        .filter((item) => item !== 'offline_access')
        .join(' ') || undefined;
  }
  const dpop =
    dpopOption ||
    challenge.dpop ||
    prm?.dpopRequired === true ||
    metadata.raw.dpop_bound_access_tokens_required === true;
  if (dpop) checkDpopAlgorithms(metadata.raw.dpop_signing_alg_values_supported);

  let client: {
    clientId: string;
    clientSecret: string | undefined;
    tokenAuthMethod: TokenAuthMethod;
  };
  if (clientId !== undefined) {
    const method = requestedMethod ?? (clientSecret === undefined ? 'none' : 'client_secret_basic');
    checkSecretConsistency(method, clientSecret);
    client = { clientId, clientSecret, tokenAuthMethod: method };
  } else if (
    clientMetadataUrl !== undefined &&
    metadata.raw.client_id_metadata_document_supported === true
  ) {
    // CIMD: the URL is the client id; the authorization server fetches the document itself.
    client = { clientId: clientMetadataUrl, clientSecret: undefined, tokenAuthMethod: 'none' };
  } else {
    const method = selectRegistrationMethod(metadata, requestedMethod);
    client = await register(http, metadata, method, redirectUri, clientName);
  }

  const state = oauth.generateRandomState();
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const codeChallenge = await oauth.calculatePKCECodeChallenge(codeVerifier);
  const authorizeUrl = new URL(metadata.authorizationEndpoint);
  for (const name of REPLACED_AUTHORIZE_PARAMETERS) authorizeUrl.searchParams.delete(name);
  authorizeUrl.searchParams.set('response_type', 'code');
  authorizeUrl.searchParams.set('client_id', client.clientId);
  authorizeUrl.searchParams.set('redirect_uri', redirectUri);
  authorizeUrl.searchParams.set('state', state);
  authorizeUrl.searchParams.set('code_challenge', codeChallenge);
  authorizeUrl.searchParams.set('code_challenge_method', 'S256');
  if (scope !== undefined) authorizeUrl.searchParams.set('scope', scope);
  authorizeUrl.searchParams.set('resource', resourceValue);

  return {
    authorizeUrl: authorizeUrl.href,
    state,
    codeVerifier,
    clientId: client.clientId,
    clientSecret: client.clientSecret,
    tokenAuthMethod: client.tokenAuthMethod,
    issuer,
    resource: resourceValue,
    redirectUri,
    scope,
    dpop,
  };
}

function checkBoolean(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') {
    throw new OAuthConfigurationError(`${name} must be a boolean`, { details: { option: name } });
  }
  return value;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Compares the callback's `state` with the stored one in constant time. False for anything that
 * is not two non-empty equal strings.
 */
export function verifyState(received: unknown, expected: unknown): boolean {
  if (typeof received !== 'string' || typeof expected !== 'string') return false;
  if (received.length === 0 || expected.length === 0) return false;
  const equal = timingSafeEqual(digest(received), digest(expected));
  return equal && received.length === expected.length;
}

function single(parameters: URLSearchParams, name: string): string | undefined {
  const values = parameters.getAll(name);
  if (values.length > 1) {
    throw new OAuthResponseError(`the authorization response repeats "${name}"`, {
      details: { step: 'authorization response', parameter: name },
    });
  }
  return values[0];
}

/**
 * Reads the authorization response at the callback route: checks `state` (constant time), turns
 * an `error` into an {@link OAuthError} (code only), and returns the `code` and RFC 9207 `iss`
 * for {@link completeOAuth}, which checks `iss` against the issuer's metadata.
 */
export function parseAuthorizationCallback(
  callback: string | URL | URLSearchParams,
  expectedState: string,
): AuthorizationCallback {
  const parameters =
    callback instanceof URLSearchParams
      ? callback
      : new URL(typeof callback === 'string' ? callback : callback.href).searchParams;
  const state = single(parameters, 'state');
  if (!verifyState(state, expectedState)) {
    throw new OAuthStateMismatchError('the authorization response state does not match');
  }
  const error = single(parameters, 'error');
  if (error !== undefined) {
    throw new OAuthError('the authorization server refused the authorization', {
      error: standardOAuthError(error),
    });
  }
  const code = single(parameters, 'code');
  if (code === undefined || code.length === 0) {
    throw new OAuthResponseError('the authorization response carries no code', {
      details: { step: 'authorization response' },
    });
  }
  return { code, iss: single(parameters, 'iss') };
}

/**
 * Exchanges the authorization code: rediscovers the token endpoint from the stored issuer,
 * checks RFC 9207 `iss`, sends the PKCE verifier and the resource, and requires a Bearer token
 * (a DPoP-bound one, with a proof on the request, when `dpopKey` is given).
 */
export async function completeOAuth(options: CompleteOAuthOptions): Promise<OAuthTokens> {
  const code = requireString(options.code, 'code') as string;
  const codeVerifier = requireString(options.codeVerifier, 'codeVerifier') as string;
  const redirectUri = checkRedirectUri(options.redirectUri);
  const iss = requireString(options.iss, 'iss', true);
  const context = await tokenContext(options);
  if (iss === undefined && context.metadata.issParameterSupported) {
    throw new OAuthIssuerMismatchError(
      'the authorization response lacks the iss parameter the server advertises',
      { details: { expected: context.metadata.issuer } },
    );
  }
  if (iss !== undefined && iss !== context.metadata.issuer) {
    throw new OAuthIssuerMismatchError(
      'the authorization response comes from another issuer (mix-up)',
      { details: { expected: context.metadata.issuer } },
    );
  }
  const callback = new URLSearchParams({ code });
  if (iss !== undefined) callback.set('iss', iss);
  const as = context.metadata.raw as oauth.AuthorizationServer;
  try {
    const parameters = oauth.validateAuthResponse(
      as,
      context.client,
      callback,
      oauth.skipStateCheck,
    );
    return await withDpopNonceRetry(context.dpop, async () => {
      const response = await oauth.authorizationCodeGrantRequest(
        as,
        context.client,
        context.auth,
        parameters,
        redirectUri,
        codeVerifier,
        {
          ...requestOptions(context.http, context.dpop),
          additionalParameters: { resource: context.resource },
        },
      );
      const result = await oauth.processAuthorizationCodeResponse(as, context.client, response);
      return readTokens(result, Date.now(), context.dpop !== undefined);
    });
  } catch (error) {
    throw translate(error, 'authorization code exchange');
  }
}
