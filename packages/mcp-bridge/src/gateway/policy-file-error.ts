import { McpBridgeError } from '../mcp-bridge-error.js';

/**
 * A policy file (`--policy` of `toolfence-mcp serve` and `inspect`) cannot be read or used: not a
 * regular file, over the size limit, not JSON, an unknown key (named, with the accepted ones), a
 * bad rule or condition. `details.at` names the place (`rules[2].when.path`). The gateway does not
 * start; a reload keeps the running policy.
 */
export class PolicyFileError extends McpBridgeError {
  static override readonly code: string = 'POLICY_FILE_INVALID';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/PolicyFileError');
}
