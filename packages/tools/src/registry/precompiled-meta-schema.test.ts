// The 2020-12 meta-schema check compiled ahead of time (scripts/generate-meta-schema-check.mjs)
// against ajv's own: the same acceptance and the same error for every row, the generated file up
// to date with the installed ajv, and AjvSchemaValidator refusing each bad schema when it is
// prepared (a plain schema's compile waits for its first validation) with the error it gave when
// every schema compiled at once.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { mayFailCompile } from './compile-risk.js';
import { metaSchema2020Check } from './precompiled-meta-schema.js';
import { AjvSchemaValidator } from './schema-validator.js';
import type { JsonObject, JsonValue } from './tool.js';

const GENERATOR = fileURLToPath(
  new URL('../../scripts/generate-meta-schema-check.mjs', import.meta.url),
);
const GENERATED = fileURLToPath(new URL('./meta-schema-2020-12.generated.ts', import.meta.url));

/** ajv as AjvSchemaValidator configured it before the check was precompiled. */
function stockAjv(): Ajv2020 {
  return new Ajv2020({
    strict: false,
    allErrors: true,
    addUsedSchema: false,
    validateFormats: false,
    logger: false,
  });
}

/** What a stock Ajv2020 says of a schema: its meta-schema verdict and errors, its compile error. */
function stockVerdict(schema: JsonObject): {
  valid: boolean;
  errors: unknown;
  compileError: string | undefined;
} {
  const ajv = stockAjv();
  const valid = ajv.validateSchema(schema) as boolean;
  const errors = structuredClone(ajv.errors ?? null);
  let compileError: string | undefined;
  try {
    stockAjv().compile(schema);
  } catch (error) {
    compileError = (error as Error).message;
  }
  return { valid, errors, compileError };
}

/** What AjvSchemaValidator.prepare says: undefined, or its error's message, details and cause. */
function prepareVerdict(schema: JsonObject): unknown {
  try {
    new AjvSchemaValidator().prepare(schema);
    return undefined;
  } catch (error) {
    const failure = error as Error & { details?: unknown; cause?: unknown };
    return {
      message: failure.message,
      details: failure.details,
      cause: (failure.cause as Error | undefined)?.message,
    };
  }
}

const GOOD: readonly (readonly [string, JsonObject])[] = [
  ['the empty schema', {}],
  [
    'a typical tool input schema',
    {
      type: 'object',
      properties: {
        path: { type: 'string', description: 'A path', minLength: 1, maxLength: 4096 },
        mode: { enum: ['read', 'write'] },
        depth: { type: 'integer', minimum: 0, maximum: 10, default: 2 },
      },
      required: ['path'],
      additionalProperties: false,
    },
  ],
  ['the canonical $schema', { $schema: 'https://json-schema.org/draft/2020-12/schema' }],
  ['type as a list', { type: ['string', 'null'] }],
  ['prefixItems and items', { type: 'array', prefixItems: [{ type: 'string' }], items: false }],
  ['unevaluatedProperties', { allOf: [{ properties: { a: {} } }], unevaluatedProperties: false }],
  [
    'if / then / else',
    // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword.
    { if: { type: 'string' }, then: { minLength: 1 }, else: { type: 'number' } },
  ],
  ['const and examples', { const: { a: [1, 2] }, examples: [{ a: [1, 2] }], deprecated: true }],
  ['an unknown vendor keyword', { type: 'object', 'x-vendor': { anything: [1, 'two'] } }],
  [
    'dependentRequired and dependentSchemas',
    { dependentRequired: { a: ['b'] }, dependentSchemas: { a: {} } },
  ],
  [
    '$defs and a local $ref',
    { $defs: { name: { type: 'string' } }, properties: { n: { $ref: '#/$defs/name' } } },
  ],
  ['a valid pattern', { type: 'string', pattern: '^[a-z]+$' }],
  ['contains with min and max', { contains: { type: 'integer' }, minContains: 1, maxContains: 3 }],
  ['a format (an annotation)', { type: 'string', format: 'email' }],
];

