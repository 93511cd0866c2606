// The console's sign-in with the identity provider (`gateway.httpAuth`): the OAuth 2.1
// authorization code flow with PKCE (S256) and `state`, against the first authorization server.
// The access token obtained is checked exactly like the gateway's bearer tokens and then dropped:
// the browser keeps only the console's session cookie, bound to the principal.
import { randomBytes } from 'node:crypto';
import { checkOptionKeys, type Principal } from '@toolfence/tools/core';
import * as oauth from 'oauth4webapi';
import { McpBridgeError } from '../../mcp-bridge-error.js';
import {
  type AuthorizationServerMetadata,
  discoverAuthorizationServer,
} from '../../oauth/discovery.js';
import { type AllowNonPublic, type OAuthHttp, resolveOAuthHttp } from '../../oauth/http.js';
import { basicAuth, requestOptions } from '../../oauth/token-endpoint.js';
import { positiveInteger } from '../../transport/record-limits.js';
import { GatewayConfigError, gatewayOptionRefusal } from '../errors.js';
import {
  DEFAULT_HTTP_AUTH_FETCH_MAX_BYTES,
  DEFAULT_HTTP_AUTH_FETCH_TIMEOUT_MS,
  type ResolvedConsoleLoginSettings,
} from '../identity/http-auth-settings.js';
import type { AuthenticatedCaller, RefusedCaller } from '../identity/resource-server.js';
import { sameSecret } from './console-sessions.js';

/** Default number of sign-ins started and not finished held at once: 64 (one more is refused). */
export const DEFAULT_CONSOLE_MAX_PENDING_LOGINS = 64;
/**
 * Default number of sign-ins in progress one source address may hold: 8 (behind a reverse proxy
 * every sign-in comes from the proxy's address).
 */
export const DEFAULT_CONSOLE_MAX_PENDING_LOGINS_PER_SOURCE = 8;

/**
 * A sign-in could not start: `maxPending` sign-ins are in progress (or `maxPendingPerSource` from
 * this address). Those held are never dropped for a new one (an unauthenticated flood would
 * cancel an admin's sign-in in progress); each leaves at its callback or after `timeoutMs`. The
 * console answers 429. `details.option` names the limit, `details.limit` its value.
 */
export class ConsoleLoginBusyError extends McpBridgeError {
  static override readonly code: string = 'GATEWAY_CONSOLE_LOGIN_BUSY';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/ConsoleLoginBusyError',
  );
}
/** Default time a started sign-in may take before its callback is refused: 10 minutes. */
export const DEFAULT_CONSOLE_LOGIN_TIMEOUT_MS: number = 10 * 60 * 1000;

/** Options of {@link ConsoleLogin}. */
export interface ConsoleLoginOptions {
  /** The issuer signed in with (the first of `gateway.httpAuth.authorizationServers`). */
  readonly issuer: string;
  /** The gateway's resource (`gateway.httpAuth.resource`), sent as RFC 8707 `resource`. */
  readonly resource: string;
  /** `gateway.httpAuth.console`, checked. */
  readonly settings: ResolvedConsoleLoginSettings;
  /** The console client's secret (`TOOLFENCE_CONSOLE_CLIENT_SECRET`); none: a public client. */
  readonly clientSecret?: string | undefined;
  /**
   * Non-public addresses the authorization server may be reached at (the OAuth client's network
   * guard). Default `false`: public HTTPS only.
   */
  readonly allowNonPublic?: AllowNonPublic | undefined;
  /** Time limit of each request to the authorization server, in ms. Default 5,000 (as `gateway.httpAuth.fetchTimeoutMs`). */
  readonly fetchTimeoutMs?: number | undefined;
  /** Largest answer of the authorization server, in bytes. Default 262,144 (as `gateway.httpAuth.fetchMaxBytes`). */
  readonly fetchMaxBytes?: number | undefined;
  /** How the gateway checks a bearer token (`GatewayResourceServer.authenticate`). */
  readonly authenticate: (authorization: string) => Promise<AuthenticatedCaller | RefusedCaller>;
  /**
   * Sign-ins started and not finished held at once; one more is refused
   * ({@link ConsoleLoginBusyError}). Default {@link DEFAULT_CONSOLE_MAX_PENDING_LOGINS}.
   */
  readonly maxPending?: number;
  /**
   * Sign-ins in progress one source (the `source` given to {@link ConsoleLogin.start}: the
   * console passes the client's address) may hold; one more from it is refused. Default
   * {@link DEFAULT_CONSOLE_MAX_PENDING_LOGINS_PER_SOURCE}.
   */
  readonly maxPendingPerSource?: number;
  /** Time a sign-in may take, in ms. Default {@link DEFAULT_CONSOLE_LOGIN_TIMEOUT_MS}. */
  readonly timeoutMs?: number;
}

