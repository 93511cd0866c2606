import { describe, expect, it } from 'vitest';
import { ResponseTooComplexError, TransportProtocolError } from './errors.js';
import { parseBoundedJson, scanJsonStructure } from './json-scan.js';
import { DEFAULT_RECORD_LIMITS, resolveRecordLimits } from './record-limits.js';

const limits = DEFAULT_RECORD_LIMITS;

describe('scanJsonStructure', () => {
  it.each([
    [
      'a JSON-RPC result',
      '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}',
    ],
    ['escaped quotes and backslashes', '{"a":"x\\"y\\\\","b":"\\\\\\""}'],
    ['numbers with exponents', '[1,-2.5e+10,3E-2,0]'],
    ['literals', '[true,false,null]'],
    ['exactly 64 levels', `${'['.repeat(64)}${']'.repeat(64)}`],
  ])('accepts %s', (_name, text) => {
    expect(() => scanJsonStructure(text, limits)).not.toThrow();
    expect(parseBoundedJson(text, limits)).toEqual(JSON.parse(text));
  });

  it.each([
    ['65 nested arrays', `${'['.repeat(65)}${']'.repeat(65)}`, 'depth', 64],
    ['65 nested objects', `${'{"a":'.repeat(65)}1${'}'.repeat(65)}`, 'depth', 64],
    ['20,002 scalars', `[${Array(20_001).fill('1').join(',')}]`, 'tokens', 20_001],
    ['20,002 empty strings', `[${Array(20_001).fill('""').join(',')}]`, 'tokens', 20_001],
    ['a 65,537-digit number', `[${'9'.repeat(65_537)}]`, 'number', 65_536],
  ])('refuses %s', (_name, text, kind, limit) => {
    let caught: unknown;
    try {
      scanJsonStructure(text, limits);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ResponseTooComplexError);
    expect((caught as ResponseTooComplexError).kind).toBe(kind);
    expect((caught as ResponseTooComplexError).limit).toBe(limit);
  });

  it('counts exactly 20,001 tokens as allowed', () => {
    const text = `[${Array(20_000).fill('1').join(',')}]`;
    expect(() => scanJsonStructure(text, limits)).not.toThrow();
  });

  it('applies configured limits', () => {
    const tight = resolveRecordLimits({ maxRecordTokens: 3, maxRecordDepth: 2, maxNumberBytes: 2 });
    expect(() => scanJsonStructure('[1,2,3]', tight)).toThrow(ResponseTooComplexError);
    expect(() => scanJsonStructure('[[[]]]', tight)).toThrow(ResponseTooComplexError);
    expect(() => scanJsonStructure('[123]', tight)).toThrow(ResponseTooComplexError);
    expect(() => scanJsonStructure('[12]', tight)).not.toThrow();
  });

  it.each([
    ['10,000 escaped quotes (more than one regular-expression match)', '\\"'.repeat(10_000)],
    ['escaped backslashes before the closing quote', `${'\\\\'.repeat(5_000)}x\\\\`],
    ['a mix of escapes', 'say \\"hi\\" C:\\\\temp\\n\\t\\u0022'.repeat(2_000)],
  ])('skips a string of %s and counts what follows it', (_name, body) => {
    const text = `{"a":"${body}","b":[1,2]}`;
    expect(parseBoundedJson(text, limits)).toEqual(JSON.parse(text));
    const tight = resolveRecordLimits({ maxRecordTokens: 7 });
    expect(() => scanJsonStructure(text, tight)).not.toThrow();
    let caught: unknown;
    try {
      scanJsonStructure(`${text.slice(0, -1)},"c":3}`, tight);
    } catch (error) {
      caught = error;
    }
    expect((caught as ResponseTooComplexError).kind).toBe('tokens');
  });

  it('skips an 8 MiB string of escaped quotes without overflowing the regular-expression stack', () => {
    const text = `["${'\\"'.repeat(4 * 1024 * 1024 - 8)}"]`;
    expect(() => scanJsonStructure(text, limits)).not.toThrow();
  });

  it.each([
    ['a lone backslash at the end', '["abc\\'],
    ['an escaped closing quote at the end', '["abc\\"'],
    ['escapes then the end', `["${'\\"'.repeat(5_000)}`],
  ])('refuses %s as unterminated', (_name, text) => {
    expect(() => scanJsonStructure(text, limits)).toThrow(TransportProtocolError);
  });

  it('refuses an unterminated string as a protocol error', () => {
    expect(() => scanJsonStructure('{"a":"b', limits)).toThrow(TransportProtocolError);
  });

  it('turns a grammar error into a protocol error without the text', () => {
    expect(() => parseBoundedJson('{"secret": tru}', limits)).toThrow(TransportProtocolError);
  });

  it.each([
    ['a boolean', true],
    ['zero', 0],
    ['a string', '10'],
    ['a fraction', 1.5],
    ['NaN', Number.NaN],
  ])('refuses %s as a limit', (_name, value) => {
    expect(() => resolveRecordLimits({ maxRecordTokens: value as number })).toThrow(
      /positive integer/,
    );
  });
});
