import { describe, expect, it } from 'vitest';
import * as api from './index.js';
import { ToolsError } from './index.js';

const errorClasses = Object.entries(api).filter(
  (entry): entry is [string, typeof ToolsError] =>
    typeof entry[1] === 'function' && entry[1].prototype instanceof Error,
);

describe('ToolsError design', () => {
  it('finds the exported error classes', () => {
    expect(errorClasses.map(([name]) => name)).toContain('ToolsError');
  });

  it.each(errorClasses)('%s has a stable code, a Symbol.for brand and isInstance', (name, cls) => {
    expect(Object.hasOwn(cls, 'code')).toBe(true);
    expect(cls.code).toMatch(/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/);
    expect(Object.hasOwn(cls, 'brand')).toBe(true);
    expect(Symbol.keyFor(cls.brand)).toBe(`@toolfence/tools/${name}`);
    expect(typeof cls.isInstance).toBe('function');
    expect(cls.prototype instanceof ToolsError || cls === ToolsError).toBe(true);
  });

  it('gives every exported error class its own code', () => {
    const codes = errorClasses.map(([, cls]) => cls.code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('recognises instances across bundles by brand, not by prototype', () => {
    const error = new ToolsError('something failed', { details: { step: 1 } });
    expect(ToolsError.isInstance(error)).toBe(true);
    expect(error.code).toBe('TOOLS_ERROR');
    expect(error.name).toBe('ToolsError');
    expect(error.details).toEqual({ step: 1 });
    expect(Object.isFrozen(error.details)).toBe(true);
    const foreign = Object.create(null) as Record<symbol, unknown>;
    foreign[Symbol.for('@toolfence/tools/ToolsError')] = true;
    expect(ToolsError.isInstance(foreign)).toBe(true);
    expect(ToolsError.isInstance(new Error('plain'))).toBe(false);
    expect(ToolsError.isInstance(null)).toBe(false);
  });

  it('keeps the cause without copying it into the message', () => {
    const cause = new Error('secret-token-123');
    const error = new ToolsError('safe message', { cause });
    expect(error.cause).toBe(cause);
    expect(error.message).not.toContain('secret');
  });
});
