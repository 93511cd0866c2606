import { webcrypto } from 'node:crypto';
import * as oauth from 'oauth4webapi';

type SigningKey = Extract<Parameters<typeof oauth.PrivateKeyJwt>[0], { kid?: string }>['key'];

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
import {
  basicAuth,
  type OAuthTokens,
  readTokens,
  requestOptions,
  requireString,
  translate,
} from './token-endpoint.js';

/** How a client-credentials client authenticates at the token endpoint. */
export type ClientCredentialsAuthMethod =
  | 'client_secret_basic'
  | 'client_secret_post'
  | 'private_key_jwt';

const METHODS: readonly ClientCredentialsAuthMethod[] = [
  'client_secret_basic',
  'client_secret_post',
  'private_key_jwt',
];

/** Options of {@link clientCredentialsOAuth}. */
export interface ClientCredentialsOAuthOptions extends OAuthNetworkOptions {
  /** The MCP server URL (the protected resource). */
  readonly url: string;
  /** The pre-registered client id (a machine client: always pre-registered). */
  readonly clientId: string;
  /** The client secret, for `client_secret_basic` / `client_secret_post`. */
  readonly clientSecret?: string | undefined;
  /**
   * The private key (a JWK with `d`: EC P-256/P-384/P-521, RSA, or Ed25519) for
   * `private_key_jwt` (RFC 7523). Never sent; only the signed assertion is.
   */
  readonly privateKeyJwk?: webcrypto.JsonWebKey | undefined;
  /** `kid` to put in the assertion header. Default: the JWK's `kid`, if any. */
  readonly privateKeyId?: string | undefined;
  /** Default: `client_secret_basic` with a secret, `private_key_jwt` with a key. */
  readonly tokenAuthMethod?: ClientCredentialsAuthMethod | undefined;
  /** The exact issuer the client is registered at (required, as for every pre-registered client). */
  readonly issuer: string;
  /** Scope to request; must contain every scope the server's challenge names. */
  readonly scope?: string | undefined;
}

/** Tokens of a client-credentials grant, with the issuer and resource they are for. */
export interface ClientCredentialsTokens extends OAuthTokens {
  /** Issuer identifier of the authorization server that issued the token. */
  readonly issuer: string;
  /** The RFC 8707 resource (the MCP server URL as its metadata declares it). */
  readonly resource: string;
}

function checkMethod(value: unknown): ClientCredentialsAuthMethod | undefined {
  if (value === undefined) return undefined;
  if (!METHODS.includes(value as ClientCredentialsAuthMethod)) {
    throw new OAuthConfigurationError(
      'tokenAuthMethod must be client_secret_basic, client_secret_post or private_key_jwt',
      { details: { option: 'tokenAuthMethod' } },
    );
  }
  return value as ClientCredentialsAuthMethod;
}

function keyAlgorithm(jwk: webcrypto.JsonWebKey): {
  readonly algorithm:
    | webcrypto.AlgorithmIdentifier
    | webcrypto.EcKeyImportParams
    | webcrypto.RsaHashedImportParams;
  readonly jws: string;
} {
  if (jwk.kty === 'EC') {
    const curves: Record<string, string> = { 'P-256': 'ES256', 'P-384': 'ES384', 'P-521': 'ES512' };
    const jws = curves[jwk.crv ?? ''];
    if (jws !== undefined) {
      return { algorithm: { name: 'ECDSA', namedCurve: jwk.crv as string }, jws };
    }
  } else if (jwk.kty === 'RSA') {
    return { algorithm: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, jws: 'RS256' };
  } else if (jwk.kty === 'OKP' && jwk.crv === 'Ed25519') {
    return { algorithm: { name: 'Ed25519' }, jws: 'Ed25519' };
  }
  throw new OAuthConfigurationError(
    'privateKeyJwk must be an EC (P-256, P-384, P-521), RSA or Ed25519 private key',
    { details: { option: 'privateKeyJwk' } },
  );
}

async function importPrivateKey(
  jwk: unknown,
): Promise<{ readonly key: SigningKey; readonly jws: string }> {
  if (
    typeof jwk !== 'object' ||
    jwk === null ||
    typeof (jwk as webcrypto.JsonWebKey).d !== 'string'
  ) {
    throw new OAuthConfigurationError('privateKeyJwk must be a private JWK (with "d")', {
      details: { option: 'privateKeyJwk' },
    });
  }
  const { algorithm, jws } = keyAlgorithm(jwk as webcrypto.JsonWebKey);
  const { alg: _alg, key_ops: _ops, use: _use, ...material } = jwk as webcrypto.JsonWebKey;
  try {
    const key = await webcrypto.subtle.importKey('jwk', material, algorithm, false, ['sign']);
    return { key: key as unknown as SigningKey, jws };
  } catch {
    // The key material is never echoed.
    throw new OAuthConfigurationError('privateKeyJwk could not be imported', {
      details: { option: 'privateKeyJwk' },
    });
  }
}

