import { GatewayConfigError } from '../errors.js';
import {
  DEFAULT_PRINCIPAL_CLAIM_MAX_CHARS,
  DEFAULT_PRINCIPAL_CLAIM_MAX_VALUES,
} from './gateway-principal.js';

/**
 * `gateway.httpAuth`: `serve --http` as an OAuth 2.1 protected resource. Callers present access
 * tokens (JWTs) issued by one of `authorizationServers` for `resource`; each is checked against
 * the issuer's published keys. Exclusive with `gateway.httpToken`.
 */
export interface GatewayHttpAuthSettings {
  /**
   * The gateway's resource identifier (RFC 8707 / RFC 9728): its public MCP URL as clients reach
   * it, for example `https://mcp.example.com/mcp`. A token's `aud` must contain it exactly.
   * Required.
   */
  readonly resource: string;
  /** Issuer identifiers of the trusted authorization servers (a token's exact `iss`). Required, 1 to 8. */
  readonly authorizationServers: readonly string[];
  /** Scopes every token must carry (`scope` or `scp`). Default none. */
  readonly requiredScopes?: readonly string[];
  /** `scopes_supported` in the resource metadata. Default `requiredScopes`. */
  readonly scopesSupported?: readonly string[];
  /** Signature algorithms accepted; asymmetric only (`none` and `HS*` refused). Default {@link DEFAULT_HTTP_AUTH_ALGORITHMS}. */
  readonly algorithms?: readonly string[];
  /** Clock skew tolerated on `exp`, `nbf` and `iat`, in milliseconds (0 to 300,000). Default 30,000. */
  readonly clockSkewMs?: number;
  /**
   * Accept only JWTs whose header says they are access tokens, `typ: at+jwt` (RFC 9068; also
   * `application/at+jwt`). Default false: `at+jwt`, `JWT` or no `typ` are accepted; any other
   * `typ` (`id+jwt`, `dpop+jwt`, `logout+jwt`, ...: another kind of token) is refused either way.
   */
  readonly requireAccessTokenType?: boolean;
  /** How long fetched keys (JWKS) are used before they are fetched again, in milliseconds. Default 600,000. */
  readonly jwksCacheMs?: number;
  /**
   * Least time between two fetches of one issuer's keys, in milliseconds, whatever came of the
   * last one: a token naming an unknown key id fetches again (key rotation) at most this often, and
   * a failed fetch is not tried again sooner. Default 30,000.
   */
  readonly jwksMinRefetchMs?: number;
  /**
   * How long keys past `jwksCacheMs` keep checking tokens while fetching them again fails, in
   * milliseconds (0 to 86,400,000; 0: never past `jwksCacheMs`). Beyond it, tokens of that issuer
   * are answered 503 until a fetch succeeds. Default 3,600,000 (one hour).
   */
  readonly jwksMaxStaleMs?: number;
  /** Time limit of each metadata or key fetch (connect and read each), in milliseconds. Default 5,000. */
  readonly fetchTimeoutMs?: number;
  /** Largest metadata or key-set answer, in bytes. Default 262,144 (256 KiB). */
  readonly fetchMaxBytes?: number;
  /**
   * Claims of the token kept in the caller's principal (for policy rules, audit and traces):
   * strings or lists of strings only; `scope` and `scp` are both the token's scopes as
   * `requiredScopes` reads them (`scope`, else `scp`), as a list. Default `groups`, `roles`, `scope`.
   * Every claim a policy rule's `principal.claims` names must be listed (the policy is refused
   * otherwise).
   */
  readonly principalClaims?: readonly string[];
  /**
   * Most values of one kept list claim (1 to 10,000): a token holding more is refused (401,
   * `claim-limit`), never cut. Default 256 (`DEFAULT_PRINCIPAL_CLAIM_MAX_VALUES`).
   */
  readonly principalClaimMaxValues?: number;
  /**
   * Longest value of a kept claim, in characters (1 to 8,192): a token holding a longer one is
   * refused (401, `claim-limit`), never cut. Default 256 (`DEFAULT_PRINCIPAL_CLAIM_MAX_CHARS`).
   */
  readonly principalClaimMaxChars?: number;
  /**
   * Accept opaque (non-JWT) access tokens by asking the first authorization server (RFC 7662),
   * with the gateway's client credentials from `TOOLFENCE_INTROSPECTION_CLIENT_ID` and
   * `TOOLFENCE_INTROSPECTION_CLIENT_SECRET`. Default false.
   */
  readonly introspection?: boolean;
  /** The introspection endpoint. Default: the authorization server's `introspection_endpoint`. */
  readonly introspectionEndpoint?: string;
  /**
   * The web console's sign-in with the first authorization server (`serve --console` with
   * `gateway.httpAuth`): the authorization code flow with PKCE (S256) and `state`.
   */
  readonly console?: ConsoleLoginSettings;
}

