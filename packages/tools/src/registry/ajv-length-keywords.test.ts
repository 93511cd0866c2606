import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { AjvSchemaValidator } from './schema-validator.js';
import type { JsonObject } from './tool.js';

const DIALECTS: readonly [string, string | undefined][] = [
  ['draft-04', 'http://json-schema.org/draft-04/schema#'],
  ['draft-06', 'http://json-schema.org/draft-06/schema#'],
  ['draft-07', 'http://json-schema.org/draft-07/schema#'],
  ['2019-09', 'https://json-schema.org/draft/2019-09/schema'],
  ['2020-12', 'https://json-schema.org/draft/2020-12/schema'],
  ['none (2020-12)', undefined],
];

const face = '\u{1F600}'; // two UTF-16 units, one code point
const high = '\uD83D'; // a lone high surrogate: one code point

// Each row: the limit, the string, whether it passes. The UTF-16 length and the code-point count
// disagree on every astral row, on the side where a shortcut on `length` alone would be wrong.
const MAX_LENGTH: readonly [string, number, string, boolean][] = [
  ['ascii at the limit', 3, 'abc', true],
  ['ascii over the limit', 3, 'abcd', false],
  ['astral: 6 units, 3 code points, at the limit', 3, face.repeat(3), true],
  ['astral: 8 units, 4 code points, over the limit', 3, face.repeat(4), false],
  ['mixed: 5 units, 4 code points, over the limit', 3, `ab${face}c`, false],
  ['mixed: 4 units, 3 code points, at the limit', 3, `a${face}b`.slice(0, 4), true],
  ['lone high surrogates count one each', 2, high + high, true],
  ['empty string under maxLength 0', 0, '', true],
  ['one astral under maxLength 0', 0, face, false],
];

const MIN_LENGTH: readonly [string, number, string, boolean][] = [
  ['ascii at the limit', 3, 'abc', true],
  ['ascii under the limit', 3, 'ab', false],
  ['astral: 4 units, 2 code points, under the limit', 3, face.repeat(2), false],
  ['astral: 5 units, 3 code points, at the limit', 3, `${face}${face}a`, true],
  ['astral: 6 units, 3 code points, at the limit', 3, face.repeat(3), true],
  [
    'astral: 4 units, 2 code points, under minLength 3 (length over the limit)',
    3,
    `${face}${face}`,
    false,
  ],
  ['mixed: 5 units, 4 code points, at minLength 4', 4, `ab${face}c`, true],
  ['mixed: 5 units, 3 code points, under minLength 4', 4, `${face}${face}c`, false],
  ['empty string under minLength 1', 1, '', false],
  ['anything passes minLength 0', 0, '', true],
];

describe('maxLength and minLength count code points (with a UTF-16 length shortcut)', () => {
  describe.each(DIALECTS)('%s', (_label, uri) => {
    const schemaOf = (keyword: string, limit: number): JsonObject => ({
      ...(uri === undefined ? {} : { $schema: uri }),
      type: 'object',
      properties: { s: { type: 'string', [keyword]: limit } },
    });

    it.each(MAX_LENGTH)('maxLength: %s', (_row, limit, text, valid) => {
      const result = new AjvSchemaValidator().validate(schemaOf('maxLength', limit), { s: text });
      expect(result.valid).toBe(valid);
      if (!result.valid) {
        expect(result.issues).toEqual([
          { path: '$.s', message: `must NOT have more than ${limit} characters` },
        ]);
      }
    });

    it.each(MIN_LENGTH)('minLength: %s', (_row, limit, text, valid) => {
      const result = new AjvSchemaValidator().validate(schemaOf('minLength', limit), { s: text });
      expect(result.valid).toBe(valid);
      if (!result.valid) {
        expect(result.issues).toEqual([
          { path: '$.s', message: `must NOT have fewer than ${limit} characters` },
        ]);
      }
    });
  });

  it("agrees with ajv's own counting on every string of up to 6 units from a mixed alphabet", () => {
    const reference = new Ajv2020({ strict: false });
    const validator = new AjvSchemaValidator();
    const units = ['a', '\u00e9', '\uD83D', '\uDE00', '\uDC00'];
    const texts: string[] = [''];
    for (let size = 1; size <= 6; size += 1) {
      for (const text of texts.filter((item) => item.length === size - 1)) {
        for (const unit of units) texts.push(text + unit);
      }
    }
    let checked = 0;
    const disagreements: string[] = [];
    for (const keyword of ['maxLength', 'minLength']) {
      for (let limit = 0; limit <= 6; limit += 1) {
        const schema: JsonObject = { type: 'string', [keyword]: limit };
        const expected = reference.compile(schema);
        const actual = validator.compile(schema);
        for (const text of texts) {
          if (actual(text).valid !== expected(text)) {
            disagreements.push(`${keyword} ${limit} ${JSON.stringify(text)}`);
          }
          checked += 1;
        }
      }
    }
    expect(disagreements).toEqual([]);
    expect(checked).toBeGreaterThan(10_000);
  }, 60_000);
});
