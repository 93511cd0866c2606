import { McpConfigurationError } from './errors.js';

/** Bounds on everything an MCP server sends back or makes the client wait for. */
export interface McpLimits {
  /** Time limit of one request (list page, call, read, prompt), in milliseconds. */
  readonly requestTimeoutMs: number;
  /** Time limit of `initialize`, in milliseconds. */
  readonly initializeTimeoutMs: number;
  /** Time limit of `close`, in milliseconds. */
  readonly closeTimeoutMs: number;
  /** Pages followed in one listing. */
  readonly maxPages: number;
  /** Items (tools, resources, templates, prompts) in one listing, over all pages. */
  readonly maxItems: number;
  /** Content blocks kept from one result (tool call, resource read, prompt). */
  readonly maxContentBlocks: number;
  /** Characters kept from one result: text, base64 data, URIs and structured content. */
  readonly maxResultChars: number;
}

/** The defaults of {@link McpLimits}. */
export const DEFAULT_MCP_LIMITS: McpLimits = Object.freeze({
  requestTimeoutMs: 30_000,
  initializeTimeoutMs: 15_000,
  closeTimeoutMs: 10_000,
  maxPages: 20,
  maxItems: 1_000,
  maxContentBlocks: 256,
  maxResultChars: 200_000,
});

const LIMIT_KEYS = Object.keys(DEFAULT_MCP_LIMITS) as readonly (keyof McpLimits)[];

/**
 * Fills in defaults and validates: every limit is a positive safe integer (a boolean, a string,
 * `NaN` or `Infinity` is refused) and unknown keys are refused. Returns a frozen object.
 */
export function resolveMcpLimits(limits: Partial<McpLimits> | undefined = {}): McpLimits {
  if (typeof limits !== 'object' || limits === null || Array.isArray(limits)) {
    throw new McpConfigurationError('MCP limits must be an object');
  }
  for (const key of Object.keys(limits)) {
    if (!(LIMIT_KEYS as readonly string[]).includes(key)) {
      throw new McpConfigurationError('Unknown MCP limit', { details: { limit: key } });
    }
  }
  const resolved: Record<string, number> = {};
  for (const key of LIMIT_KEYS) {
    const value = (limits as Record<string, unknown>)[key] ?? DEFAULT_MCP_LIMITS[key];
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
      throw new McpConfigurationError('MCP limit must be a positive integer', {
        details: { limit: key, type: typeof value },
      });
    }
    resolved[key] = value;
  }
  return Object.freeze(resolved) as unknown as McpLimits;
}