/** `gateway.httpAuth.console`: who signs in to the web console, as which client. */
export interface ConsoleLoginSettings {
  /**
   * The console's client id at the authorization server (registered with the redirect URI
   * `http://HOST:PORT/console/callback`). Default {@link DEFAULT_CONSOLE_CLIENT_ID}. Its secret,
   * for a confidential client, comes from `TOOLFENCE_CONSOLE_CLIENT_SECRET` (never the config).
   */
  readonly clientId?: string;
  /** Scope asked for. Default `requiredScopes` (the access token must pass them anyway). */
  readonly scope?: readonly string[];
  /**
   * Who may use the console, once signed in: a person whose token's subject is in `subjects`,
   * or whose `groupClaim` claim holds one of `groups`. Default: nobody (the console refuses
   * everyone, with a page saying so, until this is configured).
   */
  readonly admins?: ConsoleAdminsSettings;
  /**
   * Calls of one caller (issuer and subject) waiting for an answer in the console's approvals
   * inbox at once (1 to 10,000); one more of theirs is refused (`no-approval-channel`, saying so)
   * while others' still wait. Default 10 (`DEFAULT_CONSOLE_MAX_PENDING_PER_PRINCIPAL`).
   */
  readonly maxPendingPerPrincipal?: number;
  /**
   * Sign-ins in progress from one client address at once (1 to 1,000); one more from it is
   * refused (`429`). Behind a reverse proxy every sign-in comes from the proxy's address. Default 8
   * (`DEFAULT_CONSOLE_MAX_PENDING_LOGINS_PER_SOURCE`).
   */
  readonly maxPendingSignInsPerSource?: number;
}

/** `gateway.httpAuth.console.admins`: the principals allowed to use the console. */
export interface ConsoleAdminsSettings {
  /** Exact subjects (`sub`) allowed. Default none. */
  readonly subjects?: readonly string[];
  /** Values of the group claim allowed. Default none. */
  readonly groups?: readonly string[];
  /** The claim `groups` is read from (it must be in `principalClaims`). Default `groups`. */
  readonly groupClaim?: string;
}

/** Default of {@link ConsoleLoginSettings.clientId}: `toolfence-console`. */
export const DEFAULT_CONSOLE_CLIENT_ID = 'toolfence-console';

/** {@link ConsoleLoginSettings} with every default filled in. */
export interface ResolvedConsoleLoginSettings {
  /** The console's client id at the authorization server. */
  readonly clientId: string;
  /** Scopes asked for at sign-in. */
  readonly scope: readonly string[];
  /** Who may use the console once signed in (nobody when both lists are empty). */
  readonly admins: {
    /** Subjects (`sub`) let in. */
    readonly subjects: readonly string[];
    /** Values of `groupClaim` let in. */
    readonly groups: readonly string[];
    /** The claim holding a person's groups. */
    readonly groupClaim: string;
  };
  /** Calls of one caller waiting in the approvals inbox at once. */
  readonly maxPendingPerPrincipal: number;
  /** Sign-ins in progress from one client address at once. */
  readonly maxPendingSignInsPerSource: number;
}

