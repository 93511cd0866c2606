import { defineContract } from '@toolfence/tool-contract';
import { describe, expect, it } from 'vitest';
import { ConfigurationError } from './configuration-error.js';
import { contractOf } from './contract-of.js';
import { checkEffectDescriptor, resolveEffect } from './effect.js';
import type { ToolSpec } from './tool.js';

const base = { name: 't', description: '', inputSchema: { type: 'object' } } as const;
const readOnly = defineContract({
  risk: 'read-only',
  contentTrust: 'trusted',
  idempotent: true,
  version: '1.0.0',
});
const writes = defineContract({
  risk: 'low-risk-write',
  contentTrust: 'trusted',
  idempotent: false,
  version: '1.0.0',
});

describe('resolveEffect', () => {
  const http: ToolSpec = {
    ...base,
    effect: { default: 'unknown', argument: 'method', byValue: { GET: 'read', post: 'write' } },
  };
  it.each([
    ['mapped, case-insensitive', { method: 'get' }, 'read'],
    ['mapped key in lower case', { method: 'POST' }, 'write'],
    ['unmapped value', { method: 'DELETE' }, 'unknown'],
    ['non-string value', { method: 1 }, 'unknown'],
    ['missing argument', {}, 'unknown'],
  ] as const)('chooses by argument: %s', (_label, args, effect) => {
    expect(resolveEffect(http, args)).toBe(effect);
  });

  it('derives the effect from a contract without a descriptor', () => {
    expect(resolveEffect({ ...base, contract: readOnly }, {})).toBe('read');
    expect(resolveEffect({ ...base, contract: writes }, {})).toBe('write');
    expect(resolveEffect(base, {})).toBe('unknown');
  });

  it('reads a contract declared in annotations', () => {
    const spec: ToolSpec = {
      ...base,
      annotations: { risk_level: 'read-only', content_trust: 'trusted' },
    };
    expect(contractOf(spec)?.risk).toBe('read-only');
    expect(resolveEffect(spec, {}, contractOf(spec))).toBe('read');
    expect(contractOf({ ...base, annotations: { readOnlyHint: true } })).toBeUndefined();
  });

  it.each([
    ['bad default', { default: 'delete' }],
    ['bad mapped value', { default: 'read', argument: 'm', byValue: { x: 'nope' } }],
    ['non-string argument', { default: 'read', argument: 3 }],
    ['an unknown key', { default: 'read', byvalue: {} }],
    ['an unknown short form', 'delete'],
    ['a number', 3],
  ])('rejects a descriptor with %s', (_label, descriptor) => {
    expect(() => checkEffectDescriptor(descriptor as never, 't')).toThrow(ConfigurationError);
  });

  it.each(['read', 'compute', 'write', 'unknown'] as const)(
    'accepts the short form effect: %j',
    (effect) => {
      expect(() => checkEffectDescriptor(effect, 't')).not.toThrow();
      expect(resolveEffect({ ...base, effect, contract: writes }, { method: 'GET' })).toBe(effect);
    },
  );

  it.each([
    [
      'a string that is no effect',
      'delete',
      'Tool "t": effect must be one of read, compute, write, unknown, or { default, argument, byValue }',
    ],
    [
      'a number',
      3,
      'Tool "t": effect must be one of read, compute, write, unknown, or an object { default, argument?, byValue? }',
    ],
    [
      'a misspelled key',
      { default: 'read', byvalue: {} },
      'Tool "t": effect has an unknown key "byvalue" (accepted: default, argument, byValue)',
    ],
  ])('names what is accepted when %s is given', (_label, descriptor, message) => {
    expect(() => checkEffectDescriptor(descriptor as never, 't')).toThrow(message);
  });
});
