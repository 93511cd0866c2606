// The gateway as an OAuth 2.1 protected resource (MCP authorization spec, server side): RFC 9728
// metadata, bearer tokens checked as JWTs, RFC 6750 challenges. The caller's token ends here: what
// goes on is the principal (issuer, subject, selected claims), never the token.
import type { Principal } from '@toolfence/tools';
import { type AllowNonPublic, resolveOAuthHttp } from '../../oauth/http.js';
import { GatewayConfigError } from '../errors.js';
import { principalFromClaims } from './gateway-principal.js';
import type { ResolvedHttpAuthSettings } from './http-auth-settings.js';
import { JwtAccessTokenVerifier, type VerifiedAccessToken } from './jwt-verifier.js';
import { GatewayAuthUnavailableError, GatewayTokenError } from './token-error.js';
import { type IntrospectionCredentials, TokenIntrospector } from './token-introspection.js';

/** Options of {@link GatewayResourceServer}. */
export interface GatewayResourceServerOptions {
  /** Checked settings (`checkHttpAuthSettings`). */
  readonly settings: ResolvedHttpAuthSettings;
  /**
   * Non-public addresses the metadata and key fetches may reach (the network guard's rule, as in
   * the OAuth client). Default `false`: public HTTPS only.
   */
  readonly allowNonPublic?: AllowNonPublic | undefined;
  /** Clock in milliseconds. Default `Date.now`. */
  readonly now?: (() => number) | undefined;
  /**
   * The gateway's client credentials at the introspection endpoint; required when
   * `settings.introspection` is true (the CLI reads `TOOLFENCE_INTROSPECTION_CLIENT_ID` and
   * `TOOLFENCE_INTROSPECTION_CLIENT_SECRET`).
   */
  readonly introspectionCredentials?: IntrospectionCredentials | undefined;
}

/** A request that passed: who is calling, with what scopes, until when. */
export interface AuthenticatedCaller {
  /** The token was accepted. */
  readonly ok: true;
  /** Who is calling: issuer, subject and the kept claims (never the token). */
  readonly principal: Principal;
  /** The scopes the token carries (`scope` or `scp`). */
  readonly scopes: readonly string[];
  /** `exp`, in seconds since the epoch. */
  readonly expiresAt: number | undefined;
  /** The client the token was issued to (`client_id` or `azp`), or empty. */
  readonly clientId: string;
}

/** A request that did not: the HTTP answer to give. */
export interface RefusedCaller {
  /** The token was refused, or could not be checked. */
  readonly ok: false;
  /** `401` (no or bad token), `403` (insufficient scope) or `503` (keys cannot be fetched). */
  readonly status: 401 | 403 | 503;
  /** The answer's headers (`WWW-Authenticate`, `Retry-After`). */
  readonly headers: Readonly<Record<string, string>>;
  /** The answer's JSON body (`error`, `error_description`, `code`), never the token. */
  readonly body: string;
  /** The stable error code (`GATEWAY_TOKEN_REFUSED`, `GATEWAY_AUTH_UNAVAILABLE`). */
  readonly code: string;
  /** Why, safe to show (the body's `error_description`; never the token). */
  readonly description?: string;
}

const WELL_KNOWN = '/.well-known/oauth-protected-resource';

/** Quotes a value for an RFC 6750 `WWW-Authenticate` parameter. */
function quoted(value: string): string {
  return `"${value.replace(/[\\"]/g, (char) => `\\${char}`).replace(/[^\x20-\x7e]/g, '')}"`;
}

/**
 * Serves RFC 9728 metadata and checks bearer tokens for `serve --http` (`gateway.httpAuth`).
 * Metadata and keys are fetched through the OAuth client's guarded, bounded fetch.
 */
export class GatewayResourceServer {
  readonly #settings: ResolvedHttpAuthSettings;
  readonly #verifier: JwtAccessTokenVerifier;
  readonly #introspector: TokenIntrospector | undefined;
  readonly #metadataUrl: string;
  readonly #metadataPaths: readonly string[];