const BAD: readonly (readonly [string, JsonObject])[] = [
  ['an unknown type name', { type: 'strin' }],
  ['properties as an array', { properties: [] as unknown as JsonObject }],
  ['required as a string', { required: 'path' }],
  ['required with duplicates', { required: ['a', 'a'] }],
  ['a negative minLength', { minLength: -1 }],
  ['array-form items (a tuple before 2020-12)', { items: [{ type: 'string' }] }],
  ['additionalProperties as a number', { additionalProperties: 5 }],
  ['enum as a string', { enum: 'red' }],
  ['a $defs entry that is not a schema', { $defs: { a: 3 } }],
  ['multipleOf zero', { multipleOf: 0 }],
  ['an empty anyOf', { anyOf: [] }],
  ['allOf as an object', { allOf: {} }],
  ['dependentRequired with a number', { dependentRequired: { a: [1] } }],
  ['a deeply nested wrong type', { properties: { a: { properties: { b: { type: 7 } } } } }],
  ['several errors at once', { type: 'strin', minimum: 'x', required: [1] }],
  [
    'an $id with a fragment (checked on the compile-at-once path)',
    { $id: 'https://x.example/s#frag' },
  ],
  ['a pattern that is not a string (compile-at-once path)', { pattern: 5 }],
  ['a $ref that is not a string (compile-at-once path)', { $ref: 5 }],
];

/** Refused by ajv's compile although the meta-schema accepts them: always compiled at once. */
const COMPILE_ONLY_BAD: readonly (readonly [string, JsonObject])[] = [
  ['an empty enum', { enum: [] }],
  ['nullable without type', { properties: { a: { nullable: true } } }],
  ['nullable false beside type null', { type: 'null', nullable: false }],
  ['a pattern invalid with the u flag', { type: 'string', pattern: '\\-(' }],
  ['patternProperties with an invalid pattern', { patternProperties: { '(': {} } }],
  ['an unresolved $ref', { properties: { a: { $ref: '#/$defs/missing' } } }],
  ['an $async subschema', { properties: { a: { $async: true, type: 'string' } } }],
  [
    'two subschemas with one $id',
    { $defs: { a: { $id: 'https://x.example/a' }, b: { $id: 'https://x.example/a' } } },
  ],
];

describe('the precompiled 2020-12 meta-schema check', () => {
  it('is up to date with the installed ajv (regenerating it gives the checked-in file)', () => {
    const regenerated = execFileSync(process.execPath, [GENERATOR, '--print'], {
      encoding: 'utf8',
    });
    expect(regenerated).toBe(readFileSync(GENERATED, 'utf8'));
    const { version } = createRequire(import.meta.url)('ajv/package.json') as { version: string };
    expect(readFileSync(GENERATED, 'utf8')).toContain(`from ajv ${version}:`);
  });

  it.each([...GOOD, ...BAD, ...COMPILE_ONLY_BAD])(
    'accepts and refuses %s as ajv does, with the same errors',
    (_, schema) => {
      const stock = stockVerdict(schema);
      const check = metaSchema2020Check();
      const valid = check(schema);
      expect({ valid, errors: structuredClone(check.errors ?? null) }).toEqual({
        valid: stock.valid,
        errors: stock.errors,
      });
    },
  );

  it.each(GOOD)('AjvSchemaValidator prepares %s', (_, schema) => {
    expect(stockVerdict(schema).compileError).toBeUndefined();
    expect(prepareVerdict(schema)).toBeUndefined();
  });

  it.each([...BAD, ...COMPILE_ONLY_BAD])(
    "AjvSchemaValidator refuses %s when it is prepared, with ajv's compile error as the cause",
    (_, schema) => {
      const { compileError } = stockVerdict(schema);
      expect(compileError).toBeDefined();
      const verdict = prepareVerdict(schema) as { details: { reason: string } };
      expect(verdict).toEqual({
        message:
          verdict.details.reason === 'unresolved-ref'
            ? 'The JSON Schema has a $ref that does not resolve inside it (remote schemas are never fetched)'
            : 'The JSON Schema is not a valid 2020-12 schema',
        details: { reason: verdict.details.reason, dialect: '2020-12' },
        cause: compileError,
      });
    },
  );

  it.each(COMPILE_ONLY_BAD)('never defers the compile of %s', (_, schema) => {
    expect(mayFailCompile(schema, false)).toBe(true);
  });

  it.each([
    ['a format when formats are asserted', { type: 'string', format: 'email' }, true, true],
    ['a format when format is an annotation', { type: 'string', format: 'email' }, false, false],
    ['a plain tool schema', GOOD[1]?.[1] ?? {}, false, false],
    ['nesting deeper than the scan', nested(80), false, true],
  ] as const)('scans %s', (_, schema, validateFormats, risky) => {
    expect(mayFailCompile(schema, validateFormats)).toBe(risky);
  });
});