/** Default accepted algorithms: RSA (RS/PS 256-512), ECDSA (ES256/384/512) and EdDSA. */
export const DEFAULT_HTTP_AUTH_ALGORITHMS: readonly string[] = Object.freeze([
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
]);
/** Default of {@link GatewayHttpAuthSettings.clockSkewMs}: 30,000. */
export const DEFAULT_HTTP_AUTH_CLOCK_SKEW_MS = 30_000;
/** Default of {@link GatewayHttpAuthSettings.jwksCacheMs}: 600,000 (ten minutes). */
export const DEFAULT_HTTP_AUTH_JWKS_CACHE_MS = 600_000;
/** Default of {@link GatewayHttpAuthSettings.jwksMinRefetchMs}: 30,000. */
export const DEFAULT_HTTP_AUTH_JWKS_MIN_REFETCH_MS = 30_000;
/** Default of {@link GatewayHttpAuthSettings.jwksMaxStaleMs}: 3,600,000 (one hour). */
export const DEFAULT_HTTP_AUTH_JWKS_MAX_STALE_MS = 3_600_000;
/** Default of {@link GatewayHttpAuthSettings.fetchTimeoutMs}: 5,000. */
export const DEFAULT_HTTP_AUTH_FETCH_TIMEOUT_MS = 5_000;
/** Default of {@link GatewayHttpAuthSettings.fetchMaxBytes}: 262,144. */
export const DEFAULT_HTTP_AUTH_FETCH_MAX_BYTES = 262_144;
/** Default of {@link GatewayHttpAuthSettings.principalClaims}. */
export const DEFAULT_HTTP_AUTH_PRINCIPAL_CLAIMS: readonly string[] = Object.freeze([
  'groups',
  'roles',
  'scope',
]);

/** The keys `gateway.httpAuth` may have. */
export const HTTP_AUTH_KEYS: readonly string[] = Object.freeze([
  'resource',
  'authorizationServers',
  'requiredScopes',
  'scopesSupported',
  'algorithms',
  'clockSkewMs',
  'requireAccessTokenType',
  'jwksCacheMs',
  'jwksMinRefetchMs',
  'jwksMaxStaleMs',
  'fetchTimeoutMs',
  'fetchMaxBytes',
  'principalClaims',
  'principalClaimMaxValues',
  'principalClaimMaxChars',
  'introspection',
  'introspectionEndpoint',
  'console',
]);
const CONSOLE_KEYS: readonly string[] = Object.freeze([
  'clientId',
  'scope',
  'admins',
  'maxPendingPerPrincipal',
  'maxPendingSignInsPerSource',
]);
/** Default of `gateway.httpAuth.console.maxPendingPerPrincipal` (as the console inbox's). */
const DEFAULT_CONSOLE_PER_PRINCIPAL = 10;
/** Default of `gateway.httpAuth.console.maxPendingSignInsPerSource` (as the console sign-in's). */
const DEFAULT_CONSOLE_SIGN_INS_PER_SOURCE = 8;
const ADMINS_KEYS: readonly string[] = Object.freeze(['subjects', 'groups', 'groupClaim']);

const AT = 'gateway.httpAuth';

function fail(message: string, at: string): never {
  throw new GatewayConfigError(`${at}: ${message}`, { details: { at } });
}

function absoluteUrl(value: unknown, at: string): string {
  if (typeof value !== 'string' || value.length > 2048) fail('must be an absolute URL', at);
  let url: URL;
  try {
    url = new URL(value as string);
  } catch {
    return fail('must be an absolute URL', at);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') fail('must be an https:// URL', at);
  if (url.hash !== '' || (value as string).includes('#')) fail('must not carry a fragment', at);
  if (url.username !== '' || url.password !== '') fail('must not carry a user or password', at);
  return value as string;
}

function stringList(value: unknown, at: string, max: number, pattern: RegExp): string[] {
  if (
    !Array.isArray(value) ||
    value.length > max ||
    value.some((item) => typeof item !== 'string' || !pattern.test(item))
  ) {
    fail(`must be a list of at most ${max} strings (${pattern.source})`, at);
  }
  return [...(value as string[])];
}

function wholeNumber(
  value: unknown,
  at: string,
  min: number,
  max: number,
  fallback: number,
  unit: string,
) {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    fail(`must be a whole number${unit} from ${min} to ${max}`, at);
  }
  return value as number;
}

function milliseconds(value: unknown, at: string, min: number, max: number, fallback: number) {
  return wholeNumber(value, at, min, max, fallback, ' of milliseconds');
}

const SCOPE = /^[\x21\x23-\x5b\x5d-\x7e]{1,200}$/;
const CLAIM = /^[A-Za-z0-9_.:/-]{1,100}$/;

/** {@link GatewayHttpAuthSettings} with every default filled in. */
export type ResolvedHttpAuthSettings = Required<Omit<GatewayHttpAuthSettings, 'console'>> & {
  /** The console's sign-in with the identity provider, defaults filled in. */
  readonly console: ResolvedConsoleLoginSettings;
};