/** A sign-in started: where to send the browser, and the value of its binding cookie. */
export interface StartedLogin {
  readonly authorizationUrl: string;
  /** Random; the callback must come from the browser holding it (login CSRF). */
  readonly binding: string;
}

/** The end of a callback: a principal allowed in, or why not (a fixed text). */
export type LoginResult =
  | { readonly ok: true; readonly principal: Principal }
  | { readonly ok: false; readonly status: 400 | 403 | 502; readonly reason: string };

const OPTION_KEYS: readonly string[] = Object.freeze([
  'issuer',
  'resource',
  'settings',
  'clientSecret',
  'allowNonPublic',
  'fetchTimeoutMs',
  'fetchMaxBytes',
  'authenticate',
  'maxPending',
  'maxPendingPerSource',
  'timeoutMs',
]);

interface Pending {
  readonly verifier: string;
  readonly binding: string;
  readonly redirectUri: string;
  readonly started: number;
  readonly source: string;
}

/** True when `principal` is one of the console's admins (`gateway.httpAuth.console.admins`). */
export function isConsoleAdmin(
  principal: Principal,
  admins: ResolvedConsoleLoginSettings['admins'],
): boolean {
  if (admins.subjects.includes(principal.subject)) return true;
  const value = principal.claims[admins.groupClaim];
  const held = typeof value === 'string' ? [value] : (value ?? []);
  return held.some((group) => admins.groups.includes(group));
}

/**
 * The console's identity-provider sign-in. {@link start} makes the authorization URL (a fresh
 * `state` and PKCE verifier, held here, single use, for `timeoutMs`); {@link finish} checks the
 * callback (known `state`, the browser's binding cookie, the `iss` when given), redeems the code
 * with the verifier, checks the access token as the gateway checks bearer tokens, and the admins.
 */
export class ConsoleLogin {
  readonly #options: ConsoleLoginOptions;
  readonly #pending = new Map<string, Pending>();
  readonly #max: number;
  readonly #maxPerSource: number;
  readonly #timeoutMs: number;
  readonly #http: OAuthHttp;
  #metadata: AuthorizationServerMetadata | undefined;