describe('AjvSchemaValidator never compiles the 2020-12 meta-schema', () => {
  it('prepares, compiles and runs a schema with a $ref (compiled at once) and a plain one (deferred) without compiling it', () => {
    const prototype = Ajv2020.prototype as unknown as {
      _compileMetaSchema: (...args: unknown[]) => unknown;
    };
    const own = prototype._compileMetaSchema;
    let compiled = 0;
    prototype._compileMetaSchema = function counted(this: unknown, ...args: unknown[]) {
      compiled += 1;
      return own.apply(this, args);
    };
    try {
      const validator = new AjvSchemaValidator();
      const withRef = {
        $defs: { s: { type: 'string' } },
        properties: { a: { $ref: '#/$defs/s' } },
      };
      const plain = { type: 'object', properties: { a: { type: 'string' } } };
      validator.prepare(withRef);
      validator.prepare(plain);
      expect(validator.validate(withRef, { a: 1 }).valid).toBe(false);
      expect(validator.validate(plain, { a: 1 }).valid).toBe(false);
      expect(() => validator.prepare({ $id: 'https://x.example/s#frag' })).toThrow(
        'The JSON Schema is not a valid 2020-12 schema',
      );
      // The control: a stock Ajv2020 compiles the meta-schema for its first schema.
      expect(compiled).toBe(0);
      stockAjv().compile({});
      expect(compiled).toBeGreaterThan(0);
    } finally {
      prototype._compileMetaSchema = own;
    }
  });
});

describe('AjvSchemaValidator with a deferred compile', () => {
  const schema = GOOD[1]?.[1] as JsonObject;
  const values: readonly (readonly [string, JsonValue])[] = [
    ['a valid value', { path: '/tmp/x', mode: 'read' }],
    ['a missing required property', { mode: 'read' }],
    ['an extra property and a wrong enum', { path: 'p', mode: 'delete', extra: 1 }],
    ['a string too short', { path: '' }],
  ];

  it.each(values)('validates %s as a compile at once does', (_, value) => {
    const deferred = new AjvSchemaValidator();
    deferred.prepare(schema);
    const check = deferred.compile(schema);
    // A schema with a $ref is compiled at once: the same schema with one gives the reference.
    const atOnce = new AjvSchemaValidator().compile({
      ...schema,
      $defs: { unused: { $ref: '#' } },
    });
    expect(mayFailCompile(schema, false)).toBe(false);
    expect(check(value)).toEqual(atOnce(value));
    expect(deferred.validate(schema, value)).toEqual(atOnce(value));
  });
});

function nested(depth: number): JsonObject {
  let schema: JsonObject = { type: 'string' };
  for (let level = 0; level < depth; level++) schema = { properties: { a: schema } };
  return schema;
}
