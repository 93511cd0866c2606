import { CALL_NOT_RUN } from '@toolfence/tools/core';
import { McpBridgeError, type McpBridgeErrorOptions } from '../mcp-bridge-error.js';

/** A `bridgeTools` option is invalid. */
export class BridgeConfigurationError extends McpBridgeError {
  static override readonly code: string = 'BRIDGE_CONFIGURATION';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/BridgeConfigurationError',
  );
}

/**
 * A server tool's schema cannot be given authority: an explicit `null`, a non-object root, an
 * older or unknown declared dialect, a `$ref` that leaves the document, or a schema the validator
 * cannot compile. Deny the tool (`deny`) or fix the server.
 */
export class BridgeSchemaError extends McpBridgeError {
  static override readonly code: string = 'BRIDGE_SCHEMA';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/BridgeSchemaError');
}

/** A bridged tool needs approval and the approver declined, failed, or none is configured. */
export class BridgeApprovalError extends McpBridgeError {
  static override readonly code: string = 'BRIDGE_APPROVAL_DENIED';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/BridgeApprovalError');

  /** Creates the error, marked `CALL_NOT_RUN` (of `@toolfence/tools`): nothing was sent. */
  constructor(message: string, options: McpBridgeErrorOptions = {}) {
    super(message, options);
    Object.defineProperty(this, CALL_NOT_RUN, { value: true });
  }
}
