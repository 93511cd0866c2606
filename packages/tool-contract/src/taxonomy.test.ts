import { describe, expect, it } from 'vitest';
import { ContractDefinitionError } from './contract-definition-error.js';
import {
  CONTENT_TRUST_LEVELS,
  type ContentTrustLevel,
  compareContentTrust,
  compareRisk,
  isContentTrustLevel,
  isRiskLevel,
  maxContentTrust,
  maxRisk,
  RISK_LEVELS,
  type RiskLevel,
} from './taxonomy.js';

describe('risk taxonomy', () => {
  it('lists the six risk levels in ascending order', () => {
    expect(RISK_LEVELS).toEqual([
      'read-only',
      'low-risk-write',
      'high-risk-write',
      'external-publication',
      'paid-operation',
      'destructive',
    ]);
  });

  it('orders every pair of risk levels by their position', () => {
    for (const [i, a] of RISK_LEVELS.entries()) {
      for (const [j, b] of RISK_LEVELS.entries()) {
        expect(Math.sign(compareRisk(a, b))).toBe(Math.sign(i - j));
      }
    }
  });

  it('sorts risk levels when used as a comparator', () => {
    const shuffled: RiskLevel[] = ['destructive', 'read-only', 'paid-operation', 'low-risk-write'];
    expect(shuffled.sort(compareRisk)).toEqual([
      'read-only',
      'low-risk-write',
      'paid-operation',
      'destructive',
    ]);
  });

  it('returns the riskier of two levels', () => {
    expect(maxRisk('read-only', 'destructive')).toBe('destructive');
    expect(maxRisk('paid-operation', 'low-risk-write')).toBe('paid-operation');
  });

  it.each([
    ['a misspelt level', 'readonly'],
    ['an upper-case level', 'READ-ONLY'],
    ['a number', 1],
    ['undefined', undefined],
  ])('rejects %s with CONTRACT_UNKNOWN_RISK', (_name, value) => {
    const call = (): number => compareRisk(value as RiskLevel, 'read-only');
    expect(call).toThrow(ContractDefinitionError);
    expect(call).toThrow(expect.objectContaining({ code: 'CONTRACT_UNKNOWN_RISK' }));
    expect(isRiskLevel(value)).toBe(false);
  });

  it('recognises every risk level', () => {
    for (const level of RISK_LEVELS) expect(isRiskLevel(level)).toBe(true);
  });
});

describe('content-trust taxonomy', () => {
  it('orders content trust by the caution it demands', () => {
    expect(CONTENT_TRUST_LEVELS).toEqual([
      'trusted',
      'untrusted',
      'sensitive',
      'prompt-injection-prone',
    ]);
    const shuffled: ContentTrustLevel[] = [
      'prompt-injection-prone',
      'trusted',
      'sensitive',
      'untrusted',
    ];
    expect(shuffled.sort(compareContentTrust)).toEqual(CONTENT_TRUST_LEVELS);
  });

  it('is a total order: every pair compares consistently', () => {
    for (const [i, a] of CONTENT_TRUST_LEVELS.entries()) {
      for (const [j, b] of CONTENT_TRUST_LEVELS.entries()) {
        expect(Math.sign(compareContentTrust(a, b))).toBe(Math.sign(i - j));
        expect(compareContentTrust(a, b) + compareContentTrust(b, a)).toBe(0);
      }
    }
  });

  it('returns the more cautious of two levels', () => {
    expect(maxContentTrust('trusted', 'sensitive')).toBe('sensitive');
    expect(maxContentTrust('prompt-injection-prone', 'untrusted')).toBe('prompt-injection-prone');
  });

  it('rejects an unknown content-trust level with CONTRACT_UNKNOWN_CONTENT_TRUST', () => {
    expect(() => compareContentTrust('hostile' as ContentTrustLevel, 'trusted')).toThrow(
      expect.objectContaining({ code: 'CONTRACT_UNKNOWN_CONTENT_TRUST' }),
    );
    expect(isContentTrustLevel('hostile')).toBe(false);
    for (const level of CONTENT_TRUST_LEVELS) expect(isContentTrustLevel(level)).toBe(true);
  });
});
