import { describe, expect, it } from 'vitest';
import { ContractDefinitionError } from './contract-definition-error.js';
import { type ContractInput, defineContract } from './define-contract.js';
import { CONTENT_TRUST_LEVELS, RISK_LEVELS } from './taxonomy.js';

function codeOf(input: unknown): string | undefined {
  try {
    defineContract(input as ContractInput);
  } catch (error) {
    if (ContractDefinitionError.isInstance(error)) return error.code;
    throw error;
  }
  return undefined;
}

describe('defineContract', () => {
  it('fills the documented defaults and freezes the result', () => {
    const contract = defineContract({ risk: 'read-only' });
    expect(contract).toEqual({
      risk: 'read-only',
      contentTrust: 'trusted',
      idempotent: false,
      version: '1.0.0',
      aliases: [],
    });
    expect(Object.isFrozen(contract)).toBe(true);
    expect(Object.isFrozen(contract.aliases)).toBe(true);
  });

  it('keeps every declared field', () => {
    const contract = defineContract({
      risk: 'destructive',
      contentTrust: 'sensitive',
      idempotent: true,
      version: '2.1.0-beta.1+build.7',
      deprecatedSince: '2026-01-31',
      sunset: '2026-06-30',
      replacement: 'files.delete_v2',
      aliases: ['rm', 'delete-file'],
    });
    expect(contract).toEqual({
      risk: 'destructive',
      contentTrust: 'sensitive',
      idempotent: true,
      version: '2.1.0-beta.1+build.7',
      deprecatedSince: '2026-01-31',
      sunset: '2026-06-30',
      replacement: 'files.delete_v2',
      aliases: ['rm', 'delete-file'],
    });
  });

  it('copies the aliases so later changes to the input do not leak in', () => {
    const aliases = ['a'];
    const contract = defineContract({ risk: 'read-only', aliases });
    aliases.push('b');
    expect(contract.aliases).toEqual(['a']);
  });

  it.each(RISK_LEVELS)('accepts the risk level %s', (risk) => {
    expect(defineContract({ risk }).risk).toBe(risk);
  });

  it.each(CONTENT_TRUST_LEVELS)('accepts the content-trust level %s', (contentTrust) => {
    expect(defineContract({ risk: 'read-only', contentTrust }).contentTrust).toBe(contentTrust);
  });

  it('returns a contract it made itself unchanged', () => {
    const contract = defineContract({ risk: 'read-only' });
    expect(defineContract(contract as ContractInput)).toBe(contract);
  });

  it('accepts a sunset on the day of the deprecation', () => {
    expect(
      defineContract({ risk: 'read-only', deprecatedSince: '2026-03-01', sunset: '2026-03-01' })
        .sunset,
    ).toBe('2026-03-01');
  });

  it('accepts a leap day', () => {
    expect(defineContract({ risk: 'read-only', sunset: '2028-02-29' }).sunset).toBe('2028-02-29');
  });

  const base = { risk: 'read-only' };
  it.each([
    ['null input', null, 'CONTRACT_INVALID_INPUT'],
    ['an array as input', [], 'CONTRACT_INVALID_INPUT'],
    ['a string as input', 'read-only', 'CONTRACT_INVALID_INPUT'],
    ['a missing risk', {}, 'CONTRACT_UNKNOWN_RISK'],
    ['a misspelt risk', { risk: 'readonly' }, 'CONTRACT_UNKNOWN_RISK'],
    ['an upper-case risk', { risk: 'DESTRUCTIVE' }, 'CONTRACT_UNKNOWN_RISK'],
    ['a risk with a space', { risk: 'read-only ' }, 'CONTRACT_UNKNOWN_RISK'],
    ['a numeric risk', { risk: 0 }, 'CONTRACT_UNKNOWN_RISK'],
    ['an unknown trust', { ...base, contentTrust: 'hostile' }, 'CONTRACT_UNKNOWN_CONTENT_TRUST'],
    ['a null trust', { ...base, contentTrust: null }, 'CONTRACT_UNKNOWN_CONTENT_TRUST'],
    ['a string idempotent', { ...base, idempotent: 'true' }, 'CONTRACT_INVALID_IDEMPOTENT'],
    ['a numeric idempotent', { ...base, idempotent: 1 }, 'CONTRACT_INVALID_IDEMPOTENT'],
    ['a two-part version', { ...base, version: '1.0' }, 'CONTRACT_INVALID_VERSION'],
    ['a v-prefixed version', { ...base, version: 'v1.0.0' }, 'CONTRACT_INVALID_VERSION'],
    ['a leading-zero version', { ...base, version: '01.0.0' }, 'CONTRACT_INVALID_VERSION'],
    ['a numeric version', { ...base, version: 1 }, 'CONTRACT_INVALID_VERSION'],
    ['an empty version', { ...base, version: '' }, 'CONTRACT_INVALID_VERSION'],
    [
      'an overlong version',
      { ...base, version: `1.0.0-${'a'.repeat(300)}` },
      'CONTRACT_INVALID_VERSION',
    ],
    ['a US-style date', { ...base, deprecatedSince: '01/31/2026' }, 'CONTRACT_INVALID_DATE'],
    ['a datetime', { ...base, deprecatedSince: '2026-01-31T00:00:00Z' }, 'CONTRACT_INVALID_DATE'],
    ['February 30th', { ...base, sunset: '2026-02-30' }, 'CONTRACT_INVALID_DATE'],
    ['month 13', { ...base, sunset: '2026-13-01' }, 'CONTRACT_INVALID_DATE'],
    ['a non-leap February 29th', { ...base, sunset: '2027-02-29' }, 'CONTRACT_INVALID_DATE'],
    ['a Date object', { ...base, sunset: new Date() }, 'CONTRACT_INVALID_DATE'],
    [
      'a sunset before the deprecation',
      { ...base, deprecatedSince: '2026-05-01', sunset: '2026-04-30' },
      'CONTRACT_INVALID_LIFECYCLE',
    ],
    ['an empty replacement', { ...base, replacement: '' }, 'CONTRACT_INVALID_REPLACEMENT'],
    ['a replacement with a space', { ...base, replacement: 'a b' }, 'CONTRACT_INVALID_REPLACEMENT'],
    ['aliases as a string', { ...base, aliases: 'rm' }, 'CONTRACT_INVALID_ALIAS'],
    ['an empty alias', { ...base, aliases: [''] }, 'CONTRACT_INVALID_ALIAS'],
    ['an alias with a slash', { ...base, aliases: ['a/b'] }, 'CONTRACT_INVALID_ALIAS'],
    ['an alias with a newline', { ...base, aliases: ['a\nb'] }, 'CONTRACT_INVALID_ALIAS'],
    ['an overlong alias', { ...base, aliases: ['a'.repeat(129)] }, 'CONTRACT_INVALID_ALIAS'],
    ['a numeric alias', { ...base, aliases: [1] }, 'CONTRACT_INVALID_ALIAS'],
    ['a repeated alias', { ...base, aliases: ['rm', 'rm'] }, 'CONTRACT_DUPLICATE_ALIAS'],
    ['a misspelt field', { ...base, contenTrust: 'trusted' }, 'CONTRACT_UNKNOWN_FIELD'],
    ['a snake_case field', { ...base, content_trust: 'trusted' }, 'CONTRACT_UNKNOWN_FIELD'],
  ])('rejects %s', (_name, input, code) => {
    expect(codeOf(input)).toBe(code);
  });

  it('names the field and never echoes the rejected value', () => {
    try {
      defineContract({ risk: 'read-only', version: 'sk-secret-value' as '1.0.0' });
      expect.unreachable();
    } catch (error) {
      expect(ContractDefinitionError.isInstance(error)).toBe(true);
      const failure = error as ContractDefinitionError;
      expect(failure.field).toBe('version');
      expect(failure.details).toEqual({ receivedType: 'string' });
      expect(failure.message).not.toContain('sk-secret-value');
    }
  });

  it.each([
    [
      'a missing letter',
      { contenTrust: 'trusted' },
      '"contenTrust" (did you mean "contentTrust"?)',
    ],
    ['snake_case', { content_trust: 'trusted' }, '"content_trust" (did you mean "contentTrust"?)'],
    ['another case', { Risk2: 'read-only' }, '"Risk2" (did you mean "risk"?)'],
    ['swapped letters', { idmepotent: true }, '"idmepotent" (did you mean "idempotent"?)'],
    [
      'kebab-case',
      { 'deprecated-since': '2026-01-01' },
      '"deprecated-since" (did you mean "deprecatedSince"?)',
    ],
    ['a plural', { alias: ['rm'] }, '"alias" (did you mean "aliases"?)'],
    ['a name far from every field', { owner: 'me' }, 'unknown field "owner".'],
  ])('names an unknown field and the nearest known one: %s', (_name, extra, expected) => {
    try {
      defineContract({ risk: 'read-only', ...extra } as ContractInput);
      expect.unreachable();
    } catch (error) {
      const failure = error as ContractDefinitionError;
      expect(failure.code).toBe('CONTRACT_UNKNOWN_FIELD');
      expect(failure.message).toContain(expected);
      expect(failure.field).toBe(Object.keys(extra)[0]);
      expect(failure.details).toEqual({ unknownFields: Object.keys(extra) });
    }
  });

  it('names every unknown field (five at most) and never a value', () => {
    const input = { risk: 'read-only', a1: 'sk-secret', a2: 1, a3: 1, a4: 1, a5: 1, a6: 1, a7: 1 };
    try {
      defineContract(input as unknown as ContractInput);
      expect.unreachable();
    } catch (error) {
      const failure = error as ContractDefinitionError;
      expect(failure.message).toContain('unknown fields "a1", "a2", "a3", "a4", "a5" and 2 more.');
      expect(failure.message).not.toContain('sk-secret');
      expect(failure.details).toEqual({
        unknownFields: ['a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7'],
      });
    }
  });

  it('cuts an overlong unknown field name to 40 characters', () => {
    const key = `x${'y'.repeat(500)}`;
    expect(() => defineContract({ risk: 'read-only', [key]: 1 } as ContractInput)).toThrow(
      `found unknown field ${JSON.stringify(key.slice(0, 40))}.`,
    );
  });

  it('turns typos into compile errors', () => {
    // @ts-expect-error: not a risk level
    expect(() => defineContract({ risk: 'readonly' })).toThrow();
    // @ts-expect-error: not a semantic version literal
    expect(() => defineContract({ risk: 'read-only', version: 'one' })).toThrow();
    // @ts-expect-error: not a date literal
    expect(() => defineContract({ risk: 'read-only', sunset: 'soon' })).toThrow();
  });
});
