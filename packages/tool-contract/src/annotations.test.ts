import { describe, expect, it } from 'vitest';
import {
  CONTRACT_META_KEY,
  getContract,
  openWorldFor,
  toolAnnotations,
  withContract,
  withContractAnnotations,
} from './annotations.js';
import { ContractDefinitionError } from './contract-definition-error.js';
import { defineContract } from './define-contract.js';
import {
  CONTENT_TRUST_LEVELS,
  type ContentTrustLevel,
  RISK_LEVELS,
  type RiskLevel,
  type ToolContract,
} from './taxonomy.js';

describe('toolAnnotations', () => {
  it('publishes the original package keys and the four standard hints', () => {
    const contract = defineContract({
      risk: 'destructive',
      contentTrust: 'sensitive',
      idempotent: true,
      version: '3.2.1',
      deprecatedSince: '2026-01-01',
      sunset: '2026-07-01',
      replacement: 'remove_v2',
      aliases: ['rm'],
    });
    expect(toolAnnotations(contract)).toEqual({
      risk_level: 'destructive',
      content_trust_risk: 'sensitive',
      version: '3.2.1',
      deprecated_since: '2026-01-01',
      sunset: '2026-07-01',
      replacement: 'remove_v2',
      aliases: ['rm'],
      readOnlyHint: false,
      destructiveHint: true,
      idempotentHint: true,
      openWorldHint: false,
    });
  });

  it('leaves out lifecycle keys that are not set and aliases that are empty', () => {
    const annotations = toolAnnotations(defineContract({ risk: 'read-only' }));
    expect(Object.keys(annotations).sort()).toEqual(
      [
        'content_trust_risk',
        'destructiveHint',
        'idempotentHint',
        'openWorldHint',
        'readOnlyHint',
        'risk_level',
        'version',
      ].sort(),
    );
    expect(Object.isFrozen(annotations)).toBe(true);
  });

  const hintRows: Array<[RiskLevel, boolean, boolean]> = [
    ['read-only', true, false],
    ['low-risk-write', false, false],
    ['high-risk-write', false, false],
    ['external-publication', false, false],
    ['paid-operation', false, false],
    ['destructive', false, true],
  ];
  it.each(hintRows)(
    'derives readOnlyHint/destructiveHint for %s',
    (risk, readOnly, destructive) => {
      const annotations = toolAnnotations(defineContract({ risk }));
      expect(annotations.readOnlyHint).toBe(readOnly);
      expect(annotations.destructiveHint).toBe(destructive);
      expect(annotations.risk_level).toBe(risk);
    },
  );

  it.each([true, false])('sets idempotentHint to idempotent (%s)', (idempotent) => {
    expect(
      toolAnnotations(defineContract({ risk: 'low-risk-write', idempotent })).idempotentHint,
    ).toBe(idempotent);
  });

  const openWorld = (risk: RiskLevel, contentTrust: ContentTrustLevel): boolean =>
    risk === 'external-publication' ||
    risk === 'paid-operation' ||
    contentTrust === 'untrusted' ||
    contentTrust === 'prompt-injection-prone';
  const pairs = RISK_LEVELS.flatMap((risk) =>
    CONTENT_TRUST_LEVELS.map((contentTrust) => [risk, contentTrust] as const),
  );
  it.each(pairs)('derives openWorldHint for %s / %s', (risk, contentTrust) => {
    const annotations = toolAnnotations(defineContract({ risk, contentTrust }));
    expect(annotations.openWorldHint).toBe(openWorld(risk, contentTrust));
    expect(openWorldFor({ risk, contentTrust })).toBe(openWorld(risk, contentTrust));
    expect(annotations.content_trust_risk).toBe(contentTrust);
  });

  it('returns {} for a function without a contract', () => {
    const annotations = toolAnnotations(() => 'plain');
    expect(annotations).toEqual({});
    expect(Object.isFrozen(annotations)).toBe(true);
  });

  it('rejects a value that is neither a function nor a valid contract', () => {
    expect(() => toolAnnotations({ risk: 'nope' } as unknown as ToolContract)).toThrow(
      expect.objectContaining({ code: 'CONTRACT_UNKNOWN_RISK' }),
    );
    expect(() => toolAnnotations(null as unknown as ToolContract)).toThrow(
      expect.objectContaining({ code: 'CONTRACT_INVALID_INPUT' }),
    );
  });
});

