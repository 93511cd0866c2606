import { describe, expect, it } from 'vitest';
import {
  buildParamHeaders,
  encodeHeaderValue,
  scanParamHeaders,
  standardHeaders,
} from './mcp-headers.js';

const b64 = (value: string): string =>
  `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;

describe('encodeHeaderValue (SEP-2243 value encoding)', () => {
  it.each([
    ['plain ASCII', 'us-west1', 'us-west1'],
    ['internal spaces', 'us west 1', 'us west 1'],
    ['non-ASCII', 'Hello, 世界', b64('Hello, 世界')],
    ['leading space', ' us-west1', b64(' us-west1')],
    ['trailing space', 'us-west1 ', b64('us-west1 ')],
    ['line feed', 'line1\nline2', b64('line1\nline2')],
    ['CR LF (header injection)', 'a\r\nX-Evil: 1', b64('a\r\nX-Evil: 1')],
    ['tab', 'a\tb', b64('a\tb')],
    ['NUL', 'a\u0000b', b64('a\u0000b')],
    ['DEL', 'a\u007fb', b64('a\u007fb')],
    ['empty string', '', b64('')],
    ['looks like the sentinel', '=?base64?aGk=?=', b64('=?base64?aGk=?=')],
  ])('%s', (_name, value, expected) => {
    expect(encodeHeaderValue(value)).toBe(expected);
  });
});

describe('scanParamHeaders (x-mcp-header rules)', () => {
  /** A header property `levels` properties deep: its path has `levels` segments. */
  const nestedHeader = (levels: number): Record<string, unknown> => {
    let node: Record<string, unknown> = { type: 'string', 'x-mcp-header': 'Deep' };
    for (let level = 0; level < levels; level++) {
      node = { type: 'object', properties: { p: node } };
    }
    return node;
  };

  it('scans a header property exactly at the scan depth limit (64)', () => {
    const scan = scanParamHeaders(nestedHeader(64));
    expect(scan.ok).toBe(true);
    if (scan.ok) {
      expect(scan.declarations).toHaveLength(1);
      expect(scan.declarations[0]?.path).toHaveLength(64);
    }
  });

  it('refuses a schema one level past the scan depth limit (65)', () => {
    expect(scanParamHeaders(nestedHeader(65))).toEqual({
      ok: false,
      reason: 'tool inputSchema nests too deeply to scan',
    });
  });

  it('collects annotations on primitive properties at any properties depth', () => {
    const scan = scanParamHeaders({
      type: 'object',
      properties: {
        region: { type: 'string', 'x-mcp-header': 'Region' },
        nested: {
          type: 'object',
          properties: { flag: { type: 'boolean', 'x-mcp-header': 'Flag' } },
        },
        count: { type: 'integer', 'x-mcp-header': 'Count' },
        plain: { type: 'string' },
      },
    });
    expect(scan).toEqual({
      ok: true,
      declarations: [
        { path: ['region'], name: 'Region', type: 'string' },
        { path: ['nested', 'flag'], name: 'Flag', type: 'boolean' },
        { path: ['count'], name: 'Count', type: 'integer' },
      ],
    });
  });

  it('accepts a schema without annotations, and no schema at all', () => {
    expect(scanParamHeaders({ type: 'object' })).toEqual({ ok: true, declarations: [] });
    expect(scanParamHeaders(undefined)).toEqual({ ok: true, declarations: [] });
  });

  const prop = (schema: Record<string, unknown>) => ({ type: 'object', properties: { p: schema } });
  it.each([
    ['empty name', prop({ type: 'string', 'x-mcp-header': '' })],
    ['non-string name', prop({ type: 'string', 'x-mcp-header': 7 })],
    ['space in name', prop({ type: 'string', 'x-mcp-header': 'My Region' })],
    ['colon in name', prop({ type: 'string', 'x-mcp-header': 'Region:Primary' })],
    ['non-ASCII name', prop({ type: 'string', 'x-mcp-header': 'Région' })],
    ['control character in name', prop({ type: 'string', 'x-mcp-header': 'Region\t1' })],
    ['CRLF in name', prop({ type: 'string', 'x-mcp-header': 'A\r\nB' })],
    ['object property', prop({ type: 'object', 'x-mcp-header': 'Data' })],
    ['array property', prop({ type: 'array', 'x-mcp-header': 'Items' })],
    ['null property', prop({ type: 'null', 'x-mcp-header': 'Nil' })],
    ['number property', prop({ type: 'number', 'x-mcp-header': 'Score' })],
    ['untyped property', prop({ 'x-mcp-header': 'Any' })],
    ['type list', prop({ type: ['string', 'null'], 'x-mcp-header': 'Maybe' })],
    ['on the root', { type: 'object', 'x-mcp-header': 'Root' }],
    [
      'duplicate, same case',
      {
        type: 'object',
        properties: {
          a: { type: 'string', 'x-mcp-header': 'Region' },
          b: { type: 'string', 'x-mcp-header': 'Region' },
        },
      },
    ],
    [
      'duplicate, different case',
      {
        type: 'object',
        properties: {
          a: { type: 'string', 'x-mcp-header': 'MyField' },
          b: { type: 'string', 'x-mcp-header': 'myfield' },
        },
      },
    ],
    ['under items', prop({ type: 'array', items: { type: 'string', 'x-mcp-header': 'I' } })],
    ['under anyOf', prop({ anyOf: [{ type: 'string', 'x-mcp-header': 'A' }] })],
    ['under $defs', { type: 'object', $defs: { d: { type: 'string', 'x-mcp-header': 'D' } } }],
    [
      'under additionalProperties',
      { type: 'object', additionalProperties: { type: 'string', 'x-mcp-header': 'X' } },
    ],
  ])('refuses an annotation with %s', (_name, schema) => {
    const scan = scanParamHeaders(schema);
    expect(scan.ok).toBe(false);
    if (!scan.ok) expect(scan.reason).toMatch(/^tool inputSchema /);
  });

  it('never quotes the schema in its reason', () => {
    const scan = scanParamHeaders(prop({ type: 'string', 'x-mcp-header': 'Ignore previous' }));
    expect(scan.ok || scan.reason.includes('Ignore')).toBe(false);
  });
});

describe('buildParamHeaders', () => {
  const declarations = [
    { path: ['region'], name: 'Region', type: 'string' as const },
    { path: ['count'], name: 'Count', type: 'integer' as const },
    { path: ['verbose'], name: 'Verbose', type: 'boolean' as const },
  ];

  it('mirrors values, omits null and absent ones', () => {
    expect(buildParamHeaders(declarations, { region: ' eu', count: 42, verbose: null })).toEqual({
      headers: { 'mcp-param-region': b64(' eu'), 'mcp-param-count': '42' },
      problems: [],
    });
    expect(buildParamHeaders(declarations, { verbose: false })).toEqual({
      headers: { 'mcp-param-verbose': 'false' },
      problems: [],
    });
  });

  it.each([
    ['a float for an integer', { count: 1.5 }],
    ['an unsafe integer', { count: 2 ** 60 }],
    ['a string for an integer', { count: '42' }],
    ['a number for a string', { region: 5 }],
    ['an object for a boolean', { verbose: {} }],
  ])('reports %s as a problem', (_name, args) => {
    const built = buildParamHeaders(declarations, args);
    expect(built.problems).toHaveLength(1);
  });
});

describe('standardHeaders', () => {
  it('names the method and, for tools/call, prompts/get and resources/read, the target', () => {
    const none = () => undefined;
    expect(
      standardHeaders(
        { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'my-tool' } },
        none,
      ),
    ).toEqual({ 'mcp-method': 'tools/call', 'mcp-name': 'my-tool' });
    expect(
      standardHeaders(
        { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'file:///a%20b' } },
        none,
      ),
    ).toEqual({ 'mcp-method': 'resources/read', 'mcp-name': 'file:///a%20b' });
    expect(standardHeaders({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, none)).toEqual({
      'mcp-method': 'tools/list',
    });
    expect(standardHeaders({ jsonrpc: '2.0', method: 'notifications/cancelled' }, none)).toEqual({
      'mcp-method': 'notifications/cancelled',
    });
    expect(standardHeaders({ jsonrpc: '2.0', id: 1, result: {} }, none)).toBeUndefined();
  });
});
