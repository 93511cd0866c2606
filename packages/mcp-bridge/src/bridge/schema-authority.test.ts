import { describe, expect, it } from 'vitest';
import { BridgeSchemaError } from './errors.js';
import { authoritativeSchema, NO_ARGUMENTS_SCHEMA } from './schema-authority.js';

const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';

describe('authoritativeSchema', () => {
  it('gives an omitted inputSchema a closed object with no arguments', () => {
    expect(authoritativeSchema('t', 'inputSchema', undefined, 'compatible')).toBe(
      NO_ARGUMENTS_SCHEMA,
    );
    expect(NO_ARGUMENTS_SCHEMA).toEqual({
      type: 'object',
      properties: {},
      additionalProperties: false,
    });
  });

  it.each([
    ['an explicit null', null],
    ['an array root', []],
    ['a string root', 'object'],
    ['a non-object type', { type: 'string' }],
    ['a missing type', { properties: {} }],
    ['draft-04', { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' }],
    ['an unknown dialect', { $schema: 'https://example.test/dialect', type: 'object' }],
    [
      'a remote $ref',
      { type: 'object', properties: { a: { $ref: 'https://example.test/a.json' } } },
    ],
    ['a relative $ref', { type: 'object', properties: { a: { $ref: 'other.json#/a' } } }],
    ['a remote $dynamicRef', { type: 'object', items: { $dynamicRef: 'https://x.test/#m' } }],
    [
      'an embedded $id',
      { type: 'object', properties: { a: { $id: 'https://x.test/a', type: 'string' } } },
    ],
    [
      'draft-07 array-form items',
      { $schema: DRAFT_07, type: 'object', properties: { a: { type: 'array', items: [{}] } } },
    ],
    ['draft-07 dependencies', { $schema: DRAFT_07, type: 'object', dependencies: { a: ['b'] } }],
  ])('refuses %s', (_name, schema) => {
    expect(() => authoritativeSchema('t', 'inputSchema', schema, 'compatible')).toThrow(
      BridgeSchemaError,
    );
  });

  it('refuses any draft-07 declaration in strict mode', () => {
    expect(() =>
      authoritativeSchema('t', 'inputSchema', { $schema: DRAFT_07, type: 'object' }, 'strict'),
    ).toThrow(BridgeSchemaError);
  });

  it('re-declares a compatible draft-07 schema as 2020-12', () => {
    const schema = { $schema: DRAFT_07, type: 'object', properties: { a: { type: 'string' } } };
    expect(authoritativeSchema('t', 'inputSchema', schema, 'compatible')).toEqual({
      type: 'object',
      properties: { a: { type: 'string' } },
    });
  });

  it('keeps local references and 2020-12 declarations', () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { name: { type: 'string' } },
      properties: { a: { $ref: '#/$defs/name' } },
    };
    expect(authoritativeSchema('t', 'inputSchema', schema, 'strict')).toBe(schema);
  });

  it('does not mistake data for schemas', () => {
    const schema = { type: 'object', properties: { a: { const: { $ref: 'https://x.test' } } } };
    expect(authoritativeSchema('t', 'inputSchema', schema, 'strict')).toBe(schema);
  });
});
