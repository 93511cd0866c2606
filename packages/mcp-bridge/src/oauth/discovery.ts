import { scopeList } from './challenge.js';
import {
  OAuthConfigurationError,
  OAuthDiscoveryError,
  OAuthIssuerMismatchError,
  OAuthResourceMismatchError,
  OAuthUnsupportedServerError,
} from './errors.js';
import { checkOAuthUrl } from './guard.js';
import type { OAuthHttp } from './http.js';

/** RFC 9728 protected-resource metadata, as far as this client reads it. */
export interface ProtectedResourceMetadata {
  readonly resource: string;
  readonly authorizationServers: readonly string[];
  readonly scopesSupported: readonly string[] | undefined;
  /** RFC 9728 `dpop_bound_access_tokens_required`: the resource accepts DPoP-bound tokens only. */
  readonly dpopRequired: boolean;
}

/** RFC 8414 authorization-server metadata, validated; `raw` is what oauth4webapi receives. */
export interface AuthorizationServerMetadata {
  readonly issuer: string;
  /** Empty when the flow does not need it (client credentials) and the server names none. */
  readonly authorizationEndpoint: string;
  readonly tokenEndpoint: string;
  readonly registrationEndpoint: string | undefined;
  readonly tokenEndpointAuthMethodsSupported: readonly string[] | undefined;
  readonly scopesSupported: readonly string[] | undefined;
  readonly issParameterSupported: boolean;
  readonly raw: Readonly<Record<string, unknown>> & { readonly issuer: string };
}

/** Parses a URL given by a server or the host and applies the endpoint policy. */
export function checkEndpointUrl(value: unknown, name: string, http: OAuthHttp): URL {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048) {
    throw new OAuthDiscoveryError(`${name} is missing or not a string`, { details: { name } });
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new OAuthDiscoveryError(`${name} is not an absolute URL`, { details: { name } });
  }
  if (url.hash !== '' || value.includes('#')) {
    throw new OAuthDiscoveryError(`${name} must not carry a fragment`, { details: { name } });
  }
  try {
    checkOAuthUrl(url.href, http.allowNonPublic);
  } catch (error) {
    const rule = (error as { reason?: unknown } | null)?.reason;
    throw new OAuthDiscoveryError(`${name} is refused by the network policy`, {
      details: { name, rule: typeof rule === 'string' ? rule : 'unknown' },
    });
  }
  return url;
}

/** Canonical form of the MCP server URL used as the RFC 8707 resource (fragment dropped). */
export function canonicalResource(url: string | URL, http: OAuthHttp): URL {
  const parsed = checkEndpointUrlAsConfig(url, 'url', http);
  parsed.hash = '';
  return parsed;
}

function checkEndpointUrlAsConfig(value: string | URL, name: string, http: OAuthHttp): URL {
  try {
    return checkEndpointUrl(typeof value === 'string' ? value : value.href, name, http);
  } catch (error) {
    throw new OAuthConfigurationError(`${name} must be an absolute https URL`, {
      details: { option: name },
      cause: error,
    });
  }
}

/** A JSON object answer (`json` undefined unless the status is 200). */
export interface JsonAnswer {
  readonly status: number;
  readonly json: unknown;
}

/** GETs a JSON object (bounded, guarded); non-200 answers return their status only. */
export async function getJson(http: OAuthHttp, url: URL, what: string): Promise<JsonAnswer> {
  const response = await http.fetch(url.href, {
    method: 'GET',
    headers: { accept: 'application/json' },
  });
  if (response.status !== 200) return { status: response.status, json: undefined };
  let json: unknown;
  try {
    json = await response.json();
  } catch {
    throw new OAuthDiscoveryError(`${what} is not valid JSON`, {
      details: { origin: url.origin },
    });
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new OAuthDiscoveryError(`${what} is not a JSON object`, {
      details: { origin: url.origin },
    });
  }
  return { status: 200, json };
}

function stringList(value: unknown, name: string): string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string')) {
    throw new OAuthDiscoveryError(`${name} must be a list of strings`, { details: { name } });
  }
  return value as string[];
}

/** The well-known URLs for RFC 9728 metadata: path-specific first, then the root. */
export function protectedResourceMetadataUrls(resource: URL): URL[] {
  const root = new URL('/.well-known/oauth-protected-resource', resource.origin);
  const path = resource.pathname.replace(/\/$/, '');
  if (path === '') return [root];
  return [new URL(`/.well-known/oauth-protected-resource${path}`, resource.origin), root];
}

/**
 * Fetches RFC 9728 metadata: from the challenge's `resource_metadata` URL when given (no
 * fallback then), else the path-specific well-known URL, else the root one. The `resource` must
 * equal the expected resource exactly.
 */
