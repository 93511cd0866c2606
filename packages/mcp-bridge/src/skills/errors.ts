import { McpBridgeError } from '../mcp-bridge-error.js';

/**
 * An `McpSkillSource` option is invalid, or the client does not declare the skills extension,
 * or the server does not declare what the call needs (the extension, `directoryRead`).
 */
export class McpSkillConfigurationError extends McpBridgeError {
  static override readonly code: string = 'MCP_SKILL_CONFIGURATION';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/McpSkillConfigurationError',
  );
}

/**
 * A skill file read from the server failed verification: its byte length differs from the
 * listed `size`, its SHA-256 differs from the listed `digest`, the fetched SKILL.md's front
 * matter differs from the listed entry's, the file is not in the skill's listed resources (so it
 * cannot be verified), it is over `maxFileBytes`, or the answer held no usable content. The
 * content is never used. `details.reason` says which.
 */
export class McpSkillVerificationError extends McpBridgeError {
  static override readonly code: string = 'MCP_SKILL_VERIFICATION';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/McpSkillVerificationError',
  );
}

/** A file or directory of a skill was asked for before the skill was loaded; nothing was sent. */
export class McpSkillNotLoadedError extends McpBridgeError {
  static override readonly code: string = 'MCP_SKILL_NOT_LOADED';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/McpSkillNotLoadedError',
  );
}

/** No listed skill has that name (or the entry was skipped as malformed). */
export class McpSkillNotListedError extends McpBridgeError {
  static override readonly code: string = 'MCP_SKILL_NOT_LISTED';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/mcp-bridge/McpSkillNotListedError',
  );
}
