import { describe, expect, it } from 'vitest';
import { BridgeSchemaError } from './errors.js';
import { authoritativeSchema, NO_ARGUMENTS_SCHEMA } from './schema-authority.js';

const DRAFT_04 = 'http://json-schema.org/draft-04/schema#';
const DRAFT_07 = 'http://json-schema.org/draft-07/schema#';
const DRAFT_2019 = 'https://json-schema.org/draft/2019-09/schema';

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
    ['an explicit null', null, 'null'],
    ['an array root', [], 'not-object'],
    ['a string root', 'object', 'not-object'],
    ['a non-object type', { type: 'string' }, 'not-object-type'],
    ['a missing type', { properties: {} }, 'not-object-type'],
    ['an unknown dialect', { $schema: 'https://example.test/dialect', type: 'object' }, 'dialect'],
    [
      'the unversioned meta-schema',
      { $schema: 'http://json-schema.org/schema#', type: 'object' },
      'dialect',
    ],
    [
      'a remote $ref',
      { type: 'object', properties: { a: { $ref: 'https://example.test/a.json' } } },
      'external-ref',
    ],
    [
      'a relative $ref',
      { type: 'object', properties: { a: { $ref: 'other.json#/a' } } },
      'external-ref',
    ],
    [
      'a remote $ref in draft-07',
      { $schema: DRAFT_07, type: 'object', properties: { a: { $ref: 'https://x.test/a' } } },
      'external-ref',
    ],
    [
      'a remote $dynamicRef',
      { type: 'object', items: { $dynamicRef: 'https://x.test/#m' } },
      'external-ref',
    ],
    [
      'a remote $recursiveRef (2019-09)',
      { $schema: DRAFT_2019, type: 'object', items: { $recursiveRef: 'https://x.test/' } },
      'external-ref',
    ],
    [
      'an embedded $id',
      { type: 'object', properties: { a: { $id: 'https://x.test/a', type: 'string' } } },
      'embedded-id',
    ],
    [
      'an embedded draft-04 id',
      { $schema: DRAFT_04, type: 'object', properties: { a: { id: 'https://x.test/a' } } },
      'embedded-id',
    ],
  ] as const)('refuses %s', (_name, schema, reason) => {
    try {
      authoritativeSchema('t', 'inputSchema', schema, 'compatible');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(BridgeSchemaError);
      expect((error as BridgeSchemaError).details).toMatchObject({ reason, tool: 't' });
    }
  });

  it.each([
    ['draft-04', DRAFT_04],
    ['draft-06', 'http://json-schema.org/draft-06/schema#'],
    ['draft-07', DRAFT_07],
    ['2019-09', DRAFT_2019],
  ])('refuses %s in strict mode and keeps it in compatible mode', (_name, uri) => {
    const schema = { $schema: uri, type: 'object', properties: { a: { type: 'string' } } };
    expect(() => authoritativeSchema('t', 'inputSchema', schema, 'strict')).toThrow(
      expect.objectContaining({ details: expect.objectContaining({ reason: 'dialect' }) }),
    );
    expect(authoritativeSchema('t', 'inputSchema', schema, 'compatible')).toBe(schema);
  });

  it('keeps the keywords that changed meaning: the validator reads them in the declared dialect', () => {
    const schema = {
      $schema: DRAFT_07,
      type: 'object',
      dependencies: { a: ['b'] },
      properties: {
        t: { type: 'array', items: [{ type: 'string' }], additionalItems: false },
        n: { $ref: '#/definitions/n', type: 'string' },
      },
      definitions: { n: { type: 'number' } },
    };
    expect(authoritativeSchema('t', 'inputSchema', schema, 'compatible')).toBe(schema);
  });

  it('drops a root $id (draft-04: id) so two servers cannot collide', () => {
    expect(
      authoritativeSchema(
        't',
        'inputSchema',
        { $id: 'https://x.test/s', type: 'object' },
        'strict',
      ),
    ).toEqual({ type: 'object' });
    expect(
      authoritativeSchema(
        't',
        'inputSchema',
        { $schema: DRAFT_04, id: 'https://x.test/s', type: 'object' },
        'compatible',
      ),
    ).toEqual({ $schema: DRAFT_04, type: 'object' });
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
