import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigurationError } from './configuration-error.js';
import { type DeclaredSchemaDialect, declaredSchemaDialect } from './schema-dialect.js';
import { AjvSchemaValidator } from './schema-validator.js';
import type { JsonObject, JsonValue } from './tool.js';

const URI: Readonly<Record<Exclude<DeclaredSchemaDialect, 'unknown'>, string | undefined>> = {
  'draft-04': 'http://json-schema.org/draft-04/schema#',
  'draft-06': 'http://json-schema.org/draft-06/schema#',
  'draft-07': 'http://json-schema.org/draft-07/schema#',
  '2019-09': 'https://json-schema.org/draft/2019-09/schema',
  '2020-12': 'https://json-schema.org/draft/2020-12/schema',
  none: undefined,
};
type Dialect = keyof typeof URI;
const ALL: readonly Dialect[] = ['draft-04', 'draft-06', 'draft-07', '2019-09', '2020-12', 'none'];
const UP_TO_07: readonly Dialect[] = ['draft-04', 'draft-06', 'draft-07'];
const FROM_2019: readonly Dialect[] = ['2019-09', '2020-12', 'none'];

/** An object schema with one property `v`, declared in `dialect`. */
function declare(dialect: Dialect, extra: JsonObject): JsonObject {
  const uri = URI[dialect];
  return { ...(uri === undefined ? {} : { $schema: uri }), type: 'object', ...extra };
}

interface Row {
  /** What changed meaning, and how this dialect reads it. */
  readonly keyword: string;
  readonly dialects: readonly Dialect[];
  readonly schema: JsonObject;
  /** Arguments the dialect accepts. */
  readonly valid: readonly JsonValue[];
  /** Arguments the dialect refuses. */
  readonly invalid: readonly JsonValue[];
}

const REF_SIBLING: JsonObject = {
  properties: { n: { $ref: '#/definitions/n', type: 'string' } },
  definitions: { n: { type: 'number' } },
};
const REF_SIBLING_MAXIMUM: JsonObject = {
  properties: { n: { $ref: '#/definitions/n', maximum: 5 } },
  definitions: { n: { type: 'number' } },
};
const TUPLE: JsonObject = {
  properties: {
    t: { type: 'array', items: [{ type: 'string' }, { type: 'number' }], additionalItems: false },
  },
};
// `then` as a JSON Schema keyword, not a thenable (built from an entry so lint sees no `then:`).
const IF_THEN: JsonObject = Object.fromEntries([
  ['if', { required: ['a'] }],
  ['then', { required: ['b'] }],
]);
const PREFIX_ITEMS: JsonObject = {
  properties: { t: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }] } },
};

