// The refresh token grant.

import * as oauth from 'oauth4webapi';
import { scopeList } from './challenge.js';
import { withDpopNonceRetry } from './dpop.js';
import { OAuthResponseError } from './errors.js';
import {
  type OAuthClientOptions,
  type OAuthTokens,
  readTokens,
  requestOptions,
  requireString,
  tokenContext,
  translate,
} from './token-endpoint.js';

/** Options of {@link refreshOAuth}. */
export interface RefreshOAuthOptions extends OAuthClientOptions {
  /** The stored refresh token to exchange. Secret. */
  readonly refreshToken: string;
  /** The scope granted so far; a refresh answer may not widen it. */
  readonly scope?: string | undefined;
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
    tokens = await withDpopNonceRetry(context.dpop, async () => {
      const response = await oauth.refreshTokenGrantRequest(
        as,
        context.client,
        context.auth,
        refreshToken,
        {
          ...requestOptions(context.http, context.dpop),
          additionalParameters: { resource: context.resource },
        },
      );
      const result = await oauth.processRefreshTokenResponse(as, context.client, response);
      return readTokens(result, Date.now(), context.dpop !== undefined);
    });
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