export async function discoverProtectedResource(
  http: OAuthHttp,
  resource: URL,
  challengeUrl: string | undefined,
  policy: { readonly acceptOriginResource?: boolean | undefined } = {},
): Promise<ProtectedResourceMetadata> {
  const candidates =
    challengeUrl === undefined
      ? protectedResourceMetadataUrls(resource)
      : [checkEndpointUrl(challengeUrl, 'resource_metadata', http)];
  let found: Record<string, unknown> | undefined;
  let fromRoot = false;
  for (const candidate of candidates) {
    const answer = await getJson(http, candidate, 'protected-resource metadata');
    if (answer.status === 200) {
      found = answer.json as Record<string, unknown>;
      fromRoot =
        challengeUrl === undefined &&
        candidate.pathname === '/.well-known/oauth-protected-resource' &&
        resource.pathname !== '/';
      break;
    }
    if (challengeUrl !== undefined || answer.status < 400 || answer.status >= 500) {
      throw new OAuthDiscoveryError('protected-resource metadata could not be fetched', {
        details: { status: answer.status, origin: candidate.origin },
      });
    }
  }
  if (found === undefined) {
    throw new OAuthDiscoveryError('the MCP server publishes no protected-resource metadata', {
      details: { origin: resource.origin, reason: 'no-metadata' },
    });
  }
  const declared = found.resource;
  let matches = false;
  if (typeof declared === 'string') {
    try {
      const parsed = new URL(declared);
      matches = parsed.hash === '' && !declared.includes('#') && parsed.href === resource.href;
      // RFC 9728 §3.3: the origin-level document describes the origin as a resource. Accepted
      // only when the host opted in (the token's audience is then the whole origin).
      if (!matches && fromRoot && policy.acceptOriginResource === true) {
        matches =
          parsed.hash === '' &&
          parsed.search === '' &&
          parsed.pathname === '/' &&
          parsed.origin === resource.origin &&
          (declared === resource.origin || declared === `${resource.origin}/`);
      }
    } catch {
      matches = false;
    }
  }
  if (!matches) {
    throw new OAuthResourceMismatchError(
      'protected-resource metadata names another resource than the MCP server URL',
      { details: { expected: resource.href } },
    );
  }
  const servers = stringList(found.authorization_servers, 'authorization_servers');
  if (servers === undefined || servers.length === 0) {
    throw new OAuthDiscoveryError('protected-resource metadata lists no authorization server', {
      details: { origin: resource.origin },
    });
  }
  return {
    resource: declared as string,
    authorizationServers: servers,
    scopesSupported: stringList(found.scopes_supported, 'scopes_supported'),
    dpopRequired: found.dpop_bound_access_tokens_required === true,
  };
}

/**
 * Chooses the issuer: an explicit `issuer` must be listed; a single listed server is chosen;
 * several without an explicit issuer is a configuration error.
 */
export function chooseIssuer(
  listed: readonly string[],
  explicit: string | undefined,
  http: OAuthHttp,
): string {
  let chosen: string;
  if (explicit !== undefined) {
    if (!listed.includes(explicit)) {
      throw new OAuthConfigurationError(
        'the configured issuer is not listed by the protected resource',
        { details: { issuer: explicit, reason: 'issuer-not-listed' } },
      );
    }
    chosen = explicit;
  } else if (listed.length === 1) {
    chosen = listed[0] as string;
  } else {
    throw new OAuthConfigurationError(
      'the protected resource lists several authorization servers; choose one with `issuer`',
      { details: { count: listed.length } },
    );
  }
  const url = checkEndpointUrl(chosen, 'issuer', http);
  if (url.search !== '') {
    throw new OAuthDiscoveryError('issuer must not carry a query', { details: { name: 'issuer' } });
  }
  return chosen;
}

/** RFC 8414 path-inserted URL first, then the OIDC variants (path-inserted, then appended). */
export function authorizationServerMetadataUrls(issuer: URL): URL[] {
  const path = issuer.pathname.replace(/\/$/, '');
  const origin = issuer.origin;
  if (path === '') {
    return [
      new URL('/.well-known/oauth-authorization-server', origin),
      new URL('/.well-known/openid-configuration', origin),
    ];
  }
  return [
    new URL(`/.well-known/oauth-authorization-server${path}`, origin),
    new URL(`/.well-known/openid-configuration${path}`, origin),
    new URL(`${path}/.well-known/openid-configuration`, origin),
  ];
}

/**
 * Fetches and validates the authorization server's metadata for `issuer`: its `issuer` must be
 * identical, the endpoints present and policy-checked, and S256 PKCE supported.
 */