  constructor(options: ConsoleLoginOptions) {
    checkOptionKeys(
      options,
      OPTION_KEYS,
      'ConsoleLogin',
      (message, option) => new GatewayConfigError(message, { details: { option } }),
    );
    const refuse = gatewayOptionRefusal('ConsoleLogin');
    this.#options = options;
    // Every request to the authorization server goes through the OAuth client's guarded fetch.
    const fetchTimeoutMs = positiveInteger(
      'fetchTimeoutMs',
      options.fetchTimeoutMs,
      DEFAULT_HTTP_AUTH_FETCH_TIMEOUT_MS,
      refuse,
    );
    this.#http = resolveOAuthHttp({
      allowNonPublic: options.allowNonPublic ?? false,
      maxResponseBytes: positiveInteger(
        'fetchMaxBytes',
        options.fetchMaxBytes,
        DEFAULT_HTTP_AUTH_FETCH_MAX_BYTES,
        refuse,
      ),
      connectTimeoutMs: fetchTimeoutMs,
      readTimeoutMs: fetchTimeoutMs,
    });
    this.#max = positiveInteger(
      'maxPending',
      options.maxPending,
      DEFAULT_CONSOLE_MAX_PENDING_LOGINS,
      refuse,
    );
    this.#maxPerSource = positiveInteger(
      'maxPendingPerSource',
      options.maxPendingPerSource,
      DEFAULT_CONSOLE_MAX_PENDING_LOGINS_PER_SOURCE,
      refuse,
    );
    this.#timeoutMs = positiveInteger(
      'timeoutMs',
      options.timeoutMs,
      DEFAULT_CONSOLE_LOGIN_TIMEOUT_MS,
      refuse,
    );
  }

  async #server(): Promise<AuthorizationServerMetadata> {
    this.#metadata ??= await discoverAuthorizationServer(this.#http, this.#options.issuer);
    return this.#metadata;
  }

  /**
   * Starts a sign-in whose callback is `redirectUri`, for a browser at `source` (its address).
   * Sign-ins past `timeoutMs` are forgotten first; then, with `maxPending` held (or
   * `maxPendingPerSource` from `source`), throws {@link ConsoleLoginBusyError}: none held is ever
   * dropped for a new one.
   */
  async start(redirectUri: string, now: number = Date.now(), source = ''): Promise<StartedLogin> {
    for (const [key, pending] of this.#pending) {
      if (now - pending.started >= this.#timeoutMs) this.#pending.delete(key);
    }
    this.#refuseBeyondLimits(source);
    const metadata = await this.#server();
    // Checked again: the metadata fetch may have let other sign-ins start meanwhile.
    this.#refuseBeyondLimits(source);
    const state = randomBytes(32).toString('base64url');
    const verifier = oauth.generateRandomCodeVerifier();
    const binding = randomBytes(32).toString('base64url');
    this.#pending.set(state, { verifier, binding, redirectUri, started: now, source });
    const url = new URL(metadata.authorizationEndpoint);
    url.searchParams.set('response_type', 'code');
    url.searchParams.set('client_id', this.#options.settings.clientId);
    url.searchParams.set('redirect_uri', redirectUri);
    url.searchParams.set('state', state);
    url.searchParams.set('code_challenge', await oauth.calculatePKCECodeChallenge(verifier));
    url.searchParams.set('code_challenge_method', 'S256');
    url.searchParams.set('resource', this.#options.resource);
    if (this.#options.settings.scope.length > 0) {
      url.searchParams.set('scope', this.#options.settings.scope.join(' '));
    }
    return { authorizationUrl: url.href, binding };
  }

  #refuseBeyondLimits(source: string): void {
    const minutes = Math.ceil(this.#timeoutMs / 60_000);
    if (this.#pending.size >= this.#max) {
      throw new ConsoleLoginBusyError(
        `${this.#max} sign-ins are in progress, the most the console holds (maxPending): this one cannot start. Try again in a few minutes (a sign-in not finished ends after ${minutes} minute(s))`,
        { details: { option: 'maxPending', limit: this.#max } },
      );
    }
    let fromSource = 0;
    for (const pending of this.#pending.values()) if (pending.source === source) fromSource += 1;
    if (fromSource >= this.#maxPerSource) {
      throw new ConsoleLoginBusyError(
        `${this.#maxPerSource} sign-ins from this address are in progress, the most the console holds from one address (maxPendingPerSource): this one cannot start. Finish one, or try again in a few minutes (a sign-in not finished ends after ${minutes} minute(s))`,
        { details: { option: 'maxPendingPerSource', limit: this.#maxPerSource } },
      );
    }
  }

  /** Finishes the sign-in of the callback `parameters` from the browser holding `binding`. */
  async finish(
    parameters: URLSearchParams,
    binding: string | undefined,
    now: number = Date.now(),
  ): Promise<LoginResult> {
    const state = parameters.get('state') ?? '';
    const pending = this.#pending.get(state);
    // Single use: a state is spent by its first callback, whatever comes of it.
    if (pending !== undefined) this.#pending.delete(state);
    if (pending === undefined || now - pending.started >= this.#timeoutMs) {
      return refused(
        400,
        'This sign-in is unknown or expired (no PKCE verifier is held for its state). Start again.',
      );
    }
    if (binding === undefined || !sameSecret(binding, pending.binding)) {
      return refused(403, 'This sign-in was started in another browser. Start again.');
    }
    let token: string;
    try {
      const metadata = await this.#server();
      const as = metadata.raw as oauth.AuthorizationServer;
      const client: oauth.Client = { client_id: this.#options.settings.clientId };
      const secret = this.#options.clientSecret;
      const checked = oauth.validateAuthResponse(as, client, parameters, state);
      const response = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        secret === undefined || secret === '' ? oauth.None() : basicAuth(secret),
        checked,
        pending.redirectUri,
        pending.verifier,
        {
          ...requestOptions(this.#http),
          additionalParameters: { resource: this.#options.resource },
        },
      );
      const result = await oauth.processAuthorizationCodeResponse(as, client, response);
      token = result.access_token;
    } catch (error) {
      if (error instanceof oauth.AuthorizationResponseError) {
        return refused(403, 'The identity provider did not sign you in.');
      }
      return refused(502, 'The sign-in could not be completed with the identity provider.');
    }
    const caller = await this.#options.authenticate(`Bearer ${token}`);
    if (!caller.ok) {
      // The refusal's own description (the gateway's text, never the token): for a token over
      // a claim limit it names the setting an operator can raise.
      const why = caller.description === undefined ? '' : ` ${caller.description}.`;
      return refused(
        403,
        `The access token from the identity provider is not accepted by this gateway.${why}`,
      );
    }
    // The admins are subjects and groups of the issuer signed in with: a token another trusted
    // issuer signed (through a misbehaving token endpoint) names someone else, whatever its sub.
    if (caller.principal.issuer !== this.#options.issuer) {
      return refused(
        403,
        'The access token was not issued by the identity provider the console signs in with.',
      );
    }
    const { admins } = this.#options.settings;
    if (admins.subjects.length === 0 && admins.groups.length === 0) {
      return refused(
        403,
        'You are signed in, but no one may use this console yet: its admins are not configured (gateway.httpAuth.console.admins).',
      );
    }
    if (!isConsoleAdmin(caller.principal, admins)) {
      return refused(
        403,
        'You are signed in, but you are not one of the console admins (gateway.httpAuth.console.admins).',
      );
    }
    return { ok: true, principal: caller.principal };
  }
}

function refused(status: 400 | 403 | 502, reason: string): LoginResult {
  return { ok: false, status, reason };
}
