import { McpBridgeError, type McpBridgeErrorOptions } from '../../mcp-bridge-error.js';

/**
 * Why a bearer token was refused: `missing`, `malformed`, `algorithm`, `issuer`, `audience`,
 * `expired`, `not-yet-valid` (`nbf` or `iat` ahead), `type` (the header's `typ` names another kind of
 * token), `signature`, `unknown-key`, `no-subject`, `inactive` (introspection),
 * `claim-limit` (a kept claim over `principalClaimMaxValues` or `principalClaimMaxChars`), or
 * `insufficient-scope` (then the answer is 403).
 */
export type GatewayTokenRefusal =
  | 'missing'
  | 'malformed'
  | 'algorithm'
  | 'issuer'
  | 'audience'
  | 'expired'
  | 'not-yet-valid'
  | 'type'
  | 'signature'
  | 'unknown-key'
  | 'no-subject'
  | 'inactive'
  | 'claim-limit'
  | 'insufficient-scope';

/**
 * The gateway (an OAuth protected resource) refused a caller's bearer token: answered `401`
 * (`WWW-Authenticate: Bearer error="invalid_token"`), or `403` `insufficient_scope` when the token
 * is valid but lacks a required scope. `details.reason` says which check failed; never the token.
 */
export class GatewayTokenError extends McpBridgeError {
  static override readonly code: string = 'GATEWAY_TOKEN_REFUSED';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/GatewayTokenError');
  /** Which check failed. */
  readonly reason: GatewayTokenRefusal;

  /** `message` is safe to show (it never holds the token); `reason` names the failed check. */
  constructor(message: string, reason: GatewayTokenRefusal, options: McpBridgeErrorOptions = {}) {
    super(message, { ...options, details: { ...options.details, reason } });
    this.reason = reason;
  }
}

/**
 * The gateway could not check a token because the authorization server's metadata, keys or
 * introspection endpoint could not be reached in time or answered badly (too large, not JSON,
 * refused by the network guard). Answered `503`: the caller's token may be fine; retry later.
 */
export class GatewayAuthUnavailableError extends McpBridgeError {
  static override readonly code: string = 'GATEWAY_AUTH_UNAVAILABLE';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/GatewayAuthUnavailableError',
  );
}
