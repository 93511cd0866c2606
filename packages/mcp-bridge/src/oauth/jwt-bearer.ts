// The JWT bearer grant (RFC 7523 §2.1) for workload identity: a platform-issued JWT is exchanged
// for an access token to an MCP server.

import * as oauth from 'oauth4webapi';
import type { TokenAuthMethod } from '../store/connection-store.js';
import {
  canonicalResource,
  chooseIssuer,
  chooseScope,
  discoverAuthorizationServer,
  discoverProtectedResource,
} from './discovery.js';
import { OAuthConfigurationError, OAuthUnsupportedServerError } from './errors.js';
import { type OAuthNetworkOptions, resolveOAuthHttp } from './http.js';
import { probe } from './probe.js';
import { refuseRenamedOAuthOptions } from './refuse-renamed-oauth-options.js';
import {
  checkMethod,
  checkSecretConsistency,
  clientAuth,
  type OAuthTokens,
  readTokens,
  requestOptions,
  requireString,
  translate,
} from './token-endpoint.js';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/** Largest accepted assertion, in characters. */
const MAX_ASSERTION_LENGTH = 16_384;

/** Options of {@link jwtBearerOAuth}. */
export interface JwtBearerOAuthOptions extends OAuthNetworkOptions {
  /** The MCP server URL (the protected resource). */
  readonly url: string;
  /**
   * The workload's JWT (for example a cloud platform or CI identity token whose audience is the
   * authorization server), or a function returning a fresh one; called once per grant. Secret.
   */
  readonly assertion: string | (() => string | Promise<string>);
  /**
   * The exact issuer of the MCP server's authorization server (required, and must be listed by
   * the protected resource): the assertion is a credential and goes only where the host says.
   */
  readonly issuer: string;
  /** The client id at the authorization server (pre-registered for this workload). */
  readonly clientId: string;
  /** The client secret, for `client_secret_basic` / `client_secret_post`. */
  readonly clientSecret?: string | undefined;
  /** Default: `client_secret_basic` with a secret, else `none`. */
  readonly tokenAuthMethod?: TokenAuthMethod | undefined;
  /** Scope to request; must contain every scope the server's challenge names. */
  readonly scope?: string | undefined;
}

/** Tokens of the JWT bearer grant, with the issuer and resource they are for. */
export interface JwtBearerTokens extends OAuthTokens {
  /** Issuer identifier of the authorization server that issued the token. */
  readonly issuer: string;
  /** The RFC 8707 resource (the MCP server URL as its metadata declares it). */
  readonly resource: string;
}

const OPTION_KEYS: ReadonlySet<string> = new Set([
  'url',
  'assertion',
  'issuer',
  'clientId',
  'clientSecret',
  'tokenAuthMethod',
  'scope',
  'allowNonPublic',
  'maxResponseBytes',
  'connectTimeoutMs',
  'readTimeoutMs',
  'fetch',
]);

async function resolveAssertion(source: unknown): Promise<string> {
  let value: unknown = source;
  if (typeof source === 'function') {
    try {
      value = await (source as () => unknown)();
    } catch (error) {
      throw new OAuthConfigurationError('the assertion function failed', {
        details: { option: 'assertion' },
        cause: error,
      });
    }
  }
  // A compact JWS: three base64url parts (the content is the authorization server's to check).
  if (
    typeof value !== 'string' ||
    value.length > MAX_ASSERTION_LENGTH ||
    !/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(value)
  ) {
    throw new OAuthConfigurationError(
      'assertion must be a compact JWT (or a function returning one) of at most 16384 characters',
      { details: { option: 'assertion' } },
    );
  }
  return value;
}

/**
 * Workload identity (RFC 7523 §2.1, MCP SEP-1933): exchanges the workload's JWT for an access
 * token with `grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer`. The same probe, RFC 9728
 * discovery (exact `resource`), issuer rule (the exact, listed `issuer` is required) and RFC 8414
 * validation as the other grants; the RFC 8707 `resource` is sent. No registration, no refresh
 * expected, and no fallback: a refused grant (`invalid_grant`, `invalid_scope`,
 * `unauthorized_client`) is an {@link OAuthError}, never retried with another grant. Call it
 * again (with a fresh assertion) when the token expires.
 */
export async function jwtBearerOAuth(options: JwtBearerOAuthOptions): Promise<JwtBearerTokens> {
  refuseRenamedOAuthOptions(options);
  for (const name of Object.keys(options ?? {})) {
    if (!OPTION_KEYS.has(name)) {
      throw new OAuthConfigurationError(
        `unknown option "${name}"; accepted: ${[...OPTION_KEYS].join(', ')}`,
        { details: { option: name } },
      );
    }
  }
  const http = resolveOAuthHttp(options);
  if (
    options.assertion === undefined ||
    (typeof options.assertion !== 'string' && typeof options.assertion !== 'function')
  ) {
    throw new OAuthConfigurationError('assertion must be a JWT string or a function', {
      details: { option: 'assertion' },
    });
  }
  const issuerOption = requireString(options.issuer, 'issuer', true);
  if (issuerOption === undefined) {
    throw new OAuthConfigurationError(
      'the JWT bearer grant requires the exact issuer the assertion is meant for',
      { details: { option: 'issuer' } },
    );
  }
  const clientId = requireString(options.clientId, 'clientId') as string;
  const clientSecret = requireString(options.clientSecret, 'clientSecret', true);
  const method =
    checkMethod(options.tokenAuthMethod) ??
    (clientSecret === undefined ? 'none' : 'client_secret_basic');
  checkSecretConsistency(method, clientSecret);
  const scopeOption = options.scope === undefined ? undefined : String(options.scope);
  const resource = canonicalResource(options.url, http);

  const challenge = await probe(http, resource);
  const prm = await discoverProtectedResource(http, resource, challenge.resourceMetadata);
  const issuer = chooseIssuer(prm.authorizationServers, issuerOption, http);
  const metadata = await discoverAuthorizationServer(http, issuer, { authorizationCode: false });
  const scope = chooseScope(scopeOption, challenge.scope, prm.scopesSupported);
  const grants = metadata.raw.grant_types_supported;
  if (Array.isArray(grants) && !grants.includes(JWT_BEARER)) {
    throw new OAuthUnsupportedServerError(
      'the authorization server does not offer the JWT bearer grant',
      { details: { issuer } },
    );
  }
  const methods = metadata.tokenEndpointAuthMethodsSupported ?? ['client_secret_basic'];
  if (method !== 'none' && !methods.includes(method)) {
    throw new OAuthUnsupportedServerError(
      'the authorization server does not support the tokenAuthMethod',
      { details: { tokenAuthMethod: method } },
    );
  }
  const assertion = await resolveAssertion(options.assertion);
  const as = metadata.raw as oauth.AuthorizationServer;
  const client: oauth.Client = { client_id: clientId, token_endpoint_auth_method: method };
  const parameters: Record<string, string> = { assertion, resource: prm.resource };
  if (scope !== undefined) parameters.scope = scope;
  const auth = clientAuth(method, clientSecret);
  try {
    const response = await oauth.genericTokenEndpointRequest(
      as,
      client,
      auth,
      JWT_BEARER,
      parameters,
      requestOptions(http),
    );
    const result = await oauth.processGenericTokenEndpointResponse(as, client, response);
    const tokens = readTokens(result, Date.now());
    return { ...tokens, scope: tokens.scope ?? scope, issuer, resource: prm.resource };
  } catch (error) {
    throw translate(error, 'JWT bearer grant');
  }
}
