import { describe, expect, it } from 'vitest';
import { ConfigurationError } from './configuration-error.js';
import { type SameJsonValueOptions, sameJsonValue } from './same-json-value.js';

/** `levels` arrays one inside the other around `1`: the innermost array sits at depth `levels - 1`. */
function nested(levels: number): unknown {
  let value: unknown = 1;
  for (let level = 0; level < levels; level++) value = [value];
  return value;
}

/** `[1, <hole>, 3]`: what no `JSON.parse` makes. */
function holey(): unknown[] {
  const array: unknown[] = [1];
  array[2] = 3;
  return array;
}

describe('sameJsonValue', () => {
  it.each([
    ['equal primitives', 'a', 'a', true],
    ['different primitives', 1, '1', false],
    [
      'objects with keys in another order',
      { a: 1, b: [2, { c: null }] },
      { b: [2, { c: null }], a: 1 },
      true,
    ],
    ['an array and an object with index keys', [1], { 0: 1 }, false],
    ['arrays in another order', [1, 2], [2, 1], false],
    ['an extra key set to undefined', { a: 1 }, { a: 1, b: undefined }, false],
    ['an absent key against null', { a: null }, {}, false],
    ['null against an object', null, {}, false],
  ] as const)('compares %s', (_name, left, right, expected) => {
    expect(sameJsonValue(left, right)).toBe(expected);
    expect(sameJsonValue(right, left)).toBe(expected);
  });

  it.each([
    ['an absent key against null', { a: null }, {}, true],
    ['an undefined value against null', { a: undefined }, { a: null }, true],
    ['an absent key against a value', { a: 1 }, {}, false],
    ['a key named like an Object.prototype member against null', { constructor: null }, {}, true],
    ['nested absent keys', { a: [{ b: null }] }, { a: [{}] }, true],
  ] as const)('with absentIsNull compares %s', (_name, left, right, expected) => {
    expect(sameJsonValue(left, right, { absentIsNull: true })).toBe(expected);
    expect(sameJsonValue(right, left, { absentIsNull: true })).toBe(expected);
  });

  it.each([
    ['an object of another prototype', Object.create({ inherited: 1 }) as object, {}],
    ['an object with a symbol key', { [Symbol('s')]: 1 }, {}],
    [
      'an object without a prototype',
      Object.assign(Object.create(null) as object, { a: 1 }),
      { a: 1 },
    ],
    ['an array with a hole', holey(), [1, undefined, 3]],
    [
      'an array subclass',
      Object.setPrototypeOf([1], Object.create(Array.prototype)) as unknown[],
      [1],
    ],
  ] as const)('with plainOnly refuses %s', (_name, left, right) => {
    expect(sameJsonValue(left, right, { plainOnly: true })).toBe(false);
    expect(sameJsonValue(right, left, { plainOnly: true })).toBe(false);
    expect(sameJsonValue(left, right, { plainOnly: true, absentIsNull: true })).toBe(false);
  });

  it('without plainOnly compares any objects by their own enumerable keys', () => {
    const withSymbol = { a: 1, [Symbol('s')]: 2 };
    expect(sameJsonValue(withSymbol, { a: 1 })).toBe(true);
    expect(sameJsonValue(Object.assign(Object.create(null) as object, { a: 1 }), { a: 1 })).toBe(
      true,
    );
  });

  it.each([
    ['the default limit', undefined, 64],
    ['a limit of 32', { maxDepth: 32 }, 32],
    ['a limit of 0', { maxDepth: 0 }, 0],
    ['a limit with plainOnly', { maxDepth: 32, plainOnly: true }, 32],
    ['a limit with absentIsNull', { maxDepth: 5, absentIsNull: true }, 5],
  ] as const)('compares containers at %s and not one level deeper', (_name, options, limit) => {
    // Copies, so that equality is not the same reference.
    expect(sameJsonValue(nested(limit + 1), nested(limit + 1), options)).toBe(true);
    expect(sameJsonValue(nested(limit + 2), nested(limit + 2), options)).toBe(false);
    // The same reference is equal at any depth.
    const deep = nested(limit + 2);
    expect(sameJsonValue(deep, deep, options)).toBe(true);
  });

  it('bounds object nesting as well as arrays', () => {
    const object = (levels: number): unknown => {
      let value: unknown = 'x';
      for (let level = 0; level < levels; level++) value = { key: value };
      return value;
    };
    expect(sameJsonValue(object(65), object(65))).toBe(true);
    expect(sameJsonValue(object(66), object(66))).toBe(false);
  });

  it.each([
    [
      'an unknown key',
      { maxDept: 3 },
      /Unknown sameJsonValue option "maxDept" \(did you mean "maxDepth"\?\)/,
    ],
    ['null', null, /sameJsonValue options must be an object/],
    ['a negative maxDepth', { maxDepth: -1 }, /"maxDepth" must be a whole number/],
    ['a fractional maxDepth', { maxDepth: 1.5 }, /"maxDepth" must be a whole number/],
    [
      'an infinite maxDepth',
      { maxDepth: Number.POSITIVE_INFINITY },
      /"maxDepth" must be a whole number/,
    ],
    ['a text plainOnly', { plainOnly: 'yes' }, /"plainOnly" must be true or false/],
    ['a numeric absentIsNull', { absentIsNull: 1 }, /"absentIsNull" must be true or false/],
  ])('refuses options with %s', (_name, options, message) => {
    const call = () => sameJsonValue(1, 1, options as unknown as SameJsonValueOptions);
    expect(call).toThrow(ConfigurationError);
    expect(call).toThrow(message);
  });

  it('checks a frozen options object once and a plain one on every call', () => {
    const frozen = Object.freeze({ maxDepth: 1 });
    expect(sameJsonValue([[1]], [[1]], frozen)).toBe(true);
    expect(sameJsonValue([[[1]]], [[[1]]], frozen)).toBe(false);
    const open: { maxDepth: number; extra?: number } = { maxDepth: 1 };
    expect(sameJsonValue([[1]], [[1]], open)).toBe(true);
    open.extra = 1;
    expect(() => sameJsonValue([[1]], [[1]], open)).toThrow(/Unknown sameJsonValue option "extra"/);
  });
});
