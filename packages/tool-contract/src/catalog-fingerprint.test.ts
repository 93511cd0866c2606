import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { catalogFingerprint } from './catalog-fingerprint.js';
import type { ToolListEntry } from './read-contract.js';

const a: ToolListEntry = {
  name: 'a',
  description: 'A',
  annotations: { risk_level: 'read-only', readOnlyHint: true },
};
const b = { name: 'b', inputSchema: { type: 'object', properties: { x: { type: 'string' } } } };

describe('catalogFingerprint', () => {
  it('is a sha256 hex digest', () => {
    expect(catalogFingerprint([a, b])).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it('is the same across calls, tool order, key order and the { tools } wrapper', () => {
    const reordered = {
      annotations: { readOnlyHint: true, risk_level: 'read-only' },
      description: 'A',
      name: 'a',
    };
    const first = catalogFingerprint([a, b]);
    expect(catalogFingerprint([a, b])).toBe(first);
    expect(catalogFingerprint([b, reordered])).toBe(first);
    expect(catalogFingerprint({ tools: [b, a] })).toBe(first);
  });

  it('hashes the documented canonical form: sorted keys, sorted tools, no spaces', () => {
    const canonical = '[{"_meta":[2,1],"name":"b"},{"description":"A","name":"a"}]';
    const expected = `sha256:${createHash('sha256').update(canonical).digest('hex')}`;
    expect(
      catalogFingerprint([
        { _meta: [2, 1], name: 'b' },
        { name: 'a', description: 'A' },
      ]),
    ).toBe(expected);
    // Pinned literally so a change of the canonical form cannot go unnoticed.
    expect(catalogFingerprint([{ name: 'x' }])).toBe(
      'sha256:d48733729423082abca843cafab298d4ee35783851d51b30d4c55c9516116b61',
    );
  });

  it('ignores undefined members as JSON does', () => {
    expect(catalogFingerprint([{ name: 'x', description: undefined }])).toBe(
      catalogFingerprint([{ name: 'x' }]),
    );
  });

  it.each([
    ['a renamed tool', [{ ...a, name: 'a2' }, b]],
    ['a changed description', [{ ...a, description: 'B' }, b]],
    ['a changed annotation', [{ ...a, annotations: { risk_level: 'destructive' } }, b]],
    ['a changed schema', [a, { ...b, inputSchema: { type: 'object' } }]],
    ['a removed tool', [a]],
    ['an added tool', [a, b, { name: 'c' }]],
    ['reordered array items', [a, { ...b, inputSchema: { type: 'object', required: ['y', 'x'] } }]],
  ])('changes with %s', (_name, changed) => {
    expect(catalogFingerprint(changed as ToolListEntry[])).not.toBe(catalogFingerprint([a, b]));
  });

  it('distinguishes array order inside a tool', () => {
    const one = [{ name: 'x', _meta: { list: [1, 2] } }];
    const two = [{ name: 'x', _meta: { list: [2, 1] } }];
    expect(catalogFingerprint(one)).not.toBe(catalogFingerprint(two));
  });

  const cyclic: Record<string, unknown> = { name: 'x' };
  cyclic.self = cyclic;
  let deep: Record<string, unknown> = { name: 'deep' };
  for (let index = 0; index < 100; index += 1) deep = { name: 'deep', inner: deep };
  it.each([
    ['a cycle', [cyclic]],
    ['a function', [{ name: 'x', run: () => 1 }]],
    ['a bigint', [{ name: 'x', size: 1n }]],
    ['NaN', [{ name: 'x', size: Number.NaN }]],
    ['Infinity', [{ name: 'x', size: Number.POSITIVE_INFINITY }]],
    ['a Date', [{ name: 'x', at: new Date(0) }]],
    ['a Map', [{ name: 'x', map: new Map() }]],
    ['an undefined tool', [undefined]],
    ['deep nesting', [deep]],
    ['not an array', 'tools'],
  ])('refuses %s', (_name, catalog) => {
    expect(() => catalogFingerprint(catalog as never)).toThrow(
      expect.objectContaining({ code: 'CONTRACT_INVALID_CATALOG' }),
    );
  });

  it('accepts a shared (non-cyclic) object used twice', () => {
    const shared = { type: 'string' };
    expect(() =>
      catalogFingerprint([{ name: 'x', inputSchema: { properties: { a: shared, b: shared } } }]),
    ).not.toThrow();
  });
});
