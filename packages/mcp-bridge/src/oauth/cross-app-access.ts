import * as oauth from 'oauth4webapi';
import {
  canonicalResource,
  chooseIssuer,
  chooseScope,
  discoverAuthorizationServer,
  discoverProtectedResource,
} from './discovery.js';
import {
  OAuthConfigurationError,
  OAuthResponseError,
  OAuthUnsupportedServerError,
} from './errors.js';
import { type OAuthNetworkOptions, resolveOAuthHttp } from './http.js';
import { probe } from './probe.js';
import {
  basicAuth,
  type OAuthTokens,
  readTokens,
  requestOptions,
  requireString,
  translate,
} from './token-endpoint.js';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';
const ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag';

/** Options of {@link crossAppAccessOAuth}. */
export interface CrossAppAccessOAuthOptions extends OAuthNetworkOptions {
  /** The MCP server URL (the protected resource). */
  readonly url: string;
  /** The user's ID token from the enterprise identity provider (secret). */
  readonly idToken: string;
  /** The identity provider's exact issuer; its token endpoint is discovered from it. */
  readonly idpIssuer: string;
  /** The client id at the identity provider. */
  readonly idpClientId: string;
  /** The client secret at the identity provider (`client_secret_basic`); omit for `none`. */
  readonly idpClientSecret?: string | undefined;
  /** The client id at the MCP server's authorization server (pre-registered). */
  readonly clientId: string;
  /** Its secret (`client_secret_basic`, as SEP-990 requires). */
  readonly clientSecret: string;
  /** The exact issuer of the MCP server's authorization server (must be listed). */
  readonly issuer: string;
  /** Scope to request; must contain every scope the server's challenge names. */
  readonly scope?: string | undefined;
}

/** Tokens of the cross-app access flow, with the issuer and resource they are for. */
export interface CrossAppAccessTokens extends OAuthTokens {
  /** Issuer identifier of the MCP server's authorization server that issued the access token. */
  readonly issuer: string;
  /** The RFC 8707 resource (the MCP server URL as its metadata declares it). */
  readonly resource: string;
}

/**
 * Enterprise-managed authorization (MCP SEP-990, "cross-app access"): the identity provider
 * exchanges the user's ID token for an identity assertion grant (ID-JAG, RFC 8693 token
 * exchange with `audience` = the MCP server's issuer and `resource` = the MCP server), which the
 * MCP server's authorization server then exchanges for an access token (RFC 7523 JWT bearer
 * grant, `client_secret_basic`). Discovery, issuer and resource rules are those of `startOAuth`
 * for the MCP side; the identity provider's token endpoint is discovered from `idpIssuer`
 * (identical `issuer` required).
 */
export async function crossAppAccessOAuth(
  options: CrossAppAccessOAuthOptions,
): Promise<CrossAppAccessTokens> {
  const http = resolveOAuthHttp(options);
  const idToken = requireString(options.idToken, 'idToken') as string;
  const idpIssuer = requireString(options.idpIssuer, 'idpIssuer') as string;
  const idpClientId = requireString(options.idpClientId, 'idpClientId') as string;
  const idpClientSecret = requireString(options.idpClientSecret, 'idpClientSecret', true);
  const clientId = requireString(options.clientId, 'clientId') as string;
  const clientSecret = requireString(options.clientSecret, 'clientSecret') as string;
  const issuerOption = requireString(options.issuer, 'issuer', true);
  if (issuerOption === undefined) {
    throw new OAuthConfigurationError('a pre-registered clientId requires the exact issuer', {
      details: { option: 'issuer' },
    });
  }
  const scopeOption = options.scope === undefined ? undefined : String(options.scope);
  const resource = canonicalResource(options.url, http);

  const challenge = await probe(http, resource);
  const prm = await discoverProtectedResource(http, resource, challenge.resourceMetadata);
  const issuer = chooseIssuer(prm.authorizationServers, issuerOption, http);
  const metadata = await discoverAuthorizationServer(http, issuer, { authorizationCode: false });
  const grants = metadata.raw.grant_types_supported;
  if (Array.isArray(grants) && !grants.includes(JWT_BEARER)) {
    throw new OAuthUnsupportedServerError(
      'the authorization server does not offer the JWT bearer grant',
      { details: { issuer } },
    );
  }
  const scope = chooseScope(scopeOption, challenge.scope, prm.scopesSupported);
  const idp = await discoverAuthorizationServer(http, idpIssuer, { authorizationCode: false });

  // 1. ID token -> ID-JAG at the identity provider (RFC 8693).
  const idpAs = idp.raw as oauth.AuthorizationServer;
  const idpClient: oauth.Client = { client_id: idpClientId };
  const exchange: Record<string, string> = {
    subject_token: idToken,
    subject_token_type: ID_TOKEN,
    requested_token_type: ID_JAG,
    audience: issuer,
    resource: prm.resource,
  };
  if (scope !== undefined) exchange.scope = scope;
  let assertion: string;
  try {
    const response = await oauth.genericTokenEndpointRequest(
      idpAs,
      idpClient,
      idpClientSecret === undefined ? oauth.None() : basicAuth(idpClientSecret),
      TOKEN_EXCHANGE,
      exchange,
      requestOptions(http),
    );
    const result = await oauth.processGenericTokenEndpointResponse(idpAs, idpClient, response, {
      // RFC 8693 §2.2.1: an issued token that is not an access token has token_type N_A.
      recognizedTokenTypes: { n_a: () => undefined },
    });
    if (result.issued_token_type !== ID_JAG || result.access_token.length === 0) {
      throw new OAuthResponseError('the identity provider issued no identity assertion grant', {
        details: { step: 'token exchange' },
      });
    }
    assertion = result.access_token;
  } catch (error) {
    throw translate(error, 'token exchange');
  }

  // 2. ID-JAG -> access token at the MCP server's authorization server (RFC 7523).
  const as = metadata.raw as oauth.AuthorizationServer;
  const client: oauth.Client = {
    client_id: clientId,
    token_endpoint_auth_method: 'client_secret_basic',
  };
  const grant: Record<string, string> = { assertion, resource: prm.resource };
  if (scope !== undefined) grant.scope = scope;
  try {
    const response = await oauth.genericTokenEndpointRequest(
      as,
      client,
      basicAuth(clientSecret),
      JWT_BEARER,
      grant,
      requestOptions(http),
    );
    const result = await oauth.processGenericTokenEndpointResponse(as, client, response);
    const tokens = readTokens(result, Date.now());
    return { ...tokens, scope: tokens.scope ?? scope, issuer, resource: prm.resource };
  } catch (error) {
    throw translate(error, 'JWT bearer grant');
  }
}
