import { describe, expect, it } from 'vitest';
import { defineContract } from './define-contract.js';
import { type ContractOverride, defineOverride, effectiveContract } from './effective-contract.js';
import { heuristicContract } from './heuristic-contract.js';

const declared = defineContract({
  risk: 'low-risk-write',
  contentTrust: 'trusted',
  version: '2.0.0',
});
const heuristic = heuristicContract('delete_thing');

describe('effectiveContract precedence', () => {
  it('uses the declaration over the heuristic, even a more cautious heuristic', () => {
    const result = effectiveContract({ declared, heuristic });
    expect(result).toEqual({ contract: declared, source: 'declared', vetoed: false });
  });

  it('falls back to the heuristic when nothing is declared', () => {
    const result = effectiveContract({ heuristic });
    expect(result.source).toBe('heuristic');
    expect(result.contract).toEqual(heuristic);
  });

  it('lets an override replace the facts it sets and keep the rest', () => {
    const result = effectiveContract({
      declared,
      heuristic,
      override: { risk: 'destructive', reason: 'ticket 42' },
    });
    expect(result.source).toBe('override');
    expect(result.contract).toEqual({ ...declared, risk: 'destructive' });
    expect(result.reason).toBe('ticket 42');
    expect(result.vetoed).toBe(false);
    expect(Object.isFrozen(result.contract)).toBe(true);
  });

  it('lets an override lower a declared fact (the operator decides)', () => {
    const result = effectiveContract({
      declared: defineContract({ risk: 'destructive', contentTrust: 'sensitive' }),
      override: { risk: 'read-only', contentTrust: 'trusted', idempotent: true },
    });
    expect(result.contract.risk).toBe('read-only');
    expect(result.contract.contentTrust).toBe('trusted');
    expect(result.contract.idempotent).toBe(true);
  });

  it('lets an override veto a tool', () => {
    const result = effectiveContract({ declared, override: { veto: true, reason: 'unreviewed' } });
    expect(result.vetoed).toBe(true);
    expect(result.source).toBe('override');
    expect(result.reason).toBe('unreviewed');
  });

  it('treats an override without facts as no override', () => {
    expect(effectiveContract({ declared, override: { reason: 'note' } }).source).toBe('declared');
    expect(effectiveContract({ heuristic, override: { veto: false } }).source).toBe('heuristic');
  });

  it('needs a declared or heuristic contract', () => {
    expect(() => effectiveContract({ override: { risk: 'read-only' } })).toThrow(
      expect.objectContaining({ code: 'CONTRACT_MISSING_BASIS' }),
    );
  });
});

describe('defineOverride', () => {
  it.each([
    ['null', null, 'CONTRACT_INVALID_OVERRIDE'],
    ['an array', [], 'CONTRACT_INVALID_OVERRIDE'],
    ['an unknown field', { vetoed: true }, 'CONTRACT_INVALID_OVERRIDE'],
    ['a string veto', { veto: 'yes' }, 'CONTRACT_INVALID_OVERRIDE'],
    ['a numeric reason', { reason: 1 }, 'CONTRACT_INVALID_OVERRIDE'],
    ['an overlong reason', { reason: 'x'.repeat(1025) }, 'CONTRACT_INVALID_OVERRIDE'],
    ['an unknown risk', { risk: 'safe' }, 'CONTRACT_UNKNOWN_RISK'],
    ['an unknown trust', { contentTrust: 'fine' }, 'CONTRACT_UNKNOWN_CONTENT_TRUST'],
    ['a string idempotent', { idempotent: 'no' }, 'CONTRACT_INVALID_IDEMPOTENT'],
  ])('rejects %s', (_name, override, code) => {
    expect(() => defineOverride(override as unknown as ContractOverride)).toThrow(
      expect.objectContaining({ code }),
    );
    expect(() =>
      effectiveContract({ declared, override: override as unknown as ContractOverride }),
    ).toThrow(expect.objectContaining({ code }));
  });

  it.each([
    ['vetoed', 'veto'],
    ['Reason', 'reason'],
    ['content_trust', 'contentTrust'],
    ['rsik', 'risk'],
  ])('names the unknown field %s and suggests %s', (typo, near) => {
    const override = { [typo]: true } as unknown as ContractOverride;
    expect(() => defineOverride(override)).toThrow(
      `found unknown field "${typo}" (did you mean "${near}"?).`,
    );
    expect(() => defineOverride(override)).toThrow(
      expect.objectContaining({ field: typo, details: { unknownFields: [typo] } }),
    );
  });

  it('names an unknown override field without a suggestion when none is close', () => {
    expect(() => defineOverride({ approver: 'ops' } as unknown as ContractOverride)).toThrow(
      /found unknown field "approver"\.$/,
    );
  });

  it('accepts a reason of exactly 1024 characters and freezes the override', () => {
    const override = defineOverride({ reason: 'x'.repeat(1024), veto: true });
    expect(Object.isFrozen(override)).toBe(true);
  });
});
