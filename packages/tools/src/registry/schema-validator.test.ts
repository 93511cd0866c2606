import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigurationError } from './configuration-error.js';
import { AjvSchemaValidator } from './schema-validator.js';
import type { JsonObject } from './tool.js';

describe('AjvSchemaValidator', () => {
  it('compiles a schema object once and reuses it', () => {
    const validator = new AjvSchemaValidator();
    const schema: JsonObject = { type: 'object', properties: { a: { type: 'string' } } };
    const first = validator.compile(schema);
    expect(first({ a: 'x' })).toEqual({ valid: true });
    expect(validator.validate(schema, { a: 1 })).toEqual({
      valid: false,
      issues: [{ path: '$.a', message: 'must be string' }],
    });
  });

  it('reuses the compiled code for an equal schema in a new object, within maxCachedSchemas', () => {
    const validator = new AjvSchemaValidator({ maxCachedSchemas: 1 });
    const first = validator.compile({ type: 'object', required: ['a'] });
    const sameContent = validator.compile({ required: ['a'], type: 'object' });
    expect(sameContent({})).toEqual(first({}));
    expect(sameContent({ a: 1 })).toEqual({ valid: true });
    // The content cache holds one schema; a different schema pushes the first one out.
    validator.prepare({ type: 'object', required: ['b'] });
    expect(validator.validate({ type: 'object', required: ['a'] }, {})).toMatchObject({
      valid: false,
    });
  });

  it('uses 2020-12 semantics (prefixItems, $defs, unevaluatedProperties)', () => {
    const validator = new AjvSchemaValidator();
    const schema: JsonObject = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { name: { type: 'string', minLength: 1 } },
      properties: {
        pair: { type: 'array', prefixItems: [{ $ref: '#/$defs/name' }, { type: 'integer' }] },
      },
      unevaluatedProperties: false,
    };
    expect(validator.validate(schema, { pair: ['a', 1] }).valid).toBe(true);
    expect(validator.validate(schema, { pair: ['', 1] }).valid).toBe(false);
    expect(validator.validate(schema, { pair: ['a', 1], extra: true }).valid).toBe(false);
  });

  it('accepts schemas labelled draft-07 and ignores unknown keywords', () => {
    const validator = new AjvSchemaValidator();
    const schema: JsonObject = {
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
      'x-vendor': { anything: true },
      properties: { n: { type: 'number' } },
    };
    expect(validator.validate(schema, { n: 1 }).valid).toBe(true);
    expect(validator.validate(schema, { n: 'x' }).valid).toBe(false);
  });

  it('lets two schemas share an $id without clashing', () => {
    const validator = new AjvSchemaValidator();
    validator.prepare({ $id: 'https://example.invalid/tool', type: 'object' });
    expect(() =>
      validator.prepare({ $id: 'https://example.invalid/tool', type: 'object', required: ['a'] }),
    ).not.toThrow();
  });

  it.each([
    [
      'a remote $ref',
      { type: 'object', properties: { a: { $ref: 'https://example.invalid/x.json' } } },
      'unresolved-ref',
    ],
    [
      'a relative file $ref',
      { type: 'object', properties: { a: { $ref: 'other.json#/a' } } },
      'unresolved-ref',
    ],
    ['an invalid type', { type: 'objekt' }, 'invalid-schema'],
    ['a non-object schema', [] as never, 'schema-not-object'],
  ])('refuses %s without fetching anything', (_label, schema, reason) => {
    const validator = new AjvSchemaValidator();
    try {
      validator.prepare(schema as JsonObject);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigurationError);
      expect((error as ConfigurationError).details?.reason).toBe(reason);
    }
  });

  it('asserts formats only with validateFormats: true', () => {
    const schema: JsonObject = {
      type: 'object',
      properties: { at: { type: 'string', format: 'date-time' } },
    };
    expect(new AjvSchemaValidator().validate(schema, { at: 'yesterday' }).valid).toBe(true);
    expect(
      new AjvSchemaValidator({ validateFormats: true }).validate(schema, { at: 'yesterday' }).valid,
    ).toBe(false);
    expect(
      new AjvSchemaValidator({ formats: false }).validate(schema, { at: 'yesterday' }).valid,
    ).toBe(true);
  });

  it('caps issues at maxIssues and never echoes values', () => {
    const validator = new AjvSchemaValidator({ maxIssues: 2 });
    const schema: JsonObject = {
      type: 'object',
      properties: { a: { enum: ['x'] }, b: { const: 'y' }, c: { pattern: '^z$' } },
      additionalProperties: false,
    };
    const args = { a: 'SECRET1', b: 'SECRET2', c: 'SECRET3', extraKey: 'SECRET4' };
    const result = validator.validate(schema, args);
    expect(result.valid).toBe(false);
    if (!result.valid) {
      expect(result.issues).toHaveLength(2);
      expect(JSON.stringify(result.issues)).not.toContain('SECRET');
    }
    const all = new AjvSchemaValidator().validate(schema, args);
    expect(JSON.stringify(all)).not.toContain('SECRET');
  });

  it('names the unknown property and the allowed values, so a model can correct the call', () => {
    const validator = new AjvSchemaValidator();
    const schema: JsonObject = {
      type: 'object',
      properties: {
        operation: { enum: ['read', 'write', 'list'] },
        mode: { const: 'fast' },
        many: { enum: Array.from({ length: 40 }, (_, index) => `value-${index}`) },
      },
      additionalProperties: false,
    };
    const result = validator.validate(schema, {
      operation: 'delete',
      mode: 'slow',
      many: 'x',
      pathh: 'a.txt',
    });
    expect(result.valid).toBe(false);
    if (result.valid) return;
    expect(result.issues).toEqual(
      expect.arrayContaining([
        { path: '$', message: 'must not have the property "pathh" (not in the schema)' },
        { path: '$.operation', message: 'must be one of "read", "write", "list"' },
        { path: '$.mode', message: 'must be "fast"' },
      ]),
    );
    const many = result.issues.find((issue) => issue.path === '$.many');
    expect(many?.message).toMatch(/, … \(40 values\)$/);
    expect(many?.message.length).toBeLessThan(240);
    const long = validator.validate(schema, { ['k'.repeat(500)]: 1 });
    expect(long.valid === false && long.issues[0]?.message.length).toBeLessThan(120);
  });

  it.each([
    ['zero', { maxIssues: 0 }],
    ['a boolean', { maxIssues: true }],
    ['non-boolean formats', { formats: 'yes' }],
    ['negative maxCachedSchemas', { maxCachedSchemas: -1 }],
    ['string maxCachedSchemas', { maxCachedSchemas: '8' }],
  ])('rejects options: %s', (_label, options) => {
    expect(() => new AjvSchemaValidator(options as never)).toThrow(ConfigurationError);
  });

  describe('a deferred compile that fails', () => {
    afterEach(() => {
      vi.restoreAllMocks();
    });

    it('is tried once, and every later call throws the same ConfigurationError', () => {
      const validator = new AjvSchemaValidator();
      // A plain 2020-12 schema: checked against the meta-schema when prepared, compiled later.
      const schema: JsonObject = { type: 'object', properties: { a: { type: 'string' } } };
      validator.prepare(schema);
      const compile = vi.spyOn(Ajv2020.prototype, 'compile').mockImplementation(() => {
        throw new Error('forced compile failure');
      });
      const check = validator.compile(schema);
      const failures = [
        () => check({ a: 'x' }),
        () => validator.validate(schema, { a: 'y' }),
        () => check({ a: 1 }),
      ].map((call) => {
        try {
          call();
        } catch (error) {
          return error;
        }
        return undefined;
      });
      expect(compile).toHaveBeenCalledTimes(1);
      const [first] = failures;
      expect(first).toBeInstanceOf(ConfigurationError);
      expect(first).toMatchObject({
        code: 'REGISTRY_CONFIGURATION',
        details: { reason: 'invalid-schema', dialect: '2020-12' },
        message: 'The JSON Schema is not a valid 2020-12 schema',
      });
      expect((first as Error).cause).toEqual(new Error('forced compile failure'));
      for (const failure of failures) expect(failure).toBe(first);
    });
  });
});
