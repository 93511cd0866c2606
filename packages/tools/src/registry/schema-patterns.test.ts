import { describe, expect, it, vi } from 'vitest';
import { ConfigurationError } from './configuration-error.js';
import {
  AjvSchemaValidator,
  DEFAULT_MAX_PATTERN_SIZE,
  DEFAULT_MAX_PATTERN_WORK,
} from './schema-validator.js';
import type { JsonObject, JsonValue } from './tool.js';

// 40 characters and a mismatch at the end: ECMAScript's backtracking engine would try 2^40 ways
// (hours); the linear engine answers at once. No timing is asserted: the test's own time limit is
// the bound, and a regression hangs it.
const HOSTILE = '^(a+)+$';
const LONG = `${'a'.repeat(40)}!`;

const DIALECTS = {
  '2020-12': 'https://json-schema.org/draft/2020-12/schema',
  '2019-09': 'https://json-schema.org/draft/2019-09/schema',
  'draft-07': 'http://json-schema.org/draft-07/schema#',
  'draft-04': 'http://json-schema.org/draft-04/schema#',
} as const;

describe('AjvSchemaValidator patterns (linear by default)', () => {
  it('defaults to the linear engine and refuses an unknown patterns value', () => {
    expect(new AjvSchemaValidator().patterns).toBe('linear');
    expect(new AjvSchemaValidator({ patterns: 'native' }).patterns).toBe('native');
    expect(() => new AjvSchemaValidator({ patterns: 're2' as never })).toThrow(
      expect.objectContaining({
        code: 'REGISTRY_CONFIGURATION',
        details: { option: 'patterns' },
      }) as Error,
    );
  });

  it.each(Object.entries(DIALECTS))(
    'runs a catastrophic pattern in linear time (%s): pattern, patternProperties, propertyNames',
    (dialect, $schema) => {
      const validator = new AjvSchemaValidator();
      const schema: JsonObject = {
        $schema,
        type: 'object',
        properties: { id: { type: 'string', pattern: HOSTILE } },
        patternProperties: { [HOSTILE]: { type: 'integer' } },
        propertyNames: { pattern: '^(a+)+$|^id$' },
      };
      const check = validator.compile(schema);
      expect(check({ id: LONG })).toEqual({
        valid: false,
        issues: [{ path: '$.id', message: `must match pattern "${HOSTILE}"` }],
      });
      expect(check({ id: 'aaaa', aaaa: 1 })).toEqual({ valid: true });
      expect(check({ id: 'aaaa', aaaa: 'x' })).toMatchObject({ valid: false });
      // propertyNames came with draft-06.
      expect(check({ [LONG]: 1 }).valid).toBe(dialect === 'draft-04');
      expect(validator.unenforcedPatterns(schema)).toEqual([]);
    },
  );

  it.each([
    ['an anchored class', '^[a-z]+$', 'abc', true],
    ['an anchored class, a digit', '^[a-z]+$', 'ab1', false],
    ['unanchored: found anywhere', 'b', 'abc', true],
    ['unanchored: absent', 'z', 'abc', false],
    ['\\d is ASCII', '^\\d+$', '123', true],
    ['\\d is ASCII: Arabic-Indic digits', '^\\d+$', '\u0661\u0662', false],
    ['\\w is ASCII', '^\\w+$', 'é', false],
    ['. is one code point (as with the u flag)', '^.$', '😀', true],
    ['$ is the end of the text, not before a final newline', 'a$', 'a\n', false],
    ['a \\u escape', '^\\u00e9$', 'é', true],
    ['a \\u{...} escape', '^\\u{1F600}$', '😀', true],
    ['a named group', '^(?<year>\\d{4})$', '2026', true],
    ['\\p{L}', '^\\p{L}+$', 'héllo', true],
    ['. does not match a newline', '^.$', '\n', false],
    ['an escaped slash', '^a\\/b$', 'a/b', true],
    ['a bounded repeat', '^a{2,3}$', 'aaaa', false],
  ])('matches as JSON Schema says: %s', (_label, pattern, text, valid) => {
    const schema: JsonObject = { type: 'string', pattern };
    expect(new AjvSchemaValidator().validate(schema, text).valid).toBe(valid);
    // The same answer as JavaScript's engine for these.
    expect(new AjvSchemaValidator({ patterns: 'native' }).validate(schema, text).valid).toBe(valid);
  });

  // RE2 reads `.`, `\s` and `\S` otherwise, and a surrogate pair written as two escapes: the
  // engine writes them out as JavaScript reads them, so the answers agree.
  const PATTERNS = [
    '^.$',
    '^.+$',
    '^\\s$',
    '^\\S+$',
    '^[\\s]+$',
    '^[^\\s]+$',
    '^[\\S\\d]+$',
    '^[.]$',
    '^\\.$',
    '^\\\\s$',
    '^[\\]\\s]+$',
    '^\\uD83D\\uDE00$',
    '^[\\uD83D\\uDE00-\\uD83D\\uDE4F]$',
    '^\\u{1F600}.$',
    '^\\p{L}\\s\\d$',
    '\\bab\\b',
    '^\\w+$',
    '^\\d+$',
    'a$',
    '^a',
  ];
  const TEXTS = [
    'a',
    ' ',
    '\t',
    '\v',
    '\n',
    '\r',
    '\u00a0',
    '\u2028',
    '\u3000',
    '\ufeff',
    '\u200b',
    '😀',
    '😀x',
    'ab c',
    'a b',
    'abc',
    '.',
    '\\s',
    ']',
    '] ',
    'é 1',
    '1',
    'a\n',
    '\na',
    'ab',
    'éab',
    '\u0661\u0662',
  ];
  it.each(PATTERNS)('answers as JavaScript does for %s, on every text of the table', (pattern) => {
    const linear = new AjvSchemaValidator();
    const native = new AjvSchemaValidator({ patterns: 'native' });
    const schema: JsonObject = { type: 'string', pattern };
    const answers = TEXTS.map((text) => [text, linear.validate(schema, text).valid]);
    expect(answers).toEqual(TEXTS.map((text) => [text, native.validate(schema, text).valid]));
    expect(linear.unenforcedPatterns(schema)).toEqual([]);
  });

  it('keeps each pattern of a schema apart (ajv shares compiled patterns by their text)', () => {
    const validator = new AjvSchemaValidator();
    const check = validator.compile({
      type: 'object',
      properties: { a: { pattern: '^x$' }, b: { pattern: '^y$' }, c: { pattern: '^x$' } },
    });
    expect(check({ a: 'x', b: 'y', c: 'x' })).toEqual({ valid: true });
    expect(check({ a: 'x', b: 'x' })).toMatchObject({ valid: false, issues: [{ path: '$.b' }] });
    const native = new AjvSchemaValidator({ patterns: 'native' });
    native.prepare({ type: 'string', pattern: '^x$' });
    expect(validator.validate({ type: 'string', pattern: '^x$' }, 'y').valid).toBe(false);
  });

  it.each([
    ['a lookahead', '^(?!admin$)[a-z]+$', 'admin'],
    ['a lookbehind', '(?<=@)example$', 'x@other'],
    ['a backreference', '^(a)\\1$', 'ab'],
    ['a named backreference', '^(?<x>a)\\k<x>$', 'ab'],
    ['a ninth-group backreference', '^(a)(b)(c)(d)(e)(f)(g)(h)(i)\\9$', 'abcdefghi9'],
    ['a negative lookbehind', '(?<!@)example$', '@example'],
    ['a Script= property', '^\\p{Script=Greek}+$', 'abc'],
    ['a long Unicode property name', '^\\p{Letter}+$', '123'],
  ])(
    'does not enforce a pattern the linear engine cannot run (%s), and reports it',
    (_label, pattern, text) => {
      const warn = vi.fn();
      const validator = new AjvSchemaValidator({ logger: { warn } });
      const schema: JsonObject = {
        type: 'object',
        properties: { a: { type: 'string', pattern }, b: { type: 'string', pattern: '^b$' } },
      };
      expect(validator.validate(schema, { a: text, b: 'b' })).toEqual({ valid: true });
      // The patterns it can run are still enforced.
      expect(validator.validate(schema, { a: text, b: 'c' })).toMatchObject({ valid: false });
      expect(validator.unenforcedPatterns(schema)).toEqual([pattern]);
      expect(validator.unenforcedPatterns({ ...schema })).toEqual([pattern]);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn).toHaveBeenCalledWith(
        'JSON Schema pattern not enforced: the linear-time engine cannot run it (unsupported syntax)',
        { pattern: JSON.stringify(pattern), dialect: '2020-12', reason: 'unsupported' },
      );
      // JavaScript's engine runs it, for a validator that sees only schemas you wrote.
      const native = new AjvSchemaValidator({ patterns: 'native' });
      expect(native.validate(schema, { a: text, b: 'b' })).toMatchObject({ valid: false });
      expect(native.unenforcedPatterns(schema)).toEqual([]);
    },
  );

  it.each([
    ['an unclosed group', '^(a'],
    ['a range from a class (RE2 accepts it, JavaScript with u does not)', '^[\\d-x]$'],
    ['an identity escape (invalid with u)', '^\\-$'],
  ])(
    'still refuses a pattern that is not valid JavaScript with the u flag: %s',
    (_label, pattern) => {
      for (const patterns of ['linear', 'native'] as const) {
        expect(() =>
          new AjvSchemaValidator({ patterns }).prepare({ type: 'string', pattern }),
        ).toThrow(ConfigurationError);
      }
    },
  );

  it('compiles no pattern engine for a schema without patterns', () => {
    const validator = new AjvSchemaValidator();
    const schema: JsonObject = { type: 'object', properties: { a: { type: 'string' } } };
    expect(validator.unenforcedPatterns(schema)).toEqual([]);
    expect(validator.validate(schema, { a: 'x' } as JsonValue)).toEqual({ valid: true });
  });
});

