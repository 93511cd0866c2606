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

// Registry, snapshots, validation (src/registry) — issue 4

// Authorization policies (src/policy) — issue 4

// Built-in tools (src/builtin) — issue 5

// MCP adapter (src/mcp) — issue 6

// Skills (src/skills) — issue 6
