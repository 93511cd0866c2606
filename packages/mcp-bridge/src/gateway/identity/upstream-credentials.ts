import { isRecord } from '../../is-record.js';
import { GatewayConfigError } from '../errors.js';

/**
 * Per-server `credentials`: the upstream receives, on each call, an access token obtained FOR THE
 * CALLER by OAuth 2.0 Token Exchange (RFC 8693) at the authorization server that issued the
 * caller's token, never the caller's own token. HTTP servers only; needs `gateway.httpAuth`.
 * Without this key the server's shared credential (`headers`, `oauth`) is used for every call.
 */
export interface GatewayServerCredentials {
  /** `token-exchange` (the only mode). Required. */
  readonly mode: 'token-exchange';
  /** The gateway's client id at the authorization server (variables expanded). Required. */
  readonly clientId: string;
  /** Its secret (variables expanded: write `${VAR}` to keep it out of the file). Default none. */
  readonly clientSecret?: string;
  /**
   * `client_secret_basic` or `client_secret_post`; `none` for a public client. Default
   * `client_secret_basic` with a secret, `none` without.
   */
  readonly tokenAuthMethod?: 'client_secret_basic' | 'client_secret_post' | 'none';
  /** The token endpoint. Default: `token_endpoint` of the caller's issuer's metadata. */
  readonly tokenEndpoint?: string;
  /** RFC 8707 `resource` asked for. Default: the server's `url`. */
  readonly resource?: string;
  /** RFC 8693 `audience` asked for. Default none. */
  readonly audience?: string;
  /** `scope` asked for. Default none (the authorization server's choice). */
  readonly scope?: string;
  /** An exchanged token is used until this many milliseconds before it expires. Default 30,000. */
  readonly refreshSkewMs?: number;
  /** Exchanged tokens kept at once (one per caller); the least recently used goes first. Default 1,000. */
  readonly maxCachedTokens?: number;
  /** Upstream connections open at once (one per caller). Default 64. */
  readonly maxCallerClients?: number;
  /** Milliseconds a caller's upstream connection stays open unused. Default 300,000. */
  readonly callerClientIdleMs?: number;
  /** Time limit of each exchange (connect and read each), in milliseconds. Default 5,000. */
  readonly fetchTimeoutMs?: number;
  /** Largest token endpoint (or metadata) answer, in bytes. Default 262,144. */
  readonly fetchMaxBytes?: number;
}

/** Default of {@link GatewayServerCredentials.refreshSkewMs}: 30,000. */
export const DEFAULT_EXCHANGE_REFRESH_SKEW_MS = 30_000;
/** Default of {@link GatewayServerCredentials.maxCachedTokens}: 1,000. */
export const DEFAULT_EXCHANGE_MAX_CACHED_TOKENS = 1_000;
/** Default of {@link GatewayServerCredentials.maxCallerClients}: 64. */
export const DEFAULT_EXCHANGE_MAX_CALLER_CLIENTS = 64;
/** Default of {@link GatewayServerCredentials.callerClientIdleMs}: 300,000. */
export const DEFAULT_EXCHANGE_CALLER_CLIENT_IDLE_MS = 300_000;
/** Default of {@link GatewayServerCredentials.fetchTimeoutMs}: 5,000. */
export const DEFAULT_EXCHANGE_FETCH_TIMEOUT_MS = 5_000;
/** Default of {@link GatewayServerCredentials.fetchMaxBytes}: 262,144. */
export const DEFAULT_EXCHANGE_FETCH_MAX_BYTES = 262_144;

const KEYS: readonly string[] = [
  'mode',
  'clientId',
  'clientSecret',
  'tokenAuthMethod',
  'tokenEndpoint',
  'resource',
  'audience',
  'scope',
  'refreshSkewMs',
  'maxCachedTokens',
  'maxCallerClients',
  'callerClientIdleMs',
  'fetchTimeoutMs',
  'fetchMaxBytes',
];

function fail(message: string, at: string): never {
  throw new GatewayConfigError(`${at}: ${message}`, { details: { at } });
}

