// OAuth 2.0 Token Exchange (RFC 8693) of an access token for another access token: the gateway
// presents a caller's validated access token and receives one issued for that caller at an
// upstream. Through the bounded, guarded fetch of every other grant.
import * as oauth from 'oauth4webapi';
import { discoverAuthorizationServer } from './discovery.js';
import { OAuthResponseError } from './errors.js';
import type { OAuthHttp } from './http.js';
import { clientAuth, readTokens, requestOptions, translate } from './token-endpoint.js';

const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';

/** One exchange: who asks (the client), for whom (the subject token), for what (the target). */
export interface AccessTokenExchange {
  /** The bounded, guarded fetch (`resolveOAuthHttp`). */
  readonly http: OAuthHttp;
  /** The issuer of the subject token; its metadata names the token endpoint when none is given. */
  readonly issuer: string;
  /** The token endpoint; default: the issuer's discovered `token_endpoint`. */
  readonly tokenEndpoint?: string | undefined;
  readonly clientId: string;
  /** Secret. Absent: the client authenticates with `none`. */
  readonly clientSecret?: string | undefined;
  readonly tokenAuthMethod: 'client_secret_basic' | 'client_secret_post' | 'none';
  /** The access token to exchange (secret). */
  readonly subjectToken: string;
  /** RFC 8707 `resource` of the wanted token. */
  readonly resource?: string | undefined;
  /** RFC 8693 `audience` of the wanted token. */
  readonly audience?: string | undefined;
  readonly scope?: string | undefined;
}

/** The issued access token (secret) and when it expires (epoch ms), if the server said. */
export interface ExchangedAccessToken {
  readonly accessToken: string;
  readonly expiresAt: number | undefined;
}

/**
 * Exchanges `subjectToken` (an access token) for a Bearer access token (RFC 8693 §2.1:
 * `subject_token_type` and `requested_token_type` access_token). A refusal is an `OAuthError`
 * carrying the standard `error` code only; the server's own text is never kept.
 */
export async function exchangeAccessToken(
  request: AccessTokenExchange,
): Promise<ExchangedAccessToken> {
  const { http } = request;
  try {
    const as: oauth.AuthorizationServer =
      request.tokenEndpoint === undefined
        ? ((await discoverAuthorizationServer(http, request.issuer, { authorizationCode: false }))
            .raw as oauth.AuthorizationServer)
        : { issuer: request.issuer, token_endpoint: request.tokenEndpoint };
    const client: oauth.Client = {
      client_id: request.clientId,
      token_endpoint_auth_method: request.tokenAuthMethod,
    };
    const parameters: Record<string, string> = {
      subject_token: request.subjectToken,
      subject_token_type: ACCESS_TOKEN,
      requested_token_type: ACCESS_TOKEN,
    };
    if (request.resource !== undefined) parameters.resource = request.resource;
    if (request.audience !== undefined) parameters.audience = request.audience;
    if (request.scope !== undefined) parameters.scope = request.scope;
    const response = await oauth.genericTokenEndpointRequest(
      as,
      client,
      clientAuth(request.tokenAuthMethod, request.clientSecret),
      TOKEN_EXCHANGE,
      parameters,
      requestOptions(http),
    );
    const result = await oauth.processGenericTokenEndpointResponse(as, client, response);
    const issued = result.issued_token_type;
    if (issued !== undefined && issued !== ACCESS_TOKEN) {
      throw new OAuthResponseError(
        'the token exchange issued a token that is not an access token',
        {
          details: { step: 'token exchange' },
        },
      );
    }
    const tokens = readTokens(result, Date.now());
    return { accessToken: tokens.accessToken, expiresAt: tokens.expiresAt };
  } catch (error) {
    throw translate(error, 'token exchange');
  }
}