describe('withContract and getContract', () => {
  const contract = defineContract({ risk: 'low-risk-write', idempotent: true });

  it('returns the same function with the contract attached', () => {
    const handler = async (value: number): Promise<number> => value + 1;
    const attached = withContract(contract, handler);
    expect(attached).toBe(handler);
    expect(getContract(attached)).toBe(contract);
    expect(toolAnnotations(attached)).toEqual(toolAnnotations(contract));
  });

  it('does not add an enumerable or writable property', () => {
    const handler = withContract(contract, () => 1);
    expect(Object.keys(handler)).toEqual([]);
    const symbol = Symbol.for('@toolfence/tool-contract/contract');
    const descriptor = Object.getOwnPropertyDescriptor(handler, symbol);
    expect(descriptor?.writable).toBe(false);
    expect(descriptor?.configurable).toBe(false);
  });

  it('reads a contract attached by another copy of the package (same registered symbol)', () => {
    const handler = (): number => 1;
    Object.defineProperty(handler, Symbol.for('@toolfence/tool-contract/contract'), {
      value: { ...contract, aliases: [...contract.aliases] },
    });
    expect(getContract(handler)).toEqual(contract);
  });

  it('rejects an invalid contract attached by hand', () => {
    const handler = (): number => 1;
    Object.defineProperty(handler, Symbol.for('@toolfence/tool-contract/contract'), {
      value: { risk: 'whatever' },
    });
    expect(() => getContract(handler)).toThrow(ContractDefinitionError);
  });

  it('returns undefined for an undeclared function or a non-function', () => {
    expect(getContract(() => 1)).toBeUndefined();
    expect(getContract({})).toBeUndefined();
    expect(getContract(undefined)).toBeUndefined();
  });

  it('accepts the same contract twice but refuses a different one', () => {
    const handler = withContract(contract, () => 1);
    expect(withContract(contract, handler)).toBe(handler);
    expect(() => withContract(defineContract({ risk: 'destructive' }), handler)).toThrow(
      expect.objectContaining({ code: 'CONTRACT_ALREADY_ATTACHED' }),
    );
    expect(getContract(handler)).toBe(contract);
  });

  it.each([
    ['a frozen function', Object.freeze(() => 1)],
    ['a string', 'handler'],
    ['null', null],
  ])('refuses %s as a handler', (_name, handler) => {
    expect(() => withContract(contract, handler as () => number)).toThrow(
      expect.objectContaining({ code: 'CONTRACT_INVALID_HANDLER' }),
    );
  });

  it('validates the contract before attaching', () => {
    const handler = (): number => 1;
    expect(() => withContract({ risk: 'bad' } as unknown as ToolContract, handler)).toThrow(
      expect.objectContaining({ code: 'CONTRACT_UNKNOWN_RISK' }),
    );
    expect(getContract(handler)).toBeUndefined();
  });
});

describe('withContractAnnotations', () => {
  const contract = defineContract({ risk: 'external-publication', aliases: ['post'] });

  it('merges the annotations into annotations and _meta, keeping the config', () => {
    const config = {
      description: 'Posts a message',
      annotations: { title: 'Post', readOnlyHint: true },
      _meta: { other: 1 },
    };
    const merged = withContractAnnotations(contract, config);
    expect(merged.description).toBe('Posts a message');
    expect(merged.annotations).toEqual({ title: 'Post', ...toolAnnotations(contract) });
    expect(merged.annotations.readOnlyHint).toBe(false);
    expect(merged._meta).toEqual({ other: 1, [CONTRACT_META_KEY]: toolAnnotations(contract) });
    expect(config.annotations).toEqual({ title: 'Post', readOnlyHint: true });
    expect(Object.isFrozen(merged.annotations)).toBe(false);
    expect(Object.isFrozen(merged.annotations.aliases)).toBe(false);
  });

  it('leaves an undeclared handler’s config as it was', () => {
    const merged = withContractAnnotations(() => 1, { annotations: { title: 'T' } });
    expect(merged.annotations).toEqual({ title: 'T' });
    expect(merged._meta).toEqual({});
  });

  it('accepts a handler carrying a contract', () => {
    const merged = withContractAnnotations(
      withContract(contract, () => 1),
      {},
    );
    expect(merged._meta[CONTRACT_META_KEY]).toEqual(toolAnnotations(contract));
  });

  it('refuses a config that is not an object', () => {
    expect(() => withContractAnnotations(contract, null as unknown as object)).toThrow(
      expect.objectContaining({ code: 'CONTRACT_INVALID_INPUT' }),
    );
  });
});
