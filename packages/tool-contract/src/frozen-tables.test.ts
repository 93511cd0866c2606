import { describe, expect, it } from 'vitest';
import { ContractDefinitionError } from './contract-definition-error.js';
import { defineContract } from './define-contract.js';
import { CONTENT_TRUST_LEVELS, RISK_LEVELS } from './taxonomy.js';

// Every exported table of this package is checked for freezing by mcp-bridge's
// test/frozen-tables.test.ts (with the tools and mcp-bridge ones); here, what a change would do.
describe('frozen taxonomy tables', () => {
  it.each([
    ['RISK_LEVELS.push', () => (RISK_LEVELS as unknown as string[]).push('x')],
    ['CONTENT_TRUST_LEVELS.push', () => (CONTENT_TRUST_LEVELS as unknown as string[]).push('x')],
    ['RISK_LEVELS[0] =', () => ((RISK_LEVELS as unknown as string[])[0] = 'x')],
    ['RISK_LEVELS.length =', () => ((RISK_LEVELS as unknown as string[]).length = 0)],
  ])('%s throws, and defineContract still refuses the level', (_label, mutate) => {
    expect(mutate).toThrow(TypeError);
    expect(() => defineContract({ risk: 'x' as never })).toThrow(ContractDefinitionError);
    expect(() => defineContract({ risk: 'read-only', contentTrust: 'x' as never })).toThrow(
      ContractDefinitionError,
    );
    expect(RISK_LEVELS).toHaveLength(6);
    expect(CONTENT_TRUST_LEVELS).toHaveLength(4);
  });
});
