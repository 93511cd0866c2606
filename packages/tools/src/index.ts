// Package metadata

// Tool protocol (src/registry)
export {
  type AccessScope,
  type ContentBlock,
  type EffectDescriptor,
  errorResult,
  type JsonObject,
  type JsonValue,
  jsonResult,
  TOOL_EFFECTS,
  type Tool,
  type ToolContext,
  type ToolEffect,
  type ToolResult,
  type ToolSpec,
  textResult,
} from './registry/tool.js';
export { createToolContext, type ToolContextInit } from './registry/tool-context.js';
// Errors
export { ToolsError, type ToolsErrorOptions } from './tools-error.js';
export { VERSION } from './version.js';

// Built-in tools (src/builtin) — issue 5
// Network guard errors (the guard itself is the `@toolfence/tools/net` subpath)
export { type NetworkLimit, NetworkLimitError } from './net/network-limit-error.js';
export { NetworkOptionsError } from './net/network-options-error.js';
export { NetworkPolicyError, type NetworkPolicyReason } from './net/network-policy-error.js';

// MCP adapter (src/mcp) — issue 6
export { type McpContractReading, readMcpToolContract } from './mcp/contract-reading.js';
export type {
  McpPromptDescriptor,
  McpResourceDescriptor,
  McpResourceTemplateDescriptor,
  McpToolDescriptor,
} from './mcp/descriptors.js';
export {
  McpCapabilityError,
  McpCatalogStaleError,
  McpConfigurationError,
  McpLifecycleError,
  McpLimitError,
  McpProtocolError,
  McpRemoteError,
  type McpRemoteErrorOptions,
  McpTimeoutError,
  McpToolNameCollisionError,
  McpTransportError,
} from './mcp/errors.js';
export { DEFAULT_MCP_LIMITS, type McpLimits, resolveMcpLimits } from './mcp/mcp-limits.js';
export {
  type McpListChangedOptions,
  McpServerConfig,
  type McpServerConfigInit,
} from './mcp/mcp-server-config.js';
export {
  type McpCapability,
  type McpConnectionLease,
  type McpConnectionState,
  type McpListing,
  type McpRetireReason,
  McpServerConnection,
  type McpServerConnectionInit,
  type McpServerEvent,
} from './mcp/mcp-server-connection.js';
export {
  type McpCatalog,
  McpServerRegistry,
  type McpServerRegistryOptions,
  type McpToolDiscovery,
} from './mcp/mcp-server-registry.js';
export type {
  McpCallToolParams,
  McpGetPromptParams,
  McpInitializeResult,
  McpRequestOptions,
  McpSession,
} from './mcp/mcp-session.js';
export { McpToolAdapter } from './mcp/mcp-tool-adapter.js';
export {
  collectPages,
  type McpCollectedPages,
  type McpCollectPagesOptions,
  type McpListingProblem,
} from './mcp/pagination.js';
export {
  type McpCallToolResultMappingOptions,
  type McpPromptMessage,
  type McpPromptResult,
  type McpResourceReadResult,
  type McpResultLimits,
  type McpResultMapper,
  mapCallToolResult,
  mapGetPromptResult,
  mapReadResourceResult,
} from './mcp/result-mapping.js';
export {
  assignMcpToolNames,
  isValidMcpToolNamespace,
  MCP_TOOL_NAME_MAX_LENGTH,
  mcpToolName,
} from './mcp/tool-name.js';

// Skills (src/skills) — issue 6
