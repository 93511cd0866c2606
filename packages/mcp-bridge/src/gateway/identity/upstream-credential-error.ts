import { CALL_NOT_RUN } from '@toolfence/tools/core';
import { McpBridgeError, type McpBridgeErrorOptions } from '../../mcp-bridge-error.js';

/**
 * The token exchange for a caller at an upstream with `credentials` failed: the authorization
 * server refused it (`details.error`, the standard OAuth code, such as `invalid_grant` or
 * `unauthorized_client`), or could not be reached in time, or answered badly. The call did not
 * run. `details.server` names the upstream; never a token.
 */
export class GatewayTokenExchangeError extends McpBridgeError {
  static override readonly code: string = 'GATEWAY_TOKEN_EXCHANGE_FAILED';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/GatewayTokenExchangeError',
  );

  /** Creates the error, marked `CALL_NOT_RUN` (of `@toolfence/tools`): a budget refunds it. */
  constructor(message: string, options: McpBridgeErrorOptions = {}) {
    super(message, options);
    Object.defineProperty(this, CALL_NOT_RUN, { value: true });
  }
}

/**
 * A call to an upstream with `credentials` arrived without an authenticated caller (no
 * `gateway.httpAuth` token: stdio, or a call not made through `serve --http`), or every one of
 * the upstream's per-caller connections is busy (`maxCallerClients`). The call did not run.
 */
export class GatewayCallerCredentialError extends McpBridgeError {
  static override readonly code: string = 'GATEWAY_CALLER_CREDENTIAL';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/GatewayCallerCredentialError',
  );

  /** Creates the error, marked `CALL_NOT_RUN` (of `@toolfence/tools`): a budget refunds it. */
  constructor(message: string, options: McpBridgeErrorOptions = {}) {
    super(message, options);
    Object.defineProperty(this, CALL_NOT_RUN, { value: true });
  }
}