// Each row: the keyword that changed meaning between the drafts, judged as the declared dialect
// judges it. `none` is read as 2020-12 (what MCP specifies).
const TABLE: readonly Row[] = [
  {
    keyword: '$ref siblings ignored (type beside $ref)',
    dialects: UP_TO_07,
    schema: REF_SIBLING,
    valid: [{ n: 1 }],
    invalid: [{ n: 'x' }],
  },
  {
    keyword: '$ref siblings applied (type beside $ref: both must hold, nothing can)',
    dialects: FROM_2019,
    schema: REF_SIBLING,
    valid: [{}],
    invalid: [{ n: 1 }, { n: 'x' }],
  },
  {
    keyword: '$ref siblings ignored (maximum beside $ref)',
    dialects: UP_TO_07,
    schema: REF_SIBLING_MAXIMUM,
    valid: [{ n: 3 }, { n: 10 }],
    invalid: [{ n: 'x' }],
  },
  {
    keyword: '$ref siblings applied (maximum beside $ref)',
    dialects: FROM_2019,
    schema: REF_SIBLING_MAXIMUM,
    valid: [{ n: 3 }],
    invalid: [{ n: 10 }, { n: 'x' }],
  },
  {
    keyword: 'dependencies (property form)',
    dialects: ALL,
    schema: { dependencies: { a: ['b'] } },
    valid: [{ a: 1, b: 2 }, { b: 2 }],
    invalid: [{ a: 1 }],
  },
  {
    keyword: 'dependencies (schema form)',
    dialects: ALL,
    schema: { dependencies: { a: { required: ['b'] } } },
    valid: [{ a: 1, b: 2 }],
    invalid: [{ a: 1 }],
  },
  {
    keyword: 'dependentRequired unknown before 2019-09',
    dialects: UP_TO_07,
    schema: { dependentRequired: { a: ['b'] } },
    valid: [{ a: 1 }],
    invalid: [],
  },
  {
    keyword: 'dependentRequired',
    dialects: FROM_2019,
    schema: { dependentRequired: { a: ['b'] } },
    valid: [{ a: 1, b: 2 }],
    invalid: [{ a: 1 }],
  },
  {
    keyword: 'tuple items (array form) with additionalItems',
    dialects: ['draft-04', 'draft-06', 'draft-07', '2019-09'],
    schema: TUPLE,
    valid: [{ t: ['a', 1] }, { t: ['a'] }],
    invalid: [{ t: [1, 'a'] }, { t: ['a', 1, 2] }],
  },
  {
    keyword: 'prefixItems unknown before 2020-12',
    dialects: ['draft-04', 'draft-06', 'draft-07', '2019-09'],
    schema: PREFIX_ITEMS,
    valid: [{ t: [1, 'a'] }],
    invalid: [{ t: 'not an array' }],
  },
  {
    keyword: 'prefixItems',
    dialects: ['2020-12', 'none'],
    schema: PREFIX_ITEMS,
    valid: [{ t: ['a', 1, true] }],
    invalid: [{ t: [1, 'a'] }],
  },
  {
    keyword: 'definitions (a $ref into it resolves in every dialect)',
    dialects: ALL,
    schema: {
      properties: { v: { $ref: '#/definitions/s' } },
      definitions: { s: { type: 'string' } },
    },
    valid: [{ v: 'x' }],
    invalid: [{ v: 1 }],
  },
  {
    keyword: '$defs (a $ref into it resolves in every dialect)',
    dialects: ALL,
    schema: { properties: { v: { $ref: '#/$defs/s' } }, $defs: { s: { type: 'string' } } },
    valid: [{ v: 'x' }],
    invalid: [{ v: 1 }],
  },
  {
    keyword: 'exclusiveMinimum as a boolean beside minimum',
    dialects: ['draft-04'],
    schema: { properties: { v: { type: 'number', minimum: 0, exclusiveMinimum: true } } },
    valid: [{ v: 0.5 }],
    invalid: [{ v: 0 }, { v: -1 }],
  },
  {
    keyword: 'exclusiveMinimum as a number',
    dialects: ['draft-06', 'draft-07', '2019-09', '2020-12', 'none'],
    schema: { properties: { v: { type: 'number', exclusiveMinimum: 0 } } },
    valid: [{ v: 0.5 }],
    invalid: [{ v: 0 }, { v: -1 }],
  },
  {
    keyword: 'exclusiveMaximum as a boolean beside maximum',
    dialects: ['draft-04'],
    schema: { properties: { v: { type: 'number', maximum: 10, exclusiveMaximum: true } } },
    valid: [{ v: 9.5 }],
    invalid: [{ v: 10 }],
  },
  {
    keyword: 'const unknown in draft-04',
    dialects: ['draft-04'],
    schema: { properties: { v: { const: 'x' } } },
    valid: [{ v: 'y' }],
    invalid: [],
  },
  {
    keyword: 'const',
    dialects: ['draft-06', 'draft-07', '2019-09', '2020-12', 'none'],
    schema: { properties: { v: { const: 'x' } } },
    valid: [{ v: 'x' }],
    invalid: [{ v: 'y' }],
  },
  {
    keyword: 'if/then unknown before draft-07',
    dialects: ['draft-04', 'draft-06'],
    schema: IF_THEN,
    valid: [{ a: 1 }],
    invalid: [],
  },
  {
    keyword: 'if/then',
    dialects: ['draft-07', '2019-09', '2020-12', 'none'],
    schema: IF_THEN,
    valid: [{ a: 1, b: 2 }],
    invalid: [{ a: 1 }],
  },
  {
    keyword: 'unevaluatedProperties unknown before 2019-09',
    dialects: UP_TO_07,
    schema: { properties: { a: {} }, unevaluatedProperties: false },
    valid: [{ a: 1, b: 2 }],
    invalid: [],
  },
  {
    keyword: 'unevaluatedProperties',
    dialects: FROM_2019,
    schema: { allOf: [{ properties: { a: {} } }], unevaluatedProperties: false },
    valid: [{ a: 1 }],
    invalid: [{ a: 1, b: 2 }],
  },
];