export async function discoverAuthorizationServer(
  http: OAuthHttp,
  issuer: string,
  requirements: AuthorizationServerRequirements = {},
): Promise<AuthorizationServerMetadata> {
  const issuerUrl = checkEndpointUrl(issuer, 'issuer', http);
  let found: Record<string, unknown> | undefined;
  for (const candidate of authorizationServerMetadataUrls(issuerUrl)) {
    const answer = await getJson(http, candidate, 'authorization-server metadata');
    if (answer.status === 200) {
      found = answer.json as Record<string, unknown>;
      break;
    }
    if (answer.status < 400 || answer.status >= 500) {
      throw new OAuthDiscoveryError('authorization-server metadata could not be fetched', {
        details: { status: answer.status, origin: candidate.origin },
      });
    }
  }
  if (found === undefined) {
    throw new OAuthDiscoveryError('the authorization server publishes no metadata', {
      details: { origin: issuerUrl.origin, reason: 'no-metadata' },
    });
  }
  return readAuthorizationServerMetadata(found, issuer, http, requirements);
}

/** What a flow needs from the authorization server beyond valid endpoints. */
export interface AuthorizationServerRequirements {
  /** Require S256 PKCE and the code flow (authorization code flows). Default true. */
  readonly authorizationCode?: boolean | undefined;
}

/**
 * Validates fetched authorization-server metadata: `issuer` identical to `issuer`, endpoints
 * present and policy-checked, and (for the code flow) S256 PKCE supported.
 */
export function readAuthorizationServerMetadata(
  found: Record<string, unknown>,
  issuer: string,
  http: OAuthHttp,
  requirements: AuthorizationServerRequirements = {},
): AuthorizationServerMetadata {
  const codeFlow = requirements.authorizationCode !== false;
  if (found.issuer !== issuer) {
    throw new OAuthIssuerMismatchError(
      'authorization-server metadata names another issuer than the one it was fetched for',
      { details: { expected: issuer } },
    );
  }
  const authorizationEndpoint =
    codeFlow || found.authorization_endpoint !== undefined
      ? checkEndpointUrl(found.authorization_endpoint, 'authorization_endpoint', http)
      : undefined;
  const tokenEndpoint = checkEndpointUrl(found.token_endpoint, 'token_endpoint', http);
  const registrationEndpoint =
    found.registration_endpoint === undefined
      ? undefined
      : checkEndpointUrl(found.registration_endpoint, 'registration_endpoint', http);
  const methods = stringList(
    found.code_challenge_methods_supported,
    'code_challenge_methods_supported',
  );
  if (codeFlow && (methods === undefined || !methods.includes('S256'))) {
    throw new OAuthUnsupportedServerError(
      'the authorization server does not advertise S256 PKCE support',
      { details: { issuer } },
    );
  }
  const responseTypes = stringList(found.response_types_supported, 'response_types_supported');
  if (codeFlow && responseTypes !== undefined && !responseTypes.includes('code')) {
    throw new OAuthUnsupportedServerError(
      'the authorization server does not support the authorization code flow',
      { details: { issuer } },
    );
  }
  return {
    issuer,
    authorizationEndpoint: authorizationEndpoint?.href ?? '',
    tokenEndpoint: tokenEndpoint.href,
    registrationEndpoint: registrationEndpoint?.href,
    tokenEndpointAuthMethodsSupported: stringList(
      found.token_endpoint_auth_methods_supported,
      'token_endpoint_auth_methods_supported',
    ),
    scopesSupported: stringList(found.scopes_supported, 'scopes_supported'),
    issParameterSupported: found.authorization_response_iss_parameter_supported === true,
    raw: { ...found, issuer },
  };
}

/**
 * Scope rules: an explicit scope must contain every challenged scope; else the challenge's
 * scope; else the resource's `scopes_supported`; else none. `offline_access` is never added.
 */
export function chooseScope(
  explicit: string | undefined,
  challenged: string | undefined,
  supported: readonly string[] | undefined,
): string | undefined {
  if (explicit !== undefined) {
    const have = new Set(scopeList(explicit));
    const missing = scopeList(challenged).filter((scope) => !have.has(scope));
    if (missing.length > 0) {
      throw new OAuthConfigurationError(
        'the configured scope lacks scopes the MCP server requires',
        { details: { missing: missing.length } },
      );
    }
    return scopeList(explicit).join(' ') || undefined;
  }
  if (challenged !== undefined && scopeList(challenged).length > 0) {
    return scopeList(challenged).join(' ');
  }
  if (supported !== undefined && supported.length > 0) {
    return scopeList(supported.join(' ')).join(' ') || undefined;
  }
  return undefined;
}
