import { McpBridgeError } from '../mcp-bridge-error.js';

/**
 * The `toolfence-mcp` command line, its policy file or its `--url` is invalid (exit code 2).
 * Internal to the CLI: the message names the option, never a secret or a file's contents.
 */
export class InspectUsageError extends McpBridgeError {
  static override readonly code: string = 'INSPECT_USAGE';
  static override readonly brand: symbol = Symbol.for('@toolfence/mcp-bridge/InspectUsageError');
}
