import {
  type AuthorizationServerMetadata,
  checkEndpointUrl,
  getJson,
  readAuthorizationServerMetadata,
} from './discovery.js';
import { OAuthDiscoveryError, OAuthIssuerMismatchError } from './errors.js';
import type { OAuthHttp } from './http.js';

/**
 * The MCP 2025-03-26 discovery for servers without RFC 9728 metadata, used only with
 * `legacyAuthorizationServer: true`. The "authorization base URL" is the MCP server's origin:
 * RFC 8414 metadata at `<origin>/.well-known/oauth-authorization-server`, else the default
 * endpoints `<origin>/authorize`, `/token` and `/register` (PKCE S256 assumed, as that revision
 * requires it).
 *
 * Weaker than the default: the MCP server itself names its authorization server (nothing binds
 * the two), and metadata fetched from the origin is accepted for an `issuer` on that same origin
 * (any path). Every URL still passes the network policy; a metadata `issuer` on another origin
 * is refused as a mix-up.
 */
export async function discoverLegacyAuthorizationServer(
  http: OAuthHttp,
  resource: URL,
): Promise<AuthorizationServerMetadata> {
  const origin = resource.origin;
  const metadataUrl = new URL('/.well-known/oauth-authorization-server', origin);
  const answer = await getJson(http, metadataUrl, 'authorization-server metadata');
  if (answer.status === 200) {
    const found = answer.json as Record<string, unknown>;
    const issuer = found.issuer;
    let sameOrigin = false;
    if (typeof issuer === 'string') {
      try {
        sameOrigin = new URL(issuer).origin === origin;
      } catch {
        sameOrigin = false;
      }
    }
    if (!sameOrigin) {
      throw new OAuthIssuerMismatchError(
        'legacy authorization-server metadata names an issuer on another origin',
        { details: { expected: origin } },
      );
    }
    return readAuthorizationServerMetadata(found, issuer as string, http);
  }
  if (answer.status !== 404) {
    throw new OAuthDiscoveryError('authorization-server metadata could not be fetched', {
      details: { status: answer.status, origin },
    });
  }
  const endpoint = (path: string, name: string): string =>
    checkEndpointUrl(new URL(path, origin).href, name, http).href;
  const raw = {
    issuer: origin,
    authorization_endpoint: endpoint('/authorize', 'authorization_endpoint'),
    token_endpoint: endpoint('/token', 'token_endpoint'),
    registration_endpoint: endpoint('/register', 'registration_endpoint'),
    response_types_supported: ['code'],
    code_challenge_methods_supported: ['S256'],
  };
  return {
    issuer: origin,
    authorizationEndpoint: raw.authorization_endpoint,
    tokenEndpoint: raw.token_endpoint,
    registrationEndpoint: raw.registration_endpoint,
    tokenEndpointAuthMethodsSupported: undefined,
    scopesSupported: undefined,
    issParameterSupported: false,
    raw,
  };
}
