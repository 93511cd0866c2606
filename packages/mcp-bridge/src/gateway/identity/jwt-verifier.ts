// Access tokens as JWTs (RFC 9068 profile, checked with jose): the issuer's keys come from its
// published metadata (RFC 8414 / OIDC discovery) and key set, fetched through the OAuth client's
// guarded, bounded fetch (never a fetch of our own), cached, and fetched again (after
// `jwksCacheMs`, or for an unknown key id) at most once per `jwksMinRefetchMs`, the last keys
// serving up to `jwksMaxStaleMs` while that fails.
import type { JSONWebKeySet, JWK, JWTPayload } from 'jose';
import { McpBridgeError } from '../../mcp-bridge-error.js';
import { checkEndpointUrl, discoverAuthorizationServer, getJson } from '../../oauth/discovery.js';
import type { OAuthHttp } from '../../oauth/http.js';
import { scopesOf } from './gateway-principal.js';
import type { ResolvedHttpAuthSettings } from './http-auth-settings.js';
import { GatewayAuthUnavailableError, GatewayTokenError } from './token-error.js';

/** Most keys kept from one key set. */
const MAX_KEYS = 64;
/** Longest access token read, in characters. */
export const MAX_ACCESS_TOKEN_CHARS = 16_384;

/** A token that passed every check: its verified payload. */
export interface VerifiedAccessToken {
  readonly issuer: string;
  readonly subject: string;
  readonly scopes: readonly string[];
  readonly payload: JWTPayload;
}

type Jose = typeof import('jose');
type GetKey = ReturnType<Jose['createLocalJWKSet']>;

let josePromise: Promise<Jose> | undefined;

/**
 * jose, loaded when a verifier is made (a gateway with `httpAuth`): importing the package never
 * loads it (about 45 modules).
 */
function loadJose(): Promise<Jose> {
  josePromise ??= import('jose');
  return josePromise;
}

/** One issuer's keys: fetched on first use, refreshed after `jwksCacheMs`, or for an unknown kid. */
class IssuerKeys {
  readonly #issuer: string;
  readonly #http: OAuthHttp;
  readonly #settings: ResolvedHttpAuthSettings;
  readonly #now: () => number;
  #jwksUri: URL | undefined;
  #keys: GetKey | undefined;
  #fetchedAt = Number.NEGATIVE_INFINITY;
  #attemptedAt = Number.NEGATIVE_INFINITY;
  #inflight: Promise<GetKey> | undefined;

  constructor(
    issuer: string,
    http: OAuthHttp,
    settings: ResolvedHttpAuthSettings,
    now: () => number,
  ) {
    this.#issuer = issuer;
    this.#http = http;
    this.#settings = settings;
    this.#now = now;
  }

  /**
   * The keys to check a token with: the cached ones within `jwksCacheMs`; else fetched again, at
   * most once per `jwksMinRefetchMs` whatever came of the last fetch. While fetching fails (or may
   * not be tried yet), the last keys serve up to `jwksMaxStaleMs` past `jwksCacheMs`; beyond that,
   * or with none ever held, {@link GatewayAuthUnavailableError}.
   */
  async current(): Promise<GetKey> {
    const now = this.#now();
    if (this.#keys !== undefined && now - this.#fetchedAt < this.#settings.jwksCacheMs) {
      return this.#keys;
    }
    if (this.#inflight === undefined && now - this.#attemptedAt < this.#settings.jwksMinRefetchMs) {
      // A fetch happened lately: no other one for every token that arrives meanwhile.
      return this.#staleOr(
        new GatewayAuthUnavailableError(
          "The authorization server's signing keys could not be fetched; the gateway tries again after gateway.httpAuth.jwksMinRefetchMs",
          { details: { issuer: this.#issuer } },
        ),
      );
    }
    try {
      return await this.#refetch();
    } catch (error) {
      return this.#staleOr(error);
    }
  }

  /** The last keys while within `jwksMaxStaleMs` past `jwksCacheMs`; else throws `error`. */
  #staleOr(error: unknown): GetKey {
    const { jwksCacheMs, jwksMaxStaleMs } = this.#settings;
    if (this.#keys !== undefined && this.#now() - this.#fetchedAt < jwksCacheMs + jwksMaxStaleMs) {
      return this.#keys;
    }
    throw error;
  }

  /**
   * Fetches again for an unknown key id, unless the last fetch was less than `jwksMinRefetchMs`
   * ago (then `undefined`: the kid stays unknown).
   */
  async rotated(): Promise<GetKey | undefined> {
    if (this.#now() - this.#attemptedAt < this.#settings.jwksMinRefetchMs) {
      return this.#inflight;
    }
    return this.#refetch();
  }