const CASES = TABLE.flatMap((row) =>
  row.dialects.map((dialect) => ({ dialect, keyword: row.keyword, row })),
);

// Schemas a dialect refuses outright (what the keyword means there is not a schema).
const REFUSED: ReadonlyArray<{ dialect: Dialect; keyword: string; schema: JsonObject }> = [
  { dialect: '2020-12', keyword: 'tuple items (array form)', schema: TUPLE },
  { dialect: 'none', keyword: 'tuple items (array form)', schema: TUPLE },
  {
    dialect: 'draft-04',
    keyword: 'exclusiveMinimum as a number',
    schema: { properties: { v: { exclusiveMinimum: 0 } } },
  },
  ...(['draft-06', 'draft-07', '2019-09', '2020-12', 'none'] as const).map((dialect) => ({
    dialect,
    keyword: 'exclusiveMinimum as a boolean',
    schema: { properties: { v: { minimum: 0, exclusiveMinimum: true } } } as JsonObject,
  })),
];

describe('validation in the declared JSON Schema dialect', () => {
  const validator = new AjvSchemaValidator();

  it.each(CASES)('$dialect: $keyword', ({ dialect, row }) => {
    const schema = declare(dialect, row.schema);
    for (const args of row.valid) expect(validator.validate(schema, args)).toEqual({ valid: true });
    for (const args of row.invalid) expect(validator.validate(schema, args).valid).toBe(false);
  });

  it.each(REFUSED)('$dialect refuses a schema with $keyword', ({ dialect, schema }) => {
    try {
      validator.prepare(declare(dialect, schema));
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).details).toMatchObject({ reason: 'invalid-schema' });
    }
  });

  it.each(ALL.filter((dialect) => dialect !== 'none'))(
    '%s still refuses an external or unresolved $ref',
    (dialect) => {
      for (const ref of ['https://example.invalid/x.json', 'other.json#/a', '#/definitions/nope']) {
        const schema = declare(dialect, { properties: { v: { $ref: ref } } });
        expect(() => validator.prepare(schema)).toThrow(
          expect.objectContaining({
            details: expect.objectContaining({ reason: 'unresolved-ref' }),
          }),
        );
      }
    },
  );

  it('keeps definitions beside a root $ref reachable in draft-07 (siblings ignored, targets kept)', () => {
    const schema: JsonObject = {
      $schema: URI['draft-07'] as string,
      $ref: '#/definitions/args',
      type: 'string',
      definitions: { args: { type: 'object', required: ['q'] } },
    };
    expect(validator.validate(schema, { q: 1 })).toEqual({ valid: true });
    expect(validator.validate(schema, {}).valid).toBe(false);
  });

  it.each([
    ['http://json-schema.org/draft-07/schema', 'draft-07'],
    ['https://json-schema.org/draft-07/schema#', 'draft-07'],
    ['http://json-schema.org/draft-04/schema', 'draft-04'],
    ['https://json-schema.org/draft/2020-12/schema#', '2020-12'],
    ['http://json-schema.org/draft/2019-09/schema#', '2019-09'],
    ['http://json-schema.org/schema#', 'unknown'],
    ['https://json-schema.org/draft/2021-01/schema', 'unknown'],
    ['https://example.invalid/draft-07/schema', 'unknown'],
    [7, 'unknown'],
  ] as const)('reads $schema %j as %s', (uri, dialect) => {
    expect(declaredSchemaDialect({ $schema: uri })).toBe(dialect);
  });

  it.each([
    ['http://json-schema.org/draft/2020-12/schema#', { n: 10 }],
    ['https://json-schema.org/draft/2019-09/schema#', { n: 10 }],
    ['http://json-schema.org/draft-07/schema', { n: 'x' }],
    ['https://json-schema.org/draft-06/schema', { n: 'x' }],
    ['https://json-schema.org/draft-04/schema', { n: 'x' }],
  ] as const)('compiles %s in its dialect (spelling variants of the URI)', (uri, invalid) => {
    const schema: JsonObject = { $schema: uri, type: 'object', ...REF_SIBLING_MAXIMUM };
    expect(validator.validate(schema, { n: 3 })).toEqual({ valid: true });
    expect(validator.validate(schema, invalid).valid).toBe(false);
  });

  it('refuses an unknown $schema instead of guessing its meaning', () => {
    try {
      validator.prepare({ $schema: 'http://json-schema.org/schema#', type: 'object' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).details).toEqual({ reason: 'unknown-dialect' });
      expect((error as Error).message).toContain('draft-04, draft-06, draft-07, 2019-09, 2020-12');
    }
  });
});

