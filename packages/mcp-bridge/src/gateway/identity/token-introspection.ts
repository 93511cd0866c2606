// RFC 7662 token introspection for opaque access tokens: asked of the authorization server's
// `introspection_endpoint` (from its metadata, or configured), through the OAuth client's guarded,
// bounded fetch, with the gateway's own client credentials (from the environment). Every answer
// is checked as strictly as a JWT: `active`, `iss`, `aud`, `exp`/`nbf`, `sub`.
import { McpBridgeError } from '../../mcp-bridge-error.js';
import { checkEndpointUrl, discoverAuthorizationServer } from '../../oauth/discovery.js';
import type { OAuthHttp } from '../../oauth/http.js';
import { scopesOf } from './gateway-principal.js';
import type { ResolvedHttpAuthSettings } from './http-auth-settings.js';
import type { VerifiedAccessToken } from './jwt-verifier.js';
import { GatewayAuthUnavailableError, GatewayTokenError } from './token-error.js';

/** The gateway's client credentials at the introspection endpoint. */
export interface IntrospectionCredentials {
  /** The gateway's client id (`TOOLFENCE_INTROSPECTION_CLIENT_ID`). */
  readonly clientId: string;
  /** Its secret (`TOOLFENCE_INTROSPECTION_CLIENT_SECRET`), sent with HTTP Basic. */
  readonly clientSecret: string;
}

/** Options of {@link TokenIntrospector}. */
export interface TokenIntrospectorOptions {
  readonly settings: ResolvedHttpAuthSettings;
  readonly http: OAuthHttp;
  readonly credentials: IntrospectionCredentials;
  /** Clock in milliseconds. Default `Date.now`. */
  readonly now?: () => number;
}

function refused(reason: ConstructorParameters<typeof GatewayTokenError>[1], what: string) {
  return new GatewayTokenError(`The access token was refused: ${what}`, reason);
}

/** Asks the (first) authorization server whether an opaque token is active, and checks the answer. */
export class TokenIntrospector {
  readonly #settings: ResolvedHttpAuthSettings;
  readonly #http: OAuthHttp;
  readonly #credentials: IntrospectionCredentials;
  readonly #now: () => number;
  readonly #issuer: string;
  #endpoint: Promise<URL> | undefined;

  constructor(options: TokenIntrospectorOptions) {
    this.#settings = options.settings;
    this.#http = options.http;
    this.#credentials = options.credentials;
    this.#now = options.now ?? Date.now;
    this.#issuer = options.settings.authorizationServers[0] as string;
  }

  #endpointUrl(): Promise<URL> {
    const configured = this.#settings.introspectionEndpoint;
    this.#endpoint ??= (
      configured !== ''
        ? Promise.resolve(checkEndpointUrl(configured, 'introspectionEndpoint', this.#http))
        : discoverAuthorizationServer(this.#http, this.#issuer, { authorizationCode: false }).then(
            (metadata) =>
              checkEndpointUrl(
                metadata.raw.introspection_endpoint,
                'introspection_endpoint',
                this.#http,
              ),
          )
    ).catch((error: unknown) => {
      this.#endpoint = undefined;
      throw error;
    });
    return this.#endpoint;
  }

  async introspect(token: string): Promise<VerifiedAccessToken> {
    let answer: Record<string, unknown>;
    try {
      const endpoint = await this.#endpointUrl();
      const basic = Buffer.from(
        `${encodeURIComponent(this.#credentials.clientId)}:${encodeURIComponent(this.#credentials.clientSecret)}`,
      ).toString('base64');
      const response = await this.#http.fetch(endpoint.href, {
        method: 'POST',
        headers: {
          accept: 'application/json',
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${basic}`,
        },
        body: new URLSearchParams({ token, token_type_hint: 'access_token' }).toString(),
      });
      if (response.status !== 200) {
        throw new GatewayAuthUnavailableError('The introspection endpoint did not answer 200', {
          details: { issuer: this.#issuer, status: response.status },
        });
      }
      const json: unknown = await response.json();
      if (typeof json !== 'object' || json === null || Array.isArray(json)) {
        throw new GatewayAuthUnavailableError('The introspection answer is not a JSON object', {
          details: { issuer: this.#issuer },
        });
      }
      answer = json as Record<string, unknown>;
    } catch (error) {
      if (GatewayAuthUnavailableError.isInstance(error)) throw error;
      throw new GatewayAuthUnavailableError(
        `The token could not be introspected (${McpBridgeError.isInstance(error) ? error.code : 'failed'}): within gateway.httpAuth.fetchTimeoutMs and fetchMaxBytes, through the network guard`,
        { details: { issuer: this.#issuer } },
      );
    }
    if (answer.active !== true) throw refused('inactive', 'it is not active (introspection)');
    if (answer.iss !== undefined && answer.iss !== this.#issuer) {
      throw refused('issuer', 'its issuer (iss) is not trusted');
    }
    const audience = answer.aud;
    const audiences = typeof audience === 'string' ? [audience] : audience;
    if (!Array.isArray(audiences) || !audiences.includes(this.#settings.resource)) {
      throw refused('audience', 'its audience (aud) is not this gateway');
    }
    const now = this.#now() / 1000;
    const skew = this.#settings.clockSkewMs / 1000;
    if (typeof answer.exp !== 'number' || answer.exp + skew <= now) {
      throw refused('expired', 'it has expired (exp)');
    }
    if (typeof answer.nbf === 'number' && answer.nbf - skew > now) {
      throw refused('not-yet-valid', 'it is not valid yet (nbf)');
    }
    // A client-credentials token names no user: its subject is the client (as RFC 9068 makes
    // `sub` the client id in a JWT access token of that grant).
    const subject = answer.sub ?? answer.client_id;
    if (typeof subject !== 'string' || subject === '' || subject.length > 1024) {
      throw refused('no-subject', 'it names no subject (sub or client_id)');
    }
    return {
      issuer: this.#issuer,
      subject,
      scopes: scopesOf(answer),
      payload: answer as VerifiedAccessToken['payload'],
    };
  }
}
