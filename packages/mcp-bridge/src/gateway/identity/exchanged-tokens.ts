// Tokens exchanged for callers at one upstream (RFC 8693), cached per caller until shortly before
// they expire, in a bounded map. The caller's own token is the exchange's subject and goes
// nowhere else.
import type { Principal } from '@toolfence/tools';
import { McpBridgeError } from '../../mcp-bridge-error.js';
import { OAuthError, OAuthTransportError } from '../../oauth/errors.js';
import { type AllowNonPublic, type OAuthHttp, resolveOAuthHttp } from '../../oauth/http.js';
import type { exchangeAccessToken } from '../../oauth/token-exchange.js';
import type { CallerToken } from './caller-token.js';
import { GatewayTokenExchangeError } from './upstream-credential-error.js';
import {
  DEFAULT_EXCHANGE_FETCH_MAX_BYTES,
  DEFAULT_EXCHANGE_FETCH_TIMEOUT_MS,
  DEFAULT_EXCHANGE_MAX_CACHED_TOKENS,
  DEFAULT_EXCHANGE_REFRESH_SKEW_MS,
  type GatewayServerCredentials,
} from './upstream-credentials.js';

/** Options of {@link ExchangedTokens}. */
export interface ExchangedTokensOptions {
  /** The upstream's name in the config (for messages). */
  readonly server: string;
  /** Its URL: the default `resource`. */
  readonly url: string;
  readonly credentials: GatewayServerCredentials;
  /** Non-public addresses the exchange may reach (the network guard's rule). Default none. */
  readonly allowNonPublic?: AllowNonPublic | undefined;
  /** Clock in milliseconds. Default `Date.now`. */
  readonly now?: (() => number) | undefined;
}

interface Cached {
  readonly accessToken: string;
  /** When it stops being used (its expiry less the skew, at most the caller's token's expiry). */
  readonly usableUntil: number;
}

/** The caller's cache key: issuer and subject. */
export function callerKey(principal: Principal): string {
  return `${principal.issuer}\n${principal.subject}`;
}

/** Exchanged tokens of one upstream, one per caller. */
export class ExchangedTokens {
  readonly #options: ExchangedTokensOptions;
  readonly #http: OAuthHttp;
  readonly #now: () => number;
  readonly #cache = new Map<string, Cached>();
  readonly #pending = new Map<string, Promise<string>>();
  #exchanges = 0;

  constructor(options: ExchangedTokensOptions) {
    this.#options = options;
    const { credentials } = options;
    const timeout = credentials.fetchTimeoutMs ?? DEFAULT_EXCHANGE_FETCH_TIMEOUT_MS;
    this.#http = resolveOAuthHttp({
      allowNonPublic: options.allowNonPublic ?? false,
      maxResponseBytes: credentials.fetchMaxBytes ?? DEFAULT_EXCHANGE_FETCH_MAX_BYTES,
      connectTimeoutMs: timeout,
      readTimeoutMs: timeout,
    });
    this.#now = options.now ?? Date.now;
  }

  /** Exchanges sent so far (cache misses). */
  get exchanges(): number {
    return this.#exchanges;
  }

  /** Tokens cached now. */
  get size(): number {
    return this.#cache.size;
  }

  /**
   * Drops the cached token of caller `key` (`callerKey`) when it is still `accessToken`: the
   * upstream refused it, so the caller's next call exchanges again.
   */
  forget(key: string, accessToken: string): void {
    if (this.#cache.get(key)?.accessToken === accessToken) this.#cache.delete(key);
  }

  /** A token for `principal` at this upstream: cached, or exchanged for `caller` now. */
  async tokenFor(principal: Principal, caller: CallerToken): Promise<string> {
    const key = callerKey(principal);
    const cached = this.#cache.get(key);
    if (cached !== undefined) {
      this.#cache.delete(key);
      if (this.#now() < cached.usableUntil) {
        this.#cache.set(key, cached);
        return cached.accessToken;
      }
    }
    const pending = this.#pending.get(key);
    if (pending !== undefined) return pending;
    const run = this.#exchange(key, principal, caller).finally(() => {
      this.#pending.delete(key);
    });
    this.#pending.set(key, run);
    return run;
  }

  async #exchange(key: string, principal: Principal, caller: CallerToken): Promise<string> {
    const { credentials, server } = this.#options;
    this.#exchanges += 1;
    let exchanged: Awaited<ReturnType<typeof exchangeAccessToken>>;
    try {
      // Loaded with the first exchange: the gateway starts without the OAuth client.
      const { exchangeAccessToken: exchange } = await import('../../oauth/token-exchange.js');
      exchanged = await exchange({
        http: this.#http,
        issuer: principal.issuer,
        tokenEndpoint: credentials.tokenEndpoint,
        clientId: credentials.clientId,
        clientSecret: credentials.clientSecret,
        tokenAuthMethod: credentials.tokenAuthMethod ?? 'none',
        subjectToken: caller.reveal(),
        resource: credentials.resource ?? this.#options.url,
        audience: credentials.audience,
        scope: credentials.scope,
      });
    } catch (error) {
      throw exchangeFailure(server, error);
    }
    const skew = credentials.refreshSkewMs ?? DEFAULT_EXCHANGE_REFRESH_SKEW_MS;
    if (exchanged.expiresAt !== undefined) {
      // Never used past the caller's own token: the person's session with the gateway bounds it.
      const usableUntil = Math.min(
        exchanged.expiresAt - skew,
        caller.expiresAt ?? Number.POSITIVE_INFINITY,
      );
      if (this.#now() < usableUntil) {
        this.#cache.set(key, { accessToken: exchanged.accessToken, usableUntil });
        const max = credentials.maxCachedTokens ?? DEFAULT_EXCHANGE_MAX_CACHED_TOKENS;
        while (this.#cache.size > max) {
          const oldest = this.#cache.keys().next().value as string;
          this.#cache.delete(oldest);
        }
      }
    }
    return exchanged.accessToken;
  }
}

function exchangeFailure(server: string, error: unknown): GatewayTokenExchangeError {
  const details: Record<string, unknown> = { server };
  let why: string;
  if (OAuthError.isInstance(error)) {
    details.error = error.error;
    if (error.status !== undefined) details.status = error.status;
    why = `the authorization server refused it (${error.error})`;
  } else if (OAuthTransportError.isInstance(error)) {
    details.reason = error.reason;
    why = `the authorization server could not be reached or answered out of bounds (${error.reason})`;
  } else {
    const code = McpBridgeError.isInstance(error) ? error.code : 'unknown';
    details.cause = code;
    why = `the authorization server's answer could not be used (${code})`;
  }
  return new GatewayTokenExchangeError(
    `The token exchange for the caller at the upstream ${server} failed: ${why}`,
    { details, cause: error },
  );
}