describe('format', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });
  const schema: JsonObject = {
    type: 'object',
    properties: {
      id: { type: 'string', format: 'uuid' },
      at: { type: 'string', format: 'date-time' },
      body: { type: 'string', format: 'json' },
    },
  };
  // What Notion and Supabase accept: a dashless page id from a notion.so URL, a time without seconds.
  const serverAccepts = { id: '1f2e3d4c5b6a79881f2e3d4c5b6a7988', at: '2026-01-01T00:00Z' };

  it('is an annotation by default: values the servers accept pass', () => {
    expect(new AjvSchemaValidator().validate(schema, serverAccepts)).toEqual({ valid: true });
    expect(new AjvSchemaValidator().validate(schema, { at: 'yesterday' })).toEqual({ valid: true });
  });

  it('is asserted with validateFormats: true (and with the deprecated formats: true)', () => {
    for (const options of [{ validateFormats: true }, { formats: true }]) {
      const result = new AjvSchemaValidator(options).validate(schema, serverAccepts);
      expect(result.valid).toBe(false);
      if (!result.valid) expect(result.issues.map((issue) => issue.path)).toEqual(['$.id', '$.at']);
    }
    expect(
      new AjvSchemaValidator({ validateFormats: true }).validate(schema, {
        id: '1f2e3d4c-5b6a-7988-9f2e-3d4c5b6a7988',
        at: '2026-01-01T00:00:00Z',
      }),
    ).toEqual({ valid: true });
  });

  it('prints nothing to the console; ajv notes go to the logger when one is given', () => {
    const printed = [
      vi.spyOn(console, 'warn').mockImplementation(() => {}),
      vi.spyOn(console, 'log').mockImplementation(() => {}),
      vi.spyOn(console, 'error').mockImplementation(() => {}),
      vi.spyOn(process.stderr, 'write').mockImplementation(() => true),
    ];
    new AjvSchemaValidator({ validateFormats: true }).prepare(schema);
    const notes: Array<Readonly<Record<string, unknown>> | undefined> = [];
    new AjvSchemaValidator({
      validateFormats: true,
      logger: { warn: (_message, details) => notes.push(details) },
    }).prepare(schema);
    for (const spy of printed) expect(spy).not.toHaveBeenCalled();
    expect(notes.length).toBeGreaterThan(0);
    for (const details of notes) {
      expect(details).toEqual({
        dialect: '2020-12',
        note: expect.stringContaining('unknown format "json" ignored'),
      });
    }
  });

  it('survives a logger that throws', () => {
    const validator = new AjvSchemaValidator({
      validateFormats: true,
      logger: {
        warn: () => {
          throw new Error('logger down');
        },
      },
    });
    expect(() => validator.prepare(schema)).not.toThrow();
  });

  it.each([
    ['formats and validateFormats disagree', { formats: true, validateFormats: false }],
    ['a non-boolean validateFormats', { validateFormats: 'yes' }],
    ['a logger without warn', { logger: {} }],
    ['an unknown key', { validateFormat: true }],
  ])('refuses options: %s', (_label, options) => {
    expect(() => new AjvSchemaValidator(options as never)).toThrow(ConfigurationError);
  });
});
