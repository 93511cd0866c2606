import { describe, expect, it } from 'vitest';
import { McpConfigurationError } from './errors.js';
import { DEFAULT_MCP_LIMITS, resolveMcpLimits } from './mcp-limits.js';

describe('McpLimits', () => {
  it('has the documented defaults', () => {
    expect(DEFAULT_MCP_LIMITS).toEqual({
      requestTimeoutMs: 30_000,
      initializeTimeoutMs: 15_000,
      closeTimeoutMs: 10_000,
      maxPages: 20,
      maxItems: 1_000,
      maxContentBlocks: 256,
      maxResultChars: 200_000,
    });
    expect(Object.isFrozen(DEFAULT_MCP_LIMITS)).toBe(true);
  });

  it('fills in defaults around an override', () => {
    expect(resolveMcpLimits({ maxPages: 3 })).toEqual({ ...DEFAULT_MCP_LIMITS, maxPages: 3 });
  });

  it.each([
    ['a boolean', { maxPages: true }],
    ['a numeric string', { maxItems: '10' }],
    ['zero', { maxContentBlocks: 0 }],
    ['a negative number', { requestTimeoutMs: -1 }],
    ['a fraction', { maxResultChars: 1.5 }],
    ['NaN', { closeTimeoutMs: Number.NaN }],
    ['Infinity', { initializeTimeoutMs: Number.POSITIVE_INFINITY }],
    ['an unknown key', { maxBytes: 10 }],
  ])('refuses %s', (_label, limits) => {
    expect(() => resolveMcpLimits(limits as never)).toThrow(McpConfigurationError);
  });

  it('refuses a non-object', () => {
    expect(() => resolveMcpLimits(5 as never)).toThrow(McpConfigurationError);
  });
});
