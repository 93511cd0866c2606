import { createHash, timingSafeEqual } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import { McpBridgeError } from '../mcp-bridge-error.js';
import { parseBearerChallenge, scopeList } from './challenge.js';
import {
  type AuthorizationServerMetadata,
  canonicalResource,
  checkEndpointUrl,
  chooseIssuer,
  chooseScope,
  discoverAuthorizationServer,
  discoverProtectedResource,
  type ProtectedResourceMetadata,
} from './discovery.js';
import {
  OAuthConfigurationError,
  OAuthDiscoveryError,
  OAuthError,
  OAuthIssuerMismatchError,
  OAuthResponseError,
  OAuthStateMismatchError,
  OAuthUnsupportedServerError,
  standardOAuthError,
} from './errors.js';
import { type OAuthHttp, type OAuthNetworkOptions, resolveOAuthHttp } from './http.js';
import { discoverLegacyAuthorizationServer } from './legacy-discovery.js';

/** How the client authenticates at the token endpoint. */
export type TokenAuthMethod = 'client_secret_basic' | 'client_secret_post' | 'none';

const TOKEN_AUTH_METHODS: readonly TokenAuthMethod[] = [
  'client_secret_basic',
  'client_secret_post',
  'none',
];

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
}

/** Tokens from the token endpoint. */
export interface OAuthTokens {
  /** The access token to send as `Authorization: Bearer`. Secret. */
  readonly accessToken: string;
  /** Always `Bearer`: a response with any other token type is refused. */
  readonly tokenType: 'Bearer';
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

/** Options of {@link refreshOAuth}. */
export interface RefreshOAuthOptions extends OAuthClientOptions {
  /** The stored refresh token to exchange. Secret. */
  readonly refreshToken: string;
  /** The scope granted so far; a refresh answer may not widen it. */
  readonly scope?: string | undefined;
}

/** The parsed authorization response of the callback route. */
export interface AuthorizationCallback {
  /** The authorization code to pass to {@link completeOAuth}. Secret. */
  readonly code: string;
  /** The RFC 9207 `iss` parameter, when the server sent one; checked by {@link completeOAuth}. */
  readonly iss: string | undefined;
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

function checkMethod(value: unknown): TokenAuthMethod | undefined {
  if (value === undefined) return undefined;
  if (!TOKEN_AUTH_METHODS.includes(value as TokenAuthMethod)) {
    throw new OAuthConfigurationError(
      'tokenAuthMethod must be client_secret_basic, client_secret_post or none',
      { details: { option: 'tokenAuthMethod' } },
    );
  }
  return value as TokenAuthMethod;
}

function checkSecretConsistency(method: TokenAuthMethod, secret: string | undefined): void {
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

/** oauth4webapi request options: the bounded, guarded fetch. */
export function requestOptions(http: OAuthHttp): {
  [oauth.customFetch]: (url: string, init: unknown) => Promise<Response>;
  [oauth.allowInsecureRequests]: boolean;
} {
  return {
    [oauth.customFetch]: (url, init) => http.fetch(url, init as RequestInit),
    [oauth.allowInsecureRequests]: http.allowInsecure,
  };
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

function clientAuth(method: TokenAuthMethod, secret: string | undefined): oauth.ClientAuth {
  switch (method) {
    case 'client_secret_basic':
      return basicAuth(secret as string);
    case 'client_secret_post':
      return oauth.ClientSecretPost(secret as string);
    default:
      return oauth.None();
  }
}

/** Unauthenticated `initialize` POST; on 401 reads the Bearer challenge. */
export async function probe(
  http: OAuthHttp,
  resource: URL,
): Promise<{ resourceMetadata: string | undefined; scope: string | undefined }> {
  const response = await http.probe(resource.href, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'toolfence-oauth-probe', version: '0' },
      },
    }),
  });
  if (response.status !== 401) return { resourceMetadata: undefined, scope: undefined };
  const challenge = parseBearerChallenge(response.headers.get('www-authenticate'));
  return { resourceMetadata: challenge?.resourceMetadata, scope: challenge?.scope };
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
    prm = await discoverProtectedResource(http, resource, challenge.resourceMetadata);
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
  const scope = chooseScope(scopeOption, challenge.scope, prm?.scopesSupported);

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
  };
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

