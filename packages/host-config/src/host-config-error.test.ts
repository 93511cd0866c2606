import { describe, expect, it } from 'vitest';
import * as api from './index.js';
import { HostConfigError } from './index.js';

const errorClasses = Object.entries(api).filter(
  (entry): entry is [string, typeof HostConfigError] =>
    typeof entry[1] === 'function' && entry[1].prototype instanceof Error,
);

describe('HostConfigError design', () => {
  it('finds the exported error classes', () => {
    expect(errorClasses.map(([name]) => name)).toContain('HostConfigError');
  });

  it.each(errorClasses)('%s has a stable code, a Symbol.for brand and isInstance', (name, cls) => {
    expect(Object.hasOwn(cls, 'code')).toBe(true);
    expect(cls.code).toMatch(/^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$/);
    expect(Object.hasOwn(cls, 'brand')).toBe(true);
    expect(Symbol.keyFor(cls.brand)).toBe(`@toolfence/host-config/${name}`);
    expect(typeof cls.isInstance).toBe('function');
    expect(cls.prototype instanceof HostConfigError || cls === HostConfigError).toBe(true);
  });

  it('gives every exported error class its own code', () => {
    const codes = errorClasses.map(([, cls]) => cls.code);
    expect(new Set(codes).size).toBe(codes.length);
  });

  it('recognises instances across bundles by brand, not by prototype', () => {
    const error = new HostConfigError('something failed', { details: { step: 1 } });
    expect(HostConfigError.isInstance(error)).toBe(true);
    expect(error.code).toBe('HOST_CONFIG_ERROR');
    expect(error.name).toBe('HostConfigError');
    expect(error.details).toEqual({ step: 1 });
    expect(Object.isFrozen(error.details)).toBe(true);
    const foreign = Object.create(null) as Record<symbol, unknown>;
    foreign[Symbol.for('@toolfence/host-config/HostConfigError')] = true;
    expect(HostConfigError.isInstance(foreign)).toBe(true);
    expect(HostConfigError.isInstance(new Error('plain'))).toBe(false);
    expect(HostConfigError.isInstance(null)).toBe(false);
  });

  it('keeps the cause without copying it into the message', () => {
    const cause = new Error('secret-token-123');
    const error = new HostConfigError('safe message', { cause });
    expect(error.cause).toBe(cause);
    expect(error.message).not.toContain('secret');
  });
});
