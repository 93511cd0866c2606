import { McpBridgeError, type McpBridgeErrorOptions } from '../mcp-bridge-error.js';

/**
 * The standard OAuth 2.x error codes an authorization server may return (RFC 6749 §4.1.2.1,
 * §5.2, RFC 6750 §3.1, RFC 7591 §3.2.2, RFC 8707 §2, RFC 9449). Anything else is reported
 * as `unrecognized_error`: remote text never reaches an exception or a log.
 */
export const STANDARD_OAUTH_ERRORS: readonly string[] = Object.freeze([
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'access_denied',
  'unsupported_response_type',
  'server_error',
  'temporarily_unavailable',
  'invalid_token',
  'insufficient_scope',
  'invalid_redirect_uri',
  'invalid_client_metadata',
  'invalid_software_statement',
  'unapproved_software_statement',
  'invalid_target',
  'invalid_dpop_proof',
  'use_dpop_nonce',
  'login_required',
  'consent_required',
  'interaction_required',
]);

/** Maps a remote error string to a standard OAuth error code, or `unrecognized_error`. */
export function standardOAuthError(value: unknown): string {
  return typeof value === 'string' && STANDARD_OAUTH_ERRORS.includes(value)
    ? value
    : 'unrecognized_error';
}

/** Options of {@link OAuthError}. */
export interface OAuthErrorOptions extends McpBridgeErrorOptions {
  /** Standard OAuth error code (`invalid_grant`, ...). */
  readonly error: string;
  /** HTTP status of the answer, when there was one. */
  readonly status?: number;
}

/**
 * The authorization server answered with an OAuth error. Only the standard `error` code is kept;
 * the server's `error_description` and `error_uri` are dropped on purpose.
 */
export class OAuthError extends McpBridgeError {
  static override readonly code: string = 'OAUTH_SERVER_ERROR';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/OAuthError');
  /** Standard OAuth error code (`invalid_grant`, `invalid_client`, ...) or `unrecognized_error`. */
  readonly error: string;
  /** HTTP status of the answer, when there was one. */
  readonly status: number | undefined;

  /**
   * Creates the error; `options.error` is reduced to a standard code (else
   * `unrecognized_error`), appended to `message` and recorded in `details` with the status.
   */
  constructor(message: string, options: OAuthErrorOptions) {
    const error = standardOAuthError(options.error);
    super(`${message} (${error})`, {
      ...options,
      details: { ...options.details, error, status: options.status },
    });
    this.error = error;
    this.status = options.status;
  }
}

/** Options given to the OAuth functions are inconsistent or invalid. */
export class OAuthConfigurationError extends McpBridgeError {
  static override readonly code: string = 'OAUTH_CONFIGURATION_INVALID';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/OAuthConfigurationError',
  );
}

/** Protected-resource or authorization-server metadata could not be found or is malformed. */
export class OAuthDiscoveryError extends McpBridgeError {
  static override readonly code: string = 'OAUTH_DISCOVERY_FAILED';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/OAuthDiscoveryError');
}

/** The protected-resource metadata names another resource than the MCP server's URL. */
export class OAuthResourceMismatchError extends McpBridgeError {
  static override readonly code: string = 'OAUTH_RESOURCE_MISMATCH';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/OAuthResourceMismatchError',
  );
}

/** An issuer differs from the chosen one (metadata `issuer` or RFC 9207 `iss`). */
export class OAuthIssuerMismatchError extends McpBridgeError {
  static override readonly code: string = 'OAUTH_ISSUER_MISMATCH';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/OAuthIssuerMismatchError',
  );
}

/** The authorization server lacks something this client requires (S256 PKCE, an endpoint, ...). */
export class OAuthUnsupportedServerError extends McpBridgeError {
  static override readonly code: string = 'OAUTH_SERVER_UNSUPPORTED';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/OAuthUnsupportedServerError',
  );
}

/** A token or registration response violates the protocol or this client's consistency checks. */
export class OAuthResponseError extends McpBridgeError {
  static override readonly code: string = 'OAUTH_RESPONSE_INVALID';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/OAuthResponseError');
}

/** Why an OAuth HTTP exchange was refused. */
export type OAuthTransportFailure =
  | 'redirect'
  | 'too-large'
  | 'compressed'
  | 'blocked'
  | 'network'
  | 'timeout';

/** An OAuth HTTP exchange failed or was refused (redirect, oversized or compressed body, guard). */
export class OAuthTransportError extends McpBridgeError {
  static override readonly code: string = 'OAUTH_TRANSPORT_FAILED';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/OAuthTransportError');
  /** What went wrong. */
  readonly reason: OAuthTransportFailure;

  /** Creates the error; `options.reason` is also recorded in `details.reason`. */
  constructor(
    message: string,
    options: McpBridgeErrorOptions & {
      /** What went wrong with the exchange. */
      readonly reason: OAuthTransportFailure;
    },
  ) {
    super(message, { ...options, details: { ...options.details, reason: options.reason } });
    this.reason = options.reason;
  }
}