function objectWithKeys(value: unknown, at: string, keys: readonly string[]) {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail('must be an object', at);
  }
  for (const key of Object.keys(value as object)) {
    if (!keys.includes(key)) {
      const shown = /^[\w$.-]{1,40}$/.test(key) ? ` "${key}"` : '';
      fail(`unknown key${shown} (allowed: ${keys.join(', ')})`, at);
    }
  }
  return value as Record<string, unknown>;
}

const SUBJECT = /^[\x20-\x7e]{1,255}$/;

function checkConsoleSettings(
  value: unknown,
  requiredScopes: readonly string[],
): ResolvedConsoleLoginSettings {
  const at = `${AT}.console`;
  const record = value === undefined ? {} : objectWithKeys(value, at, CONSOLE_KEYS);
  const clientId = record.clientId ?? DEFAULT_CONSOLE_CLIENT_ID;
  if (typeof clientId !== 'string' || !SUBJECT.test(clientId)) {
    fail('must be 1 to 255 printable ASCII characters', `${at}.clientId`);
  }
  const scope =
    record.scope === undefined
      ? [...requiredScopes]
      : stringList(record.scope, `${at}.scope`, 32, SCOPE);
  const admins =
    record.admins === undefined ? {} : objectWithKeys(record.admins, `${at}.admins`, ADMINS_KEYS);
  const groupClaim = admins.groupClaim ?? 'groups';
  if (typeof groupClaim !== 'string' || !CLAIM.test(groupClaim)) {
    fail(`must be a claim name (${CLAIM.source})`, `${at}.admins.groupClaim`);
  }
  return Object.freeze({
    clientId: clientId as string,
    scope: Object.freeze(scope),
    admins: Object.freeze({
      subjects: Object.freeze(
        admins.subjects === undefined
          ? []
          : stringList(admins.subjects, `${at}.admins.subjects`, 256, SUBJECT),
      ),
      groups: Object.freeze(
        admins.groups === undefined
          ? []
          : stringList(admins.groups, `${at}.admins.groups`, 64, /^[\x20-\x7e]{1,256}$/),
      ),
      groupClaim: groupClaim as string,
    }),
    maxPendingPerPrincipal: wholeNumber(
      record.maxPendingPerPrincipal,
      `${at}.maxPendingPerPrincipal`,
      1,
      10_000,
      DEFAULT_CONSOLE_PER_PRINCIPAL,
      '',
    ),
    maxPendingSignInsPerSource: wholeNumber(
      record.maxPendingSignInsPerSource,
      `${at}.maxPendingSignInsPerSource`,
      1,
      1_000,
      DEFAULT_CONSOLE_SIGN_INS_PER_SOURCE,
      '',
    ),
  });
}

/**
 * Checks `gateway.httpAuth` (unknown keys, types, ranges; `none` and HMAC algorithms refused) and
 * fills in the defaults. Throws {@link GatewayConfigError} naming the key.
 */
