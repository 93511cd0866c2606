import { isCallNotRun } from '@toolfence/tools';
import { describe, expect, it } from 'vitest';
import * as api from './index.js';
import { McpBridgeError } from './index.js';

const errorClasses = Object.entries(api).filter(
  (entry): entry is [string, typeof McpBridgeError] =>
    typeof entry[1] === 'function' && entry[1].prototype instanceof Error,
);

describe('McpBridgeError design', () => {
  it('finds the exported error classes', () => {
    expect(errorClasses.map(([name]) => name)).toContain('McpBridgeError');
  });

  it.each(errorClasses)('%s has a stable code, a Symbol.for brand and isInstance', (name, cls) => {
    expect(Object.hasOwn(cls, 'code')).toBe(true);
    expect(cls.code).toMatch(/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/);
    expect(Object.hasOwn(cls, 'brand')).toBe(true);
    expect(Symbol.keyFor(cls.brand)).toBe(`@toolfence/mcp-bridge/${name}`);
    expect(typeof cls.isInstance).toBe('function');
    expect(cls.prototype instanceof McpBridgeError || cls === McpBridgeError).toBe(true);
  });

  it('gives every exported error class its own code', () => {
    const codes = errorClasses.map(([, cls]) => cls.code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('recognises instances across bundles by brand, not by prototype', () => {
    const error = new McpBridgeError('something failed', { details: { step: 1 } });
    expect(McpBridgeError.isInstance(error)).toBe(true);
    expect(error.code).toBe('MCP_BRIDGE_ERROR');
    expect(error.name).toBe('McpBridgeError');
    expect(error.details).toEqual({ step: 1 });
    expect(Object.isFrozen(error.details)).toBe(true);
    const foreign = Object.create(null) as Record<symbol, unknown>;
    foreign[Symbol.for('@toolfence/mcp-bridge/McpBridgeError')] = true;
    expect(McpBridgeError.isInstance(foreign)).toBe(true);
    expect(McpBridgeError.isInstance(new Error('plain'))).toBe(false);
    expect(McpBridgeError.isInstance(null)).toBe(false);
  });

  it('keeps the cause without copying it into the message', () => {
    const cause = new Error('secret-token-123');
    const error = new McpBridgeError('safe message', { cause });
    expect(error.cause).toBe(cause);
    expect(error.message).not.toContain('secret');
  });
});

describe('errors a budget refunds', () => {
  it('marks RequestNotSentError with the tools package CALL_NOT_RUN symbol', () => {
    expect(isCallNotRun(new api.RequestNotSentError('never written'))).toBe(true);
    expect(isCallNotRun(new McpBridgeError('may have run'))).toBe(false);
  });
});