describe('AjvSchemaValidator pattern limits (linear engine)', () => {
  it('states its defaults and refuses a bad value', () => {
    expect(DEFAULT_MAX_PATTERN_WORK).toBe(4_000_000);
    expect(DEFAULT_MAX_PATTERN_SIZE).toBe(16_384);
    for (const [option, value] of [
      ['maxPatternWork', 0],
      ['maxPatternWork', 1.5],
      ['maxPatternSize', -1],
      ['maxPatternSize', '10'],
    ] as const) {
      expect(() => new AjvSchemaValidator({ [option]: value } as never)).toThrow(
        expect.objectContaining({ details: { option } }) as Error,
      );
    }
  });

  // `.{1000}` is 1,002 RE2 instructions: linear in the text, but each character can cost a step
  // per instruction (about 25 µs a character here), so 8 MiB of it would hold the process for
  // minutes. The work of one validation (program size times text length) is bounded.
  it('fails a validation whose pattern work is over maxPatternWork (fail closed, even under not)', () => {
    const validator = new AjvSchemaValidator({ maxPatternWork: 2_000_000 });
    const schema: JsonObject = { type: 'string', pattern: '.{1000}' };
    expect(validator.validate(schema, 'a'.repeat(1000)).valid).toBe(true);
    const over = validator.validate(schema, 'a'.repeat(200_000));
    expect(over).toMatchObject({
      valid: false,
      issues: [
        {
          path: '$',
          message: "has text too long to check against the schema's patterns within maxPatternWork",
        },
      ],
    });
    // A failed test under `not` would pass the value: over the limit the value fails anyway.
    const negated: JsonObject = { not: { type: 'string', pattern: '.{1000}' } };
    expect(validator.validate(negated, 'a'.repeat(200_000)).valid).toBe(false);
    // A compile after a validation that spent the budget (all but 8) still runs the meta-schema's
    // own patterns ($anchor's, 2019-09): compiling has a budget of its own.
    expect(validator.validate(schema, 'a'.repeat(1996)).valid).toBe(true);
    const anchored: JsonObject = {
      $schema: 'https://json-schema.org/draft/2019-09/schema',
      $defs: { name: { $anchor: 'name', type: 'string' } },
      properties: { a: { $ref: '#name' } },
    };
    expect(() => validator.prepare(anchored)).not.toThrow();
    expect(validator.validate(anchored, { a: 1 }).valid).toBe(false);
    // The budget is per validation: the next one starts afresh.
    expect(validator.validate(schema, 'a'.repeat(1000)).valid).toBe(true);
    // zod's base64 pattern (22 instructions) on 180,000 characters fits the default.
    const base64 = '^$|^(?:[0-9a-zA-Z+/]{4})*(?:(?:[0-9a-zA-Z+/]{2}==)|(?:[0-9a-zA-Z+/]{3}=))?$';
    expect(
      new AjvSchemaValidator().validate({ type: 'string', pattern: base64 }, 'QUJD'.repeat(45_000)),
    ).toEqual({ valid: true });
    // A small pattern checks long texts within the default.
    expect(
      new AjvSchemaValidator().validate(
        { type: 'string', pattern: '^[a-z]+$' },
        'a'.repeat(200_000),
      ).valid,
    ).toBe(true);
  });

  it('does not enforce patterns beyond maxPatternSize per schema, before compiling them, and reports them', () => {
    const warn = vi.fn();
    const validator = new AjvSchemaValidator({ maxPatternSize: 3_000, logger: { warn } });
    const big = 'a{1000}b{1000}c{1000}d{1000}';
    const schema: JsonObject = {
      type: 'object',
      properties: {
        small: { type: 'string', pattern: '^x$' },
        big: { type: 'string', pattern: big },
        literal: { type: 'string', pattern: 'y'.repeat(5_000) },
      },
    };
    expect(validator.validate(schema, { small: 'x', big: 'z', literal: 'z' })).toEqual({
      valid: true,
    });
    expect(validator.validate(schema, { small: 'z' }).valid).toBe(false);
    expect(validator.unenforcedPatterns(schema)).toEqual([big, 'y'.repeat(5_000)]);
    expect(warn.mock.calls.map(([, details]) => (details as { reason: string }).reason)).toEqual([
      'too-large',
      'too-large',
    ]);
    // Within the default both are enforced.
    const roomy = new AjvSchemaValidator();
    expect(roomy.unenforcedPatterns(schema)).toEqual([]);
    expect(roomy.validate(schema, { big: 'z' }).valid).toBe(false);
  });
});