/**
 * The OAuth client-credentials grant (OAuth 2.1 §4.2, MCP SEP-1046) for a machine client of an
 * MCP server: the same probe, RFC 9728 discovery (exact `resource`), issuer rule (the exact,
 * listed `issuer` is required) and RFC 8414 validation (identical `issuer`) as `startOAuth`,
 * then one token request with the RFC 8707 `resource`, authenticated by `client_secret_basic`,
 * `client_secret_post` or `private_key_jwt` (RFC 7523). No user, no redirect, no refresh token
 * expected: call it again when the token expires.
 */
export async function clientCredentialsOAuth(
  options: ClientCredentialsOAuthOptions,
): Promise<ClientCredentialsTokens> {
  const http = resolveOAuthHttp(options);
  const clientId = requireString(options.clientId, 'clientId') as string;
  const issuerOption = requireString(options.issuer, 'issuer', true);
  if (issuerOption === undefined) {
    throw new OAuthConfigurationError('a pre-registered clientId requires the exact issuer', {
      details: { option: 'issuer' },
    });
  }
  const clientSecret = requireString(options.clientSecret, 'clientSecret', true);
  const kid = requireString(options.privateKeyId, 'privateKeyId', true);
  const hasKey = options.privateKeyJwk !== undefined;
  const method =
    checkMethod(options.tokenAuthMethod) ?? (hasKey ? 'private_key_jwt' : 'client_secret_basic');
  if (
    method === 'private_key_jwt'
      ? !hasKey || clientSecret !== undefined
      : hasKey || clientSecret === undefined
  ) {
    throw new OAuthConfigurationError(
      'private_key_jwt needs privateKeyJwk (and no clientSecret); secret methods need clientSecret (and no key)',
      { details: { option: 'tokenAuthMethod', tokenAuthMethod: method } },
    );
  }
  const scopeOption = options.scope === undefined ? undefined : String(options.scope);
  const signing = hasKey ? await importPrivateKey(options.privateKeyJwk) : undefined;
  const resource = canonicalResource(options.url, http);

  const challenge = await probe(http, resource);
  const prm = await discoverProtectedResource(http, resource, challenge.resourceMetadata);
  const issuer = chooseIssuer(prm.authorizationServers, issuerOption, http);
  const metadata = await discoverAuthorizationServer(http, issuer, { authorizationCode: false });
  const scope = chooseScope(scopeOption, challenge.scope, prm.scopesSupported);

  const grants = metadata.raw.grant_types_supported;
  if (Array.isArray(grants) && !grants.includes('client_credentials')) {
    throw new OAuthUnsupportedServerError(
      'the authorization server does not offer the client_credentials grant',
      { details: { issuer } },
    );
  }
  // RFC 8414 §2: absent means client_secret_basic only.
  const methods = metadata.tokenEndpointAuthMethodsSupported ?? ['client_secret_basic'];
  if (!methods.includes(method)) {
    throw new OAuthUnsupportedServerError(
      'the authorization server does not support the tokenAuthMethod',
      { details: { tokenAuthMethod: method } },
    );
  }
  const algs = metadata.raw.token_endpoint_auth_signing_alg_values_supported;
  if (signing !== undefined && Array.isArray(algs) && !algs.includes(signing.jws)) {
    throw new OAuthUnsupportedServerError(
      'the authorization server does not accept the signing algorithm of privateKeyJwk',
      { details: { alg: signing.jws } },
    );
  }
  const auth =
    method === 'client_secret_basic'
      ? basicAuth(clientSecret as string)
      : method === 'client_secret_post'
        ? oauth.ClientSecretPost(clientSecret as string)
        : oauth.PrivateKeyJwt(
            kid === undefined
              ? (signing as { key: SigningKey }).key
              : { key: (signing as { key: SigningKey }).key, kid },
          );
  const as = metadata.raw as oauth.AuthorizationServer;
  const client: oauth.Client = { client_id: clientId, token_endpoint_auth_method: method };
  const parameters: Record<string, string> = { resource: prm.resource };
  if (scope !== undefined) parameters.scope = scope;
  try {
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      client,
      auth,
      parameters,
      requestOptions(http),
    );
    const result = await oauth.processClientCredentialsResponse(as, client, response);
    const tokens = readTokens(result, Date.now());
    return { ...tokens, scope: tokens.scope ?? scope, issuer, resource: prm.resource };
  } catch (error) {
    throw translate(error, 'client credentials grant');
  }
}