export function checkHttpAuthSettings(value: unknown): ResolvedHttpAuthSettings {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail('must be an object', AT);
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!HTTP_AUTH_KEYS.includes(key)) {
      const shown = /^[\w$.-]{1,40}$/.test(key) ? ` "${key}"` : '';
      fail(`unknown key${shown} (allowed: ${HTTP_AUTH_KEYS.join(', ')})`, AT);
    }
  }
  const resource = absoluteUrl(record.resource, `${AT}.resource`);
  if (!Array.isArray(record.authorizationServers) || record.authorizationServers.length === 0) {
    fail('must list at least one issuer', `${AT}.authorizationServers`);
  }
  const servers = record.authorizationServers as unknown[];
  if (servers.length > 8) fail('lists at most 8 issuers', `${AT}.authorizationServers`);
  const authorizationServers = servers.map((item, index) =>
    absoluteUrl(item, `${AT}.authorizationServers[${index}]`),
  );
  const requiredScopes =
    record.requiredScopes === undefined
      ? []
      : stringList(record.requiredScopes, `${AT}.requiredScopes`, 32, SCOPE);
  const scopesSupported =
    record.scopesSupported === undefined
      ? requiredScopes
      : stringList(record.scopesSupported, `${AT}.scopesSupported`, 64, SCOPE);
  const algorithms =
    record.algorithms === undefined
      ? [...DEFAULT_HTTP_AUTH_ALGORITHMS]
      : stringList(record.algorithms, `${AT}.algorithms`, 16, /^[A-Za-z0-9]{2,16}$/);
  if (algorithms.length === 0) fail('must name at least one algorithm', `${AT}.algorithms`);
  for (const algorithm of algorithms) {
    if (!DEFAULT_HTTP_AUTH_ALGORITHMS.includes(algorithm)) {
      fail(
        `"${algorithm}" is not accepted: only asymmetric signatures (${DEFAULT_HTTP_AUTH_ALGORITHMS.join(', ')}); "none" and HMAC (HS*) never`,
        `${AT}.algorithms`,
      );
    }
  }
  const principalClaims =
    record.principalClaims === undefined
      ? [...DEFAULT_HTTP_AUTH_PRINCIPAL_CLAIMS]
      : stringList(record.principalClaims, `${AT}.principalClaims`, 16, CLAIM);
  if (
    record.requireAccessTokenType !== undefined &&
    typeof record.requireAccessTokenType !== 'boolean'
  ) {
    fail('must be true or false', `${AT}.requireAccessTokenType`);
  }
  if (record.introspection !== undefined && typeof record.introspection !== 'boolean') {
    fail('must be true or false', `${AT}.introspection`);
  }
  const introspectionEndpoint =
    // '' is the resolved form of "from the metadata": checking resolved settings again is a no-op.
    record.introspectionEndpoint === undefined || record.introspectionEndpoint === ''
      ? ''
      : absoluteUrl(record.introspectionEndpoint, `${AT}.introspectionEndpoint`);
  if (introspectionEndpoint !== '' && record.introspection !== true) {
    fail('applies only with introspection: true', `${AT}.introspectionEndpoint`);
  }
  const consoleSettings = checkConsoleSettings(record.console, requiredScopes);
  if (
    consoleSettings.admins.groups.length > 0 &&
    !principalClaims.includes(consoleSettings.admins.groupClaim)
  ) {
    fail(
      `the group claim "${consoleSettings.admins.groupClaim}" must be listed in principalClaims`,
      `${AT}.console.admins.groupClaim`,
    );
  }
  return Object.freeze({
    resource,
    console: consoleSettings,
    introspection: record.introspection === true,
    requireAccessTokenType: record.requireAccessTokenType === true,
    introspectionEndpoint,
    authorizationServers: Object.freeze(authorizationServers),
    requiredScopes: Object.freeze(requiredScopes),
    scopesSupported: Object.freeze(scopesSupported),
    algorithms: Object.freeze(algorithms),
    clockSkewMs: milliseconds(
      record.clockSkewMs,
      `${AT}.clockSkewMs`,
      0,
      300_000,
      DEFAULT_HTTP_AUTH_CLOCK_SKEW_MS,
    ),
    jwksCacheMs: milliseconds(
      record.jwksCacheMs,
      `${AT}.jwksCacheMs`,
      1_000,
      86_400_000,
      DEFAULT_HTTP_AUTH_JWKS_CACHE_MS,
    ),
    jwksMinRefetchMs: milliseconds(
      record.jwksMinRefetchMs,
      `${AT}.jwksMinRefetchMs`,
      0,
      3_600_000,
      DEFAULT_HTTP_AUTH_JWKS_MIN_REFETCH_MS,
    ),
    jwksMaxStaleMs: milliseconds(
      record.jwksMaxStaleMs,
      `${AT}.jwksMaxStaleMs`,
      0,
      86_400_000,
      DEFAULT_HTTP_AUTH_JWKS_MAX_STALE_MS,
    ),
    fetchTimeoutMs: milliseconds(
      record.fetchTimeoutMs,
      `${AT}.fetchTimeoutMs`,
      1,
      60_000,
      DEFAULT_HTTP_AUTH_FETCH_TIMEOUT_MS,
    ),
    fetchMaxBytes: milliseconds(
      record.fetchMaxBytes,
      `${AT}.fetchMaxBytes`,
      1_024,
      16_777_216,
      DEFAULT_HTTP_AUTH_FETCH_MAX_BYTES,
    ),
    principalClaims: Object.freeze(principalClaims),
    principalClaimMaxValues: wholeNumber(
      record.principalClaimMaxValues,
      `${AT}.principalClaimMaxValues`,
      1,
      10_000,
      DEFAULT_PRINCIPAL_CLAIM_MAX_VALUES,
      '',
    ),
    principalClaimMaxChars: wholeNumber(
      record.principalClaimMaxChars,
      `${AT}.principalClaimMaxChars`,
      1,
      8_192,
      DEFAULT_PRINCIPAL_CLAIM_MAX_CHARS,
      '',
    ),
  });
}
