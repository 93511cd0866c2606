import { ToolsError, type ToolsErrorOptions } from '../tools-error.js';

/** Which network rule refused a request. */
export type NetworkPolicyReason =
  | 'invalid-url'
  | 'scheme'
  | 'userinfo'
  | 'port'
  | 'hostname'
  | 'address'
  | 'resolution'
  | 'redirect';

/**
 * A request was refused by the network guard (scheme, port, host name, address, DNS answer or
 * redirect rule).
 *
 * Deliberately not a `TypeError`: the MCP SDK's OAuth discovery treats `TypeError`s as CORS
 * failures and swallows them.
 */
export class NetworkPolicyError extends ToolsError {
  static override readonly code: string = 'NET_POLICY_DENIED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/NetworkPolicyError');

  /** The rule that refused the request. */
  readonly reason: NetworkPolicyReason;

  /** Creates the error; `reason` is stored on the instance and in `details.reason`. */
  constructor(
    message: string,
    reason: NetworkPolicyReason,
    options: Omit<ToolsErrorOptions, 'code'> = {},
  ) {
    super(message, { ...options, details: { reason, ...options.details } });
    this.reason = reason;
  }
}