  /** Checks `options.settings` (refusing unknown keys and bad values) and prepares the metadata. */
  constructor(options: GatewayResourceServerOptions) {
    this.#settings = options.settings;
    const http = resolveOAuthHttp({
      allowNonPublic: options.allowNonPublic ?? false,
      maxResponseBytes: options.settings.fetchMaxBytes,
      connectTimeoutMs: options.settings.fetchTimeoutMs,
      readTimeoutMs: options.settings.fetchTimeoutMs,
    });
    this.#verifier = new JwtAccessTokenVerifier({
      settings: options.settings,
      http,
      ...(options.now === undefined ? {} : { now: options.now }),
    });
    if (options.settings.introspection) {
      const credentials = options.introspectionCredentials;
      if (
        credentials === undefined ||
        typeof credentials.clientId !== 'string' ||
        credentials.clientId === '' ||
        typeof credentials.clientSecret !== 'string' ||
        credentials.clientSecret === ''
      ) {
        throw new GatewayConfigError(
          "gateway.httpAuth.introspection needs the gateway's client credentials: set TOOLFENCE_INTROSPECTION_CLIENT_ID and TOOLFENCE_INTROSPECTION_CLIENT_SECRET",
          { details: { at: 'gateway.httpAuth.introspection' } },
        );
      }
      this.#introspector = new TokenIntrospector({
        settings: options.settings,
        http,
        credentials,
        ...(options.now === undefined ? {} : { now: options.now }),
      });
    } else {
      this.#introspector = undefined;
    }
    const resource = new URL(options.settings.resource);
    const path = resource.pathname.replace(/\/$/, '');
    this.#metadataUrl = new URL(`${WELL_KNOWN}${path}`, resource.origin).href;
    this.#metadataPaths = path === '' ? [WELL_KNOWN] : [`${WELL_KNOWN}${path}`, WELL_KNOWN];
  }

  /** The claims kept in each caller's principal (`principalClaims`): all a policy rule can read. */
  get principalClaims(): readonly string[] {
    return this.#settings.principalClaims;
  }

  /** The trusted issuers (`authorizationServers`): more than one, and a policy rule on a subject or claims must name its issuer. */
  get authorizationServers(): readonly string[] {
    return this.#settings.authorizationServers;
  }

  /** Where clients find the metadata (`resource_metadata` in every challenge). */
  get metadataUrl(): string {
    return this.#metadataUrl;
  }

  /** True for a path this server answers with the metadata (path-suffixed and root forms). */
  isMetadataPath(pathname: string): boolean {
    return this.#metadataPaths.includes(pathname);
  }

  /** The RFC 9728 metadata document. */
  metadata(): Readonly<Record<string, unknown>> {
    return {
      resource: this.#settings.resource,
      authorization_servers: [...this.#settings.authorizationServers],
      bearer_methods_supported: ['header'],
      resource_signing_alg_values_supported: [...this.#settings.algorithms],
      ...(this.#settings.scopesSupported.length === 0
        ? {}
        : { scopes_supported: [...this.#settings.scopesSupported] }),
    };
  }

  /** Checks the `Authorization` header of one request. */
  async authenticate(
    authorization: string | readonly string[] | undefined,
  ): Promise<AuthenticatedCaller | RefusedCaller> {
    if (authorization === undefined || authorization === '') {
      return this.#refuse(
        new GatewayTokenError(
          'A bearer access token is required (Authorization: Bearer <token>)',
          'missing',
        ),
      );
    }
    const header = typeof authorization === 'string' ? authorization : authorization.join(',');
    const match = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(header);
    if (match === null) {
      const bearer = /^Bearer(\s|$)/i.test(header);
      return this.#refuse(
        new GatewayTokenError(
          bearer
            ? 'The Authorization header is malformed: one bearer token (RFC 6750 token68) is expected'
            : 'A bearer access token is required (Authorization: Bearer <token>)',
          bearer ? 'malformed' : 'missing',
        ),
      );
    }
    try {
      const token = match[1] as string;
      // A JWT is checked against the issuer's keys; any other token, with introspection on, is
      // asked of the authorization server.
      const verified: VerifiedAccessToken =
        this.#introspector !== undefined && token.split('.').length !== 3
          ? await this.#introspector.introspect(token)
          : await this.#verifier.verify(token);
      const missing = this.#settings.requiredScopes.filter(
        (scope) => !verified.scopes.includes(scope),
      );
      if (missing.length > 0) {
        return this.#refuse(
          new GatewayTokenError(
            `The access token lacks a required scope (${missing.join(' ')})`,
            'insufficient-scope',
          ),
        );
      }
      const clientId = verified.payload.client_id ?? verified.payload.azp;
      return {
        ok: true,
        principal: principalFromClaims(
          verified.issuer,
          verified.subject,
          verified.payload,
          this.#settings.principalClaims,
          {
            maxValues: this.#settings.principalClaimMaxValues,
            maxChars: this.#settings.principalClaimMaxChars,
          },
        ),
        scopes: verified.scopes,
        expiresAt: verified.payload.exp,
        clientId: typeof clientId === 'string' ? clientId : '',
      };
    } catch (error) {
      if (GatewayTokenError.isInstance(error) || GatewayAuthUnavailableError.isInstance(error)) {
        return this.#refuse(error);
      }
      return this.#refuse(
        new GatewayTokenError('The access token was refused: it could not be checked', 'malformed'),
      );
    }
  }

  #refuse(error: GatewayTokenError | GatewayAuthUnavailableError): RefusedCaller {
    const metadata = `resource_metadata=${quoted(this.#metadataUrl)}`;
    const scope =
      this.#settings.requiredScopes.length === 0
        ? ''
        : `, scope=${quoted(this.#settings.requiredScopes.join(' '))}`;
    const body = (error: string | undefined, message: string, code: string) =>
      JSON.stringify({
        ...(error === undefined ? {} : { error }),
        error_description: message,
        code,
      });
    if (GatewayAuthUnavailableError.isInstance(error)) {
      return {
        ok: false,
        status: 503,
        headers: { 'content-type': 'application/json', 'retry-after': '5' },
        body: body('temporarily_unavailable', error.message, error.code),
        code: error.code,
        description: error.message,
      };
    }
    const token = error as GatewayTokenError;
    if (token.reason === 'insufficient-scope') {
      return {
        ok: false,
        status: 403,
        headers: {
          'content-type': 'application/json',
          'www-authenticate': `Bearer error="insufficient_scope"${scope}, error_description=${quoted(token.message)}, ${metadata}`,
        },
        body: body('insufficient_scope', token.message, token.code),
        code: token.code,
        description: token.message,
      };
    }
    // RFC 6750 §3.1: a request without credentials gets a challenge without an error code.
    const errorPart =
      token.reason === 'missing'
        ? ''
        : `error="invalid_token", error_description=${quoted(token.message)}, `;
    return {
      ok: false,
      status: 401,
      headers: {
        'content-type': 'application/json',
        'www-authenticate': `Bearer ${errorPart}${metadata}${scope}`,
      },
      body: body(
        token.reason === 'missing' ? undefined : 'invalid_token',
        token.message,
        token.code,
      ),
      code: token.code,
      description: token.message,
    };
  }
}
