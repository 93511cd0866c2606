import { describe, expect, it } from 'vitest';
import { canonicalJson, digestOf } from './canonical-json.js';

describe('canonicalJson', () => {
  it('sorts keys at every depth and leaves out undefined members', () => {
    expect(canonicalJson({ b: 1, a: { d: [3, { z: null, y: 'x' }], c: undefined } })).toBe(
      '{"a":{"d":[3,{"y":"x","z":null}]},"b":1}',
    );
    expect(canonicalJson([undefined, 'a'])).toBe('[null,"a"]');
    expect(canonicalJson({})).toBe('{}');
    expect(canonicalJson([])).toBe('[]');
  });

  it('gives one digest for the same JSON in any key order, and another for any change', () => {
    const digest = digestOf({ id: 'n1', options: { dry: true, at: 2 } });
    expect(digestOf({ options: { at: 2, dry: true }, id: 'n1' })).toBe(digest);
    expect(digest).toMatch(/^sha256:[0-9a-f]{64}$/);
    for (const changed of [
      { id: 'n2', options: { dry: true, at: 2 } },
      { id: 'n1', options: { dry: true, at: '2' } },
      { id: 'n1', options: { dry: true, at: 2, extra: null } },
      { id: 'n1', options: [true, 2] },
    ]) {
      expect(digestOf(changed)).not.toBe(digest);
    }
  });
});