function checkLegacyOption(value: unknown): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new OAuthConfigurationError('legacyAuthorizationServer must be a boolean', {
      details: { option: 'legacyAuthorizationServer' },
    });
  }
  return value;
}

function isNoMetadata(error: unknown): boolean {
  return OAuthDiscoveryError.isInstance(error) && error.details?.reason === 'no-metadata';
}

/**
 * The token endpoint comes from the stored issuer's metadata. With the 2025-03-26 fallback, an
 * issuer that publishes no metadata of its own is looked up at the MCP server's origin again,
 * and must still be the identical issuer.
 */
async function rediscover(
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

interface TokenContext {
  readonly http: OAuthHttp;
  readonly metadata: AuthorizationServerMetadata;
  readonly client: oauth.Client;
  readonly auth: oauth.ClientAuth;
  readonly resource: string;
}

async function tokenContext(options: OAuthClientOptions): Promise<TokenContext> {
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
  };
}

/** Reads a token endpoint answer: non-empty Bearer access token, expiry, scope. */
export function readTokens(result: oauth.TokenEndpointResponse, now: number): OAuthTokens {
  const accessToken = result.access_token;
  if (typeof accessToken !== 'string' || accessToken.length === 0) {
    throw new OAuthResponseError('the token response has no access token', {
      details: { step: 'token' },
    });
  }
  if (String(result.token_type).toLowerCase() !== 'bearer') {
    throw new OAuthResponseError('the token response is not a Bearer token', {
      details: { step: 'token' },
    });
  }
  const refresh = result.refresh_token;
  const expiresIn = result.expires_in;
  const scope = result.scope;
  return {
    accessToken,
    tokenType: 'Bearer',
    refreshToken: typeof refresh === 'string' && refresh.length > 0 ? refresh : undefined,
    expiresAt:
      typeof expiresIn === 'number' && Number.isFinite(expiresIn) && expiresIn > 0
        ? now + Math.floor(expiresIn * 1000)
        : undefined,
    scope: typeof scope === 'string' && scope.length > 0 ? scope : undefined,
  };
}

/**
 * Exchanges the authorization code: rediscovers the token endpoint from the stored issuer,
 * checks RFC 9207 `iss`, sends the PKCE verifier and the resource, and requires a Bearer token.
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
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      context.client,
      context.auth,
      parameters,
      redirectUri,
      codeVerifier,
      { ...requestOptions(context.http), additionalParameters: { resource: context.resource } },
    );
    const result = await oauth.processAuthorizationCodeResponse(as, context.client, response);
    return readTokens(result, Date.now());
  } catch (error) {
    throw translate(error, 'authorization code exchange');
  }
}

/**
 * Refreshes the tokens. When the answer has no `refresh_token` or `scope`, keep the stored ones
 * (they are `undefined` here). A scope wider than `options.scope` is refused.
 */
export async function refreshOAuth(options: RefreshOAuthOptions): Promise<OAuthTokens> {
  const refreshToken = requireString(options.refreshToken, 'refreshToken') as string;
  const context = await tokenContext(options);
  const as = context.metadata.raw as oauth.AuthorizationServer;
  let tokens: OAuthTokens;
  try {
    const response = await oauth.refreshTokenGrantRequest(
      as,
      context.client,
      context.auth,
      refreshToken,
      { ...requestOptions(context.http), additionalParameters: { resource: context.resource } },
    );
    const result = await oauth.processRefreshTokenResponse(as, context.client, response);
    tokens = readTokens(result, Date.now());
  } catch (error) {
    throw translate(error, 'token refresh');
  }
  if (options.scope !== undefined && tokens.scope !== undefined) {
    const granted = new Set(scopeList(options.scope));
    if (scopeList(tokens.scope).some((scope) => !granted.has(scope))) {
      throw new OAuthResponseError('the refresh response widens the granted scope', {
        details: { step: 'token refresh' },
      });
    }
  }
  return tokens;
}