  #refetch(): Promise<GetKey> {
    if (this.#inflight !== undefined) return this.#inflight;
    this.#attemptedAt = this.#now();
    const run = this.#fetch().then(
      (keys) => {
        this.#keys = keys;
        this.#fetchedAt = this.#now();
        return keys;
      },
      (error: unknown) => {
        throw GatewayAuthUnavailableError.isInstance(error)
          ? error
          : new GatewayAuthUnavailableError(
              `The authorization server's signing keys could not be fetched (${McpBridgeError.isInstance(error) ? error.code : 'failed'}): within gateway.httpAuth.fetchTimeoutMs and fetchMaxBytes, through the network guard`,
              {
                details: {
                  issuer: this.#issuer,
                  ...(McpBridgeError.isInstance(error)
                    ? { cause: error.code, ...error.details }
                    : {}),
                },
              },
            );
      },
    );
    this.#inflight = run;
    void run.then(
      () => {
        this.#inflight = undefined;
      },
      () => {
        this.#inflight = undefined;
      },
    );
    return run;
  }

  async #fetch(): Promise<GetKey> {
    if (this.#jwksUri === undefined) {
      const metadata = await discoverAuthorizationServer(this.#http, this.#issuer, {
        authorizationCode: false,
      });
      this.#jwksUri = checkEndpointUrl(metadata.raw.jwks_uri, 'jwks_uri', this.#http);
    }
    const answer = await getJson(this.#http, this.#jwksUri, 'JWKS');
    if (answer.status !== 200) {
      throw new GatewayAuthUnavailableError('The JWKS endpoint did not answer 200', {
        details: { issuer: this.#issuer, status: answer.status },
      });
    }
    const keys = (answer.json as { keys?: unknown }).keys;
    if (!Array.isArray(keys)) {
      throw new GatewayAuthUnavailableError('The JWKS has no "keys" list', {
        details: { issuer: this.#issuer },
      });
    }
    // Public asymmetric keys only: a symmetric (`oct`) or private key is never used to verify.
    const usable = keys
      .filter(
        (key): key is JWK =>
          typeof key === 'object' &&
          key !== null &&
          (key.kty === 'RSA' || key.kty === 'EC' || key.kty === 'OKP') &&
          key.d === undefined &&
          (key.use === undefined || key.use === 'sig'),
      )
      .slice(0, MAX_KEYS);
    return (await loadJose()).createLocalJWKSet({ keys: usable } as JSONWebKeySet);
  }
}

function refused(
  reason: ConstructorParameters<typeof GatewayTokenError>[1],
  what: string,
): GatewayTokenError {
  return new GatewayTokenError(`The access token was refused: ${what}`, reason);
}

/** Maps jose's error codes to the refusal reason (its messages are not passed on). */
function refusalOf(error: unknown): GatewayTokenError {
  const code = (error as { code?: unknown } | null)?.code;
  const claim = (error as { claim?: unknown } | null)?.claim;
  switch (code) {
    case 'ERR_JWT_EXPIRED':
      return refused('expired', 'it has expired (exp)');
    case 'ERR_JWT_CLAIM_VALIDATION_FAILED':
      if (claim === 'nbf' || claim === 'iat')
        return refused('not-yet-valid', 'it is not valid yet (nbf)');
      if (claim === 'aud') return refused('audience', 'its audience (aud) is not this gateway');
      if (claim === 'iss') return refused('issuer', 'its issuer (iss) is not trusted');
      return refused(
        'malformed',
        `its ${typeof claim === 'string' ? claim : 'claims'} claim is invalid`,
      );
    case 'ERR_JOSE_ALG_NOT_ALLOWED':
    case 'ERR_JOSE_NOT_SUPPORTED':
      return refused('algorithm', 'its signature algorithm is not accepted');
    case 'ERR_JWS_SIGNATURE_VERIFICATION_FAILED':
      return refused('signature', 'its signature does not verify');
    case 'ERR_JWKS_NO_MATCHING_KEY':
    case 'ERR_JWKS_MULTIPLE_MATCHING_KEYS':
      return refused('unknown-key', 'it is not signed by a key the issuer publishes');
    default:
      return refused('malformed', 'it is not a well-formed signed JWT');
  }
}

/** Options of {@link JwtAccessTokenVerifier}. */
export interface JwtAccessTokenVerifierOptions {
  readonly settings: ResolvedHttpAuthSettings;
  /** The guarded, bounded fetch (from `resolveOAuthHttp`). */
  readonly http: OAuthHttp;
  /** Clock in milliseconds. Default `Date.now`. */
  readonly now?: () => number;
}

/**
 * Verifies access tokens as JWTs: compact JWS, `typ` an access token's (`at+jwt`, or `JWT` or none
 * unless `requireAccessTokenType`), `alg` among the accepted asymmetric ones, `iss` exactly one of
 * the configured issuers, signature by a key that issuer publishes, `aud` containing the
 * resource, `exp`, `nbf` and `iat` within the clock skew, a `sub`. Throws
 * {@link GatewayTokenError} or {@link GatewayAuthUnavailableError}.
 */
export class JwtAccessTokenVerifier {
  readonly #settings: ResolvedHttpAuthSettings;
  readonly #issuers = new Map<string, IssuerKeys>();
  readonly #now: () => number;

  constructor(options: JwtAccessTokenVerifierOptions) {
    this.#settings = options.settings;
    this.#now = options.now ?? Date.now;
    for (const issuer of options.settings.authorizationServers) {
      this.#issuers.set(issuer, new IssuerKeys(issuer, options.http, options.settings, this.#now));
    }
    // Loaded now, in the background, so the first token does not wait for it (verify awaits it).
    loadJose().catch(() => undefined);
  }

  /**
   * The header's `typ`: an access token (`at+jwt`, RFC 9068) or, unless
   * `requireAccessTokenType`, a plain `JWT` or none. Any other value names another kind of token
   * (an ID token, a DPoP proof, a logout token) that must never pass as an access token.
   */
  #checkType(type: unknown): void {
    const kind =
      typeof type === 'string' ? type.toLowerCase().replace(/^application\//, '') : undefined;
    if (kind === 'at+jwt') return;
    if (this.#settings.requireAccessTokenType) {
      throw refused(
        'type',
        'its header does not say it is an access token (typ at+jwt), which gateway.httpAuth.requireAccessTokenType requires',
      );
    }
    if (kind === undefined || kind === 'jwt') return;
    throw refused(
      'type',
      'its header says it is another kind of token than an access token (typ): only at+jwt, JWT or none are accepted',
    );
  }

  async verify(token: string): Promise<VerifiedAccessToken> {
    if (token.length > MAX_ACCESS_TOKEN_CHARS || token.split('.').length !== 3) {
      throw refused('malformed', 'it is not a signed JWT (three dot-separated parts)');
    }
    const { decodeJwt, decodeProtectedHeader, jwtVerify } = await loadJose();
    let algorithm: unknown;
    let type: unknown;
    let critical: unknown;
    let unverified: JWTPayload;
    try {
      const header = decodeProtectedHeader(token);
      algorithm = header.alg;
      type = header.typ;
      critical = header.crit;
      unverified = decodeJwt(token);
    } catch {
      throw refused('malformed', 'its header or payload is not base64url JSON');
    }
    if (typeof algorithm !== 'string' || !this.#settings.algorithms.includes(algorithm)) {
      throw refused('algorithm', 'its signature algorithm is not accepted');
    }
    this.#checkType(type);
    // RFC 7515 §4.1.11: a token naming an extension it must understand is refused; an access
    // token needs none (and a JWT may not use the one jose knows, unencoded payloads).
    if (critical !== undefined) {
      throw refused(
        'malformed',
        'its header names critical extensions (crit) this gateway does not understand',
      );
    }
    const keys = typeof unverified.iss === 'string' ? this.#issuers.get(unverified.iss) : undefined;
    if (keys === undefined) throw refused('issuer', 'its issuer (iss) is not trusted');
    const options = {
      issuer: unverified.iss as string,
      audience: this.#settings.resource,
      algorithms: [...this.#settings.algorithms],
      clockTolerance: this.#settings.clockSkewMs / 1000,
      currentDate: new Date(this.#now()),
      requiredClaims: ['exp'],
    };
    let payload: JWTPayload;
    try {
      payload = (await jwtVerify(token, await keys.current(), options)).payload;
    } catch (error) {
      if (GatewayAuthUnavailableError.isInstance(error)) throw error;
      if ((error as { code?: unknown } | null)?.code !== 'ERR_JWKS_NO_MATCHING_KEY') {
        throw refusalOf(error);
      }
      // An unknown key id: the issuer may have rotated its keys.
      const rotated = await keys.rotated();
      if (rotated === undefined) throw refusalOf(error);
      try {
        payload = (await jwtVerify(token, rotated, options)).payload;
      } catch (again) {
        throw refusalOf(again);
      }
    }
    // jose checks that iat is a number, not that it is past: a token issued "in ten years" is
    // another issuer's clock or a forged lifetime, refused beyond the clock skew like nbf.
    if (
      typeof payload.iat === 'number' &&
      payload.iat * 1000 > this.#now() + this.#settings.clockSkewMs
    ) {
      throw refused(
        'not-yet-valid',
        'it was issued in the future (iat), beyond gateway.httpAuth.clockSkewMs',
      );
    }
    if (typeof payload.sub !== 'string' || payload.sub === '' || payload.sub.length > 1024) {
      throw refused('no-subject', 'it names no subject (sub)');
    }
    return {
      issuer: payload.iss as string,
      subject: payload.sub,
      scopes: scopesOf(payload),
      payload,
    };
  }
}
