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

  it('skips an 8 MiB run of backslashes before a closing quote (no regular-expression stack)', () => {
    const run = '\\'.repeat(4 * 1024 * 1024);
    expect(() => scanJsonStructure(`["${run}"]`, limits)).not.toThrow();
    expect(() => scanJsonStructure(`["${run}\\"]`, limits)).toThrow(TransportProtocolError);
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

/** `unit` repeated `count` times. */
function repeat(unit: string, count: number): string {
  return unit.repeat(count);
}

/**
 * The differential check of the string-skipping paths: the scan's verdict agrees with JSON.parse
 * (a text JSON.parse accepts parses to the same value, one it refuses is refused with a typed
 * error), and when the text is valid the string is exactly one token: the tokens after it are
 * counted, so `tokens` tokens pass and `tokens - 1` are refused.
 */
function agreesWithJsonParse(text: string, tokens: number): void {
  let reference: { ok: true; value: unknown } | { ok: false };
  try {
    reference = { ok: true, value: JSON.parse(text) };
  } catch {
    reference = { ok: false };
  }
  if (!reference.ok) {
    let caught: unknown;
    try {
      parseBoundedJson(text, limits);
    } catch (error) {
      caught = error;
    }
    expect(
      caught instanceof TransportProtocolError || caught instanceof ResponseTooComplexError,
    ).toBe(true);
    return;
  }
  expect(parseBoundedJson(text, limits)).toEqual(reference.value);
  expect(() =>
    scanJsonStructure(text, resolveRecordLimits({ maxRecordTokens: tokens })),
  ).not.toThrow();
  let caught: unknown;
  try {
    scanJsonStructure(text, resolveRecordLimits({ maxRecordTokens: tokens - 1 }));
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(ResponseTooComplexError);
  expect((caught as ResponseTooComplexError).kind).toBe('tokens');
}

/** `["<body>",1,{"k":[2]}]`: 7 tokens when valid (`[`, the string, 1, `{`, "k", `[`, 2). */
function wrapped(body: string): string {
  return `["${body}",1,{"k":[2]}]`;
}
const WRAPPED_TOKENS = 7;

describe('scanJsonStructure string skipping (odd and even backslash runs)', () => {
  // A run of `run` backslashes before a quote: an even run leaves the quote closing the string,
  // an odd run escapes it (then a second quote closes the string, so both texts are valid).
  const runs = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 16, 17];
  const tail = (run: number): string => `${repeat('\\', run)}"${run % 2 === 1 ? '"' : ''}`;

  it.each(runs)('a run of %i backslashes before the first quote (sparse path)', (run) => {
    const text = `["abc${tail(run)},1,{"k":[2]}]`;
    agreesWithJsonParse(text, WRAPPED_TOKENS);
  });

  it.each(runs)('a run of %i backslashes after 100 escaped quotes (dense path)', (run) => {
    const text = `["${repeat('\\"', 100)}${tail(run)},1,{"k":[2]}]`;
    agreesWithJsonParse(text, WRAPPED_TOKENS);
  });

  it.each(runs)('a run of %i backslashes after sparse escaped quotes (gaps over 16)', (run) => {
    const text = `["${repeat(`${'x'.repeat(40)}\\"`, 50)}${tail(run)},1,{"k":[2]}]`;
    agreesWithJsonParse(text, WRAPPED_TOKENS);
  });

  // The dense path skips escapes four a turn, up to 4,099 per regular-expression match, then
  // looks for the next quote again: put the closing run at every remainder of four, and just
  // before, on and after the 4,099 boundary (the first match starts after the fourth escaped
  // quote or so, hence the spread).
  const boundaries = [
    5, 6, 7, 8, 9, 10, 11, 12, 4090, 4096, 4099, 4100, 4101, 4102, 4103, 4104, 4106, 8198, 8202,
    8205, 8206,
  ];
  it.each(boundaries.flatMap((count) => [0, 1, 2, 3].map((run) => [count, run] as const)))(
    '%i escaped quotes then a run of %i backslashes (the 4,099-escape boundary)',
    (count, run) => {
      const text = `["${repeat('\\"', count)}${tail(run)},1,{"k":[2]}]`;
      agreesWithJsonParse(text, WRAPPED_TOKENS);
    },
  );

  it.each(boundaries.flatMap((count) => [2, 3, 4, 5].map((run) => [count, run] as const)))(
    '%i escaped backslashes then a run of %i more before a quote',
    (count, run) => {
      const text = `["${repeat('\\"', 8)}${repeat('\\\\', count)}${tail(run)},1,{"k":[2]}]`;
      agreesWithJsonParse(text, WRAPPED_TOKENS);
    },
  );

  it.each([
    ['an escaped quote as \\u0022', '\\u0022'],
    ['a backslash as \\u005c before the closing quote', 'abc\\u005c'],
    ['a backslash as \\u005C after escaped quotes', `${repeat('\\"', 40)}\\u005C`],
    ['\\u0022 among dense escaped quotes', repeat('\\"\\u0022', 40)],
    ['a surrogate pair escape', '\\ud83d\\ude00\\"'],
    ['characters whose low byte is a quote or a backslash', '\u0122\u225c\u5c22\\"\u0122'],
    ['non-Latin-1 text with escaped quotes', repeat('€ \\"日本\\" 😀', 30)],
    [
      'a dense stretch, a long sparse one, then a dense one',
      `${repeat('\\"', 20)}${repeat(`${'y'.repeat(20)}\\n`, 5000)}${repeat('\\"', 20)}\\\\`,
    ],
    ['JSON inside JSON', repeat('{\\"a\\":[\\"x\\",\\"y\\\\\\"z\\"],\\"b\\":null}', 200)],
  ])('skips a string holding %s', (_name, body) => {
    agreesWithJsonParse(wrapped(body), WRAPPED_TOKENS);
  });

  it.each([
    ['an invalid escape \\x', 'a\\x'],
    ['an invalid escape after dense escaped quotes', `${repeat('\\"', 100)}\\x`],
    ['an invalid escape after sparse escaped quotes', `${repeat(`${'x'.repeat(40)}\\"`, 50)}\\q`],
    ['a short unicode escape', '\\u12'],
    ['a short unicode escape after dense escaped quotes', `${repeat('\\"', 100)}\\u00`],
    ['a raw newline', 'a\nb'],
    ['a raw newline after dense escaped quotes', `${repeat('\\"', 100)}\n`],
    ['a raw tab after an escaped quote', '\\"\t'],
    ['a raw NUL', 'a\u0000b'],
    ['a backslash before a raw newline', `${repeat('\\"', 100)}\\\n`],
    ['an escaped single quote', "\\'"],
  ])('refuses a string holding %s, as JSON.parse does', (_name, body) => {
    const text = wrapped(body);
    expect(() => JSON.parse(text)).toThrow(SyntaxError);
    expect(() => parseBoundedJson(text, limits)).toThrow(TransportProtocolError);
  });

  it.each([
    ['dense escaped quotes', `["${repeat('\\"', 5000)}`],
    ['dense escaped quotes then a lone backslash', `["${repeat('\\"', 5000)}\\`],
    ['4,096 escapes then a lone backslash', `["${repeat('\\"', 8)}${repeat('\\n', 4096)}\\`],
    ['4,099 escapes then a lone backslash', `["${repeat('\\"', 8)}${repeat('\\n', 4099)}\\`],
    ['sparse escaped quotes', `["${repeat(`${'x'.repeat(40)}\\"`, 50)}`],
    ['an odd run of backslashes before the last quote', `["abc${repeat('\\', 7)}"`],
    ['an odd run after dense escaped quotes', `["${repeat('\\"', 100)}${repeat('\\', 9)}"`],
  ])('refuses a string left open after %s', (_name, text) => {
    expect(() => scanJsonStructure(text, limits)).toThrow(TransportProtocolError);
  });

  it('still counts the tokens after every kind of string in one record', () => {
    const bodies = [
      'plain',
      repeat('\\"', 300),
      repeat(`${'x'.repeat(40)}\\"`, 30),
      `${repeat('\\"', 50)}\\\\\\\\`,
      '\\u0022\\\\',
    ];
    const text = `[${bodies.map((body) => `"${body}",[1]`).join(',')}]`;
    // `[`, then per body: the string, `[`, 1
    agreesWithJsonParse(text, 1 + bodies.length * 3);
  });
});
