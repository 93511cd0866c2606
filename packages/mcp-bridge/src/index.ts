// Package metadata

// Errors
export { McpBridgeError, type McpBridgeErrorOptions } from './mcp-bridge-error.js';
export { VERSION } from './version.js';
