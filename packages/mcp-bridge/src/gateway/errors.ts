import { McpBridgeError } from '../mcp-bridge-error.js';

/**
 * The gateway's configuration cannot be used: an unknown key, a server without `command` or
 * `url`, a bad URL, an unreadable or invalid file, an unset variable without a default. The
 * message names the server and the key; the gateway does not start.
 */
export class GatewayConfigError extends McpBridgeError {
  static override readonly code: string = 'GATEWAY_CONFIG';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/GatewayConfigError');
}

/** Refuses an option of `owner` (`GatewayConsole option maxSessions must be …`), naming it. */
export function gatewayOptionRefusal(
  owner: string,
): (message: string, option: string) => GatewayConfigError {
  return (message, option) =>
    new GatewayConfigError(`${owner} option ${message}`, { details: { option } });
}

/** The pin lock file or the audit log cannot be read or written safely. */
export class GatewayStateError extends McpBridgeError {
  static override readonly code: string = 'GATEWAY_STATE';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/GatewayStateError');
}

/**
 * `pin --accept` named a digest that is not the definition waiting for acceptance now: the
 * upstream listed another definition since `pin --show` printed it. Nothing was accepted;
 * `details` carry the server, the tool, the digest named and the one pending now.
 */
export class PinChangedError extends McpBridgeError {
  static override readonly code: string = 'GATEWAY_PIN_CHANGED';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/PinChangedError');
}

/**
 * An upstream did not start (connect, handshake, first listing) within its start timeout
 * (`gateway.startTimeoutMs`, or the server's own `startTimeoutMs`). Its tools are absent; the
 * other upstreams are not held up. Reported in `McpGateway.upstreams` and the logger.
 */
export class UpstreamStartTimeoutError extends McpBridgeError {
  static override readonly code: string = 'GATEWAY_START_TIMEOUT';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/UpstreamStartTimeoutError',
  );
}