/** The `state` of an authorization response does not match the stored one. */
export class OAuthStateMismatchError extends McpBridgeError {
  static override readonly code: string = 'OAUTH_STATE_MISMATCH';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/OAuthStateMismatchError',
  );
}

/** More step-up authorizations than allowed were requested for one connection. */
export class OAuthStepUpLimitError extends McpBridgeError {
  static override readonly code: string = 'OAUTH_STEP_UP_LIMIT';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/OAuthStepUpLimitError',
  );
}

/** Why a connection needs the user to authorize (again). */
export type AuthorizationRequiredReason =
  | 'no-token'
  | 'refresh-failed'
  | 'unauthorized'
  | 'insufficient-scope'
  | 'dpop-key-missing'
  | 'dpop-required';

/** What went wrong with DPoP (RFC 9449). */
export type OAuthDpopFailure =
  /** A second `use_dpop_nonce` in a row for one request: the server's nonce never satisfies it. */
  | 'nonce-loop'
  /** The server answered `use_dpop_nonce` without a usable `DPoP-Nonce` header. */
  | 'nonce-missing'
  /** The connection asked for a DPoP-bound token and the server issued a Bearer one. */
  | 'not-bound'
  /** A DPoP-bound token was asked for as a plain bearer token (`token()`), which never happens. */
  | 'bearer-refused'
  /** The server lists DPoP proof algorithms and ES256 is not among them. */
  | 'unsupported-algorithm'
  /** The stored DPoP key is not a valid EC P-256 private JWK. */
  | 'invalid-key';

/** DPoP (RFC 9449) could not be used as required; nothing more was sent. */
export class OAuthDpopError extends McpBridgeError {
  static override readonly code: string = 'OAUTH_DPOP_FAILED';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/OAuthDpopError');
  /** What went wrong. */
  readonly reason: OAuthDpopFailure;

  /** Creates the error; `options.reason` is also recorded in `details.reason`. */
  constructor(
    message: string,
    options: McpBridgeErrorOptions & {
      /** What went wrong with DPoP. */
      readonly reason: OAuthDpopFailure;
    },
  ) {
    super(message, { ...options, details: { ...options.details, reason: options.reason } });
    this.reason = options.reason;
  }
}

/** Options of {@link AuthorizationRequiredError}. */
export interface AuthorizationRequiredErrorOptions extends McpBridgeErrorOptions {
  /** The store's connection id (also recorded in `details`). */
  readonly connectionId: string;
  /** The MCP server URL to authorize for. */
  readonly url: string;
  /** Why authorization is needed (also recorded in `details`). */
  readonly reason: AuthorizationRequiredReason;
  /** The scope to request, already widened for a step-up. */
  readonly scope?: string | undefined;
  /** The issuer used so far, if known. */
  readonly issuer?: string | undefined;
  /** The 1-based step-up attempt for `insufficient-scope` (also recorded in `details`). */
  readonly attempt?: number | undefined;
}

/**
 * The connection has no usable token: the host must run the authorization flow
 * (`authorizeConnection` or `startOAuth`) with the carried `url` and `scope`, then retry.
 */
export class AuthorizationRequiredError extends McpBridgeError {
  static override readonly code: string = 'OAUTH_AUTHORIZATION_REQUIRED';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/AuthorizationRequiredError',
  );
  /** The store's connection id. */
  readonly connectionId: string;
  /** The MCP server URL to authorize for. */
  readonly url: string;
  /** Why authorization is needed. */
  readonly reason: AuthorizationRequiredReason;
  /** The scope to request (already widened for a step-up), if any. */
  readonly scope: string | undefined;
  /** The issuer used so far, if known. */
  readonly issuer: string | undefined;
  /** The step-up attempt number (1-based) for `insufficient-scope`. */
  readonly attempt: number | undefined;

  /** Creates the error; `connectionId`, `reason` and `attempt` are also recorded in `details`. */
  constructor(message: string, options: AuthorizationRequiredErrorOptions) {
    super(message, {
      ...options,
      details: {
        ...options.details,
        connectionId: options.connectionId,
        reason: options.reason,
        attempt: options.attempt,
      },
    });
    this.connectionId = options.connectionId;
    this.url = options.url;
    this.reason = options.reason;
    this.scope = options.scope;
    this.issuer = options.issuer;
    this.attempt = options.attempt;
  }
}

/**
 * Finds the {@link AuthorizationRequiredError} in an error's `cause` chain (a client or transport
 * may wrap it), or returns `undefined`.
 */
export function findAuthorizationRequired(error: unknown): AuthorizationRequiredError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth += 1) {
    if (AuthorizationRequiredError.isInstance(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
