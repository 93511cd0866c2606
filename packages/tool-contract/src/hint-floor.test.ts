import { describe, expect, it } from 'vitest';
import { effectiveContract } from './effective-contract.js';
import { heuristicContract } from './heuristic-contract.js';
import { hintRiskFloor, withHintFloor } from './hint-floor.js';
import { readContract } from './read-contract.js';
import type { RiskLevel } from './taxonomy.js';

describe('hintRiskFloor', () => {
  it.each([
    ['destructiveHint true', { destructiveHint: true }, 'destructive'],
    [
      'destructiveHint true, readOnlyHint false',
      { destructiveHint: true, readOnlyHint: false },
      'destructive',
    ],
    ['readOnlyHint false', { readOnlyHint: false }, 'low-risk-write'],
    [
      'readOnlyHint false, destructiveHint false',
      { readOnlyHint: false, destructiveHint: false },
      'low-risk-write',
    ],
    ['readOnlyHint true (never lowers)', { readOnlyHint: true }, undefined],
    // MCP gives destructiveHint meaning only when the tool is not read-only.
    [
      'readOnlyHint true beside destructiveHint true',
      { readOnlyHint: true, destructiveHint: true },
      undefined,
    ],
    ['destructiveHint false', { destructiveHint: false }, undefined],
    ['a string destructiveHint', { destructiveHint: 'true' }, undefined],
    ['a string readOnlyHint', { readOnlyHint: 'false' }, undefined],
    ['no hints', { title: 'Drop' }, undefined],
    ['not an object', 'destructive', undefined],
    ['an inherited hint', Object.create({ destructiveHint: true }), undefined],
  ] as const)('%s', (_label, annotations, floor) => {
    expect(hintRiskFloor(annotations)).toBe(floor);
  });
});

// The hint floor over the heuristic, as a policy sees an undeclared tool. Names are from real
// servers' listings (mongodb-mcp-server 3.0.4, mcp-server-kubernetes 4.1.7, chrome-devtools-mcp
// 1.11.0, notion-mcp-server 2.5.2, desktop-commander 0.2.52).
const FLOOR_TABLE: ReadonlyArray<
  readonly [string, Readonly<Record<string, unknown>>, RiskLevel, RiskLevel]
> = [
  ['drop-database', { destructiveHint: true }, 'destructive', 'destructive'],
  ['kubectl_delete', { destructiveHint: true, readOnlyHint: false }, 'destructive', 'destructive'],
  ['start_process', { destructiveHint: true }, 'high-risk-write', 'destructive'],
  ['API-query-data-source', { destructiveHint: true }, 'read-only', 'destructive'],
  ['get_network_request', { readOnlyHint: false }, 'read-only', 'low-risk-write'],
  ['stop_search', { readOnlyHint: false }, 'read-only', 'low-risk-write'],
  ['run_query', { readOnlyHint: false }, 'high-risk-write', 'high-risk-write'],
  ['frobnicate', { readOnlyHint: true }, 'high-risk-write', 'high-risk-write'],
  ['list_pages', { readOnlyHint: true }, 'read-only', 'read-only'],
];

describe('the hint floor for undeclared tools', () => {
  it.each(FLOOR_TABLE)(
    '%s with %j: heuristic %s, effective %s',
    (name, annotations, guessed, effective) => {
      const heuristic = heuristicContract(name);
      expect(heuristic.risk).toBe(guessed);
      const result = effectiveContract({ heuristic, hints: annotations });
      expect(result.source).toBe('heuristic');
      expect(result.contract.risk).toBe(effective);
      expect(result.contract.idempotent).toBe(effective === 'read-only');
      // readContract applies the same floor to a tool without a declaration.
      expect(readContract({ name, annotations }).contract.risk).toBe(effective);
      expect(withHintFloor(heuristic, annotations).risk).toBe(effective);
    },
  );

  it('never changes a declaration (readContract already checks its hints)', () => {
    const declared = Object.freeze({ ...heuristicContract('get_x'), version: '1.0.0' });
    const result = effectiveContract({ declared, hints: { destructiveHint: true } });
    expect(result).toMatchObject({ source: 'declared', contract: { risk: 'read-only' } });
  });

  it('lets an override win over the floor', () => {
    const result = effectiveContract({
      heuristic: heuristicContract('get_x'),
      hints: { destructiveHint: true },
      override: { risk: 'low-risk-write' },
    });
    expect(result).toMatchObject({ source: 'override', contract: { risk: 'low-risk-write' } });
  });

  it('returns the contract itself when the hints raise nothing', () => {
    const heuristic = heuristicContract('delete_x');
    expect(withHintFloor(heuristic, { readOnlyHint: false })).toBe(heuristic);
  });
});