function text(value: unknown, at: string, expand: (text: string, at: string) => string): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 4096) {
    fail('must be a non-empty string', at);
  }
  const expanded = expand(value, at);
  if (expanded.length === 0) fail('is empty once its variables are expanded', at);
  return expanded;
}

function url(value: unknown, at: string): string {
  if (typeof value !== 'string' || value.length > 2048) fail('must be an absolute URL', at);
  let parsed: URL;
  try {
    parsed = new URL(value);
  } catch {
    return fail('must be an absolute URL', at);
  }
  if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:')
    fail('must be an https:// URL', at);
  if (parsed.hash !== '' || parsed.username !== '' || parsed.password !== '') {
    fail('must carry no fragment, user or password', at);
  }
  return value;
}

function whole(value: unknown, at: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    fail(`must be a whole number from ${min} to ${max}`, at);
  }
  return value;
}

/**
 * Checks a server's `credentials` (`at` names it). `http` is false for a stdio server, which is
 * refused: one process serves every caller, so it cannot hold a credential per person.
 */
export function checkServerCredentials(
  value: unknown,
  at: string,
  http: boolean,
  expand: (text: string, at: string) => string,
): GatewayServerCredentials | undefined {
  if (value === undefined) return undefined;
  if (!http) {
    fail(
      'applies to url servers only: a stdio server is one process shared by every caller, so it cannot receive a credential per person',
      at,
    );
  }
  if (!isRecord(value)) fail('must be an object with "mode": "token-exchange"', at);
  for (const key of Object.keys(value)) {
    if (!KEYS.includes(key)) {
      const shown = /^[\w$.-]{1,40}$/.test(key) ? `"${key}"` : 'a key';
      fail(`unknown key ${shown} (accepted: ${KEYS.join(', ')})`, at);
    }
  }
  if (value.mode !== 'token-exchange') fail('must be "token-exchange"', `${at}.mode`);
  const clientId = text(value.clientId, `${at}.clientId`, expand);
  const clientSecret =
    value.clientSecret === undefined
      ? undefined
      : text(value.clientSecret, `${at}.clientSecret`, expand);
  const method =
    value.tokenAuthMethod ?? (clientSecret === undefined ? 'none' : 'client_secret_basic');
  if (method !== 'client_secret_basic' && method !== 'client_secret_post' && method !== 'none') {
    fail('must be "client_secret_basic", "client_secret_post" or "none"', `${at}.tokenAuthMethod`);
  }
  if ((method === 'none') !== (clientSecret === undefined)) {
    fail(
      method === 'none' ? '"none" takes no clientSecret' : `"${method}" needs a clientSecret`,
      `${at}.tokenAuthMethod`,
    );
  }
  const optional = <T>(key: string, read: (item: unknown, where: string) => T) =>
    value[key] === undefined ? {} : { [key]: read(value[key], `${at}.${key}`) };
  return Object.freeze({
    mode: 'token-exchange',
    clientId,
    ...(clientSecret === undefined ? {} : { clientSecret }),
    tokenAuthMethod: method,
    ...optional('tokenEndpoint', url),
    ...optional('resource', url),
    ...optional('audience', (item, where) => text(item, where, (t) => t)),
    ...optional('scope', (item, where) => {
      if (
        typeof item !== 'string' ||
        !/^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/.test(item)
      ) {
        fail('must be space-separated scope tokens', where);
      }
      return item;
    }),
    ...optional('refreshSkewMs', (item, where) => whole(item, where, 0, 3_600_000)),
    ...optional('maxCachedTokens', (item, where) => whole(item, where, 1, 1_000_000)),
    ...optional('maxCallerClients', (item, where) => whole(item, where, 1, 10_000)),
    ...optional('callerClientIdleMs', (item, where) => whole(item, where, 1_000, 86_400_000)),
    ...optional('fetchTimeoutMs', (item, where) => whole(item, where, 100, 120_000)),
    ...optional('fetchMaxBytes', (item, where) => whole(item, where, 1_024, 16_777_216)),
  }) as GatewayServerCredentials;
}
