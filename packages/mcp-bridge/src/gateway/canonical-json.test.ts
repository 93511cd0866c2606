import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { canonicalJson, digestOf, sha256Hex } from './canonical-json.js';

/** The plain definition the fast one must match byte for byte (the one digests were made with). */
function reference(value: unknown): string {
  if (value === undefined) return 'null';
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${Array.from(value, (item) => reference(item)).join(',')}]`;
  const record = value as Record<string, unknown>;
  return `{${Object.keys(record)
    .sort()
    .filter((key) => record[key] !== undefined)
    .map((key) => `${JSON.stringify(key)}:${reference(record[key])}`)
    .join(',')}}`;
}

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

  // Keys already in order (no sort), out of order, integer-like keys (which Object.keys lists
  // first, in numeric order, not in sorted order), a first member left out, code units above the
  // BMP, and values JSON cannot hold.
  it.each<[string, unknown]>([
    ['sorted keys', { a: 1, b: { c: 2, d: [3] } }],
    ['reversed keys', { z: 1, y: 2, x: { w: 3, v: 4 } }],
    ['integer-like keys', { b: 1, 10: 2, 9: 3, '01': 4, a: 5 }],
    ['first member undefined', { a: undefined, b: 1 }],
    ['only undefined members', { a: undefined, b: undefined }],
    ['last member undefined', { a: 1, b: undefined }],
    ['keys by code unit', { '\u{1F600}': 1, '\uFFFF': 2, é: 3, E: 4, e: 5 }],
    ['escapes in keys and strings', { 'a"b': 'c\nd', '\u2028': '\uD800', '': '' }],
    [
      'every character class JSON.stringify treats apart',
      {
        q: 'a"b',
        b: 'a\\b',
        c: '\u0000\u0008\t\n\u001f',
        s: ' \u007f\u2028\u2029',
        l: 'x\uDC00',
        h: '\uD83D',
        p: '\u{1F600}',
        u: 'plain ascii and é',
        '\u001f': 'key needs escape',
        '"': 'quote key',
      },
    ],
    ['arrays with holes', [undefined, new Array(2), null, [], [[]], {}]],
    ['functions, symbols and non-finite numbers', [() => 1, Symbol('s'), Number.NaN, -0, 1e21]],
    ['members that are functions', { f: () => 1, s: Symbol('s'), n: Number.POSITIVE_INFINITY }],
    ['a date and a boxed string', { d: new Date(0), s: Object('ab') }],
    [
      'nested results',
      { content: [{ type: 'text', text: 'x' }], metadata: { tool: 't', blockCount: 1 } },
    ],
    ['primitives', 'text'],
    ['null', null],
    ['undefined', undefined],
  ])('matches the plain definition: %s', (_name, value) => {
    expect(canonicalJson(value)).toBe(reference(value));
  });

  // Keys are sorted by insertion up to 32 of them and by `sort` beyond: every size on both sides
  // of that line, in many orders (a fixed pseudo-random shuffle), with keys that compare by code
  // unit apart from by locale or by number (capitals, accents, astral characters, digits).
  it('sorts any order of up to 40 keys exactly as the plain definition does', () => {
    const pool = ['a', 'B', 'b', 'é', 'e', 'E', '\u{1F600}', '\uFFFF', '10', '9', '01', '', 'aa'];
    let seed = 7;
    const next = (bound: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed % bound;
    };
    for (let size = 0; size <= 40; size += 1) {
      const keys = Array.from(
        { length: size },
        (_, index) => `${pool[index % pool.length]}${index}`,
      );
      for (let round = 0; round < 20; round += 1) {
        for (let index = keys.length - 1; index > 0; index -= 1) {
          const other = next(index + 1);
          [keys[index], keys[other]] = [keys[other] as string, keys[index] as string];
        }
        const value = Object.fromEntries(
          keys.map((key, index) => [key, index % 3 ? index : { key }]),
        );
        expect(canonicalJson(value)).toBe(reference(value));
      }
    }
  });

  it('digests with one-shot SHA-256 exactly as a hash object does', () => {
    for (const text of ['', 'a', '{"a":1}', 'é\u{1F600}', 'x'.repeat(100_000)]) {
      expect(sha256Hex(text)).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
    }
    const value = { b: [1, { d: 'é' }], a: null };
    expect(digestOf(value)).toBe(
      `sha256:${createHash('sha256').update(reference(value), 'utf8').digest('hex')}`,
    );
  });
});
