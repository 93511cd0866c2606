import { createHash } from 'node:crypto';
import { McpConfigurationError, McpToolNameCollisionError } from './errors.js';

/** Longest registry name an MCP tool gets (the limit most model APIs put on tool names). */
export const MCP_TOOL_NAME_MAX_LENGTH = 64;

const NAMESPACE = /^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_)){0,23}$/;
const SAFE_TOOL_NAME = /^[A-Za-z0-9_-]+$/;

/** True for a valid tool namespace: 1 to 24 of `[A-Za-z0-9_-]`, starting alphanumeric, no `__`. */
export function isValidMcpToolNamespace(namespace: unknown): namespace is string {
  return typeof namespace === 'string' && NAMESPACE.test(namespace) && !namespace.endsWith('_');
}

/**
 * The registry name of a server's tool: `mcp__<namespace>__<name>`, only `[A-Za-z0-9_-]`, at
 * most 64 characters. A name that is already safe and short enough is kept as is; otherwise
 * every other character becomes `_`, the result is cut to fit, and `_` plus the first 8 hex
 * digits of the SHA-256 of the original name are appended, so the mapping is deterministic and
 * two different originals practically never meet. Collisions that remain are caught by
 * {@link assignMcpToolNames}.
 */
export function mcpToolName(namespace: string, name: string): string {
  if (!isValidMcpToolNamespace(namespace)) {
    throw new McpConfigurationError('MCP tool namespace is invalid', {
      details: { rule: '1-24 of [A-Za-z0-9_-], starting alphanumeric, no "__"' },
    });
  }
  if (typeof name !== 'string' || name.length === 0) {
    throw new McpConfigurationError('MCP tool name must be a non-empty string');
  }
  const prefix = `mcp__${namespace}__`;
  if (SAFE_TOOL_NAME.test(name) && prefix.length + name.length <= MCP_TOOL_NAME_MAX_LENGTH) {
    return prefix + name;
  }
  const hash = createHash('sha256').update(name, 'utf8').digest('hex').slice(0, 8);
  const room = MCP_TOOL_NAME_MAX_LENGTH - prefix.length - hash.length - 1;
  const cleaned = Array.from(name)
    .map((char) => (/^[A-Za-z0-9_-]$/.test(char) ? char : '_'))
    .join('')
    .slice(0, room);
  return `${prefix}${cleaned}_${hash}`;
}

/**
 * Maps every name of one catalog with {@link mcpToolName} and raises
 * {@link McpToolNameCollisionError} when two originals (or a duplicate) map to the same name.
 */
export function assignMcpToolNames(
  namespace: string,
  names: readonly string[],
): ReadonlyMap<string, string> {
  const byRegistryName = new Map<string, string>();
  const result = new Map<string, string>();
  for (const name of names) {
    const registryName = mcpToolName(namespace, name);
    if (byRegistryName.has(registryName) || result.has(name)) {
      throw new McpToolNameCollisionError('Two MCP tools map to the same registry name', {
        details: { namespace, registryName },
      });
    }
    byRegistryName.set(registryName, name);
    result.set(name, registryName);
  }
  return result;
}
