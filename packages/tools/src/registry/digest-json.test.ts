import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { JsonValue } from './tool.js';
import { digestJson } from './tool-registry.js';

/** The canonical JSON as specified: keys sorted by UTF-16 code units at every level. */
function referenceCanonical(value: JsonValue): string {
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(referenceCanonical).join(',')}]`;
  return `{${Object.keys(value)
    .sort()
    .map(
      (key) =>
        `${JSON.stringify(key)}:${referenceCanonical((value as Record<string, JsonValue>)[key] as JsonValue)}`,
    )
    .join(',')}}`;
}

/** One string per UTF-16 code unit (the escaping JSON.stringify does must be kept exactly). */
const everyUnit = Array.from({ length: 0x10000 }, (_, unit) => `a${String.fromCharCode(unit)}b`);

const sha256 = (text: string): string =>
  `sha256:${createHash('sha256').update(text).digest('hex')}`;

describe('digestJson', () => {
  it.each<[string, JsonValue]>([
    ['an empty object', {}],
    ['an empty array', []],
    ['primitives', { s: 'text', n: -1.5e-7, z: -0, t: true, f: false, nul: null }],
    ['keys out of order at every level', { b: { d: 1, c: [{ z: 1, a: 2 }] }, a: 0 }],
    ['integer-like keys', { 10: 'ten', 9: 'nine', a: 'a', 1: 'one' }],
    ['keys needing escapes', { 'q"uote': 1, 'back\\slash': 2, 'new\nline': 3, '\u0000': 4 }],
    ['non-ASCII keys and values', { é: 'ü', '\u{1F600}': '\uD83D', Z: 'z', a: '' }],
    ['nested arrays', { m: [[1, [2, [3, []]]], [], ['x', { y: null }]] }],
    ['a top-level string', 'just text'],
    [
      'every UTF-16 code unit, one string each',
      Object.fromEntries(everyUnit.map((text, index) => [text, [index, text]])),
    ],
  ])('hashes the sorted-key canonical JSON of %s', (_label, value) => {
    expect(digestJson(value)).toBe(sha256(referenceCanonical(value)));
  });

  it('pins the digest format and does not depend on key order', () => {
    expect(digestJson({ b: 1, a: [true, null, 'é'] })).toBe(sha256('{"a":[true,null,"é"],"b":1}'));
    expect(digestJson({ a: { y: 2, x: 1 }, b: [1] })).toBe(
      digestJson({ b: [1], a: { x: 1, y: 2 } }),
    );
  });
});
