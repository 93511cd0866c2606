// Fuzz of the structural scanner against JSON.parse and an independent tokenizer: 20,000 random
// valid JSON texts and 30,000 mutated ones, with a fixed seed and a bounded run time. Properties:
// no false block (a valid text within the limits parses to what JSON.parse gives) and no
// over-limit accept (a valid text over a limit is refused with the limit it broke), and on any
// input only a typed transport error, never a raw SyntaxError or a crash.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ResponseTooComplexError, TransportProtocolError } from './errors.js';
import { parseBoundedJson } from './json-scan.js';
import type { RecordLimits } from './record-limits.js';

type StructureLimits = Pick<RecordLimits, 'maxRecordTokens' | 'maxRecordDepth' | 'maxNumberBytes'>;

const SEED = 0x15_2026;
/** Each property must finish its runs within this time, or the test fails (never a silent cut). */
const TIME_LIMIT_MS = 60_000;

interface Measure {
  readonly tokens: number;
  readonly depth: number;
  readonly longestNumber: number;
}

const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;

/**
 * Measures a text JSON.parse accepted, as the scanner's limits define it (each string, number,
 * literal, `{` and `[` is one token), with a grammar-aware tokenizer: strings are read escape by
 * escape and numbers by the JSON number grammar, unlike the scanner's byte classes.
 */
function measure(text: string): Measure {
  let tokens = 0;
  let depth = 0;
  let deepest = 0;
  let longestNumber = 0;
  let index = 0;
  while (index < text.length) {
    const char = text[index] as string;
    if (char === '"') {
      tokens++;
      index++;
      while (text[index] !== '"') index += text[index] === '\\' ? 2 : 1;
      index++;
    } else if (char === '{' || char === '[') {
      tokens++;
      depth++;
      deepest = Math.max(deepest, depth);
      index++;
    } else if (char === '}' || char === ']') {
      depth--;
      index++;
    } else if (char === '-' || (char >= '0' && char <= '9')) {
      NUMBER.lastIndex = index;
      const match = NUMBER.exec(text);
      if (match === null) throw new Error(`no number at ${index} of a valid text`);
      tokens++;
      longestNumber = Math.max(longestNumber, match[0].length);
      index += match[0].length;
    } else if (char === 't' || char === 'n') {
      tokens++;
      index += 4;
    } else if (char === 'f') {
      tokens++;
      index += 5;
    } else {
      index++; // whitespace, ',' and ':'
    }
  }
  return { tokens, depth: deepest, longestNumber };
}

/** The limits a measured text breaks (empty when it is within all of them). */
function broken(measured: Measure, limits: StructureLimits): string[] {
  const kinds: string[] = [];
  if (measured.tokens > limits.maxRecordTokens) kinds.push('tokens');
  if (measured.depth > limits.maxRecordDepth) kinds.push('depth');
  if (measured.longestNumber > limits.maxNumberBytes) kinds.push('number');
  return kinds;
}

function tryJsonParse(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

// ---- generators of JSON text (not values: numbers and whitespace keep their exact spelling)

const whitespace = fc.constantFrom('', '', '', ' ', '\n', '\t', '\r\n', '  ', ' \r ');

const stringPiece = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('a', 'é', '€', '\u{1f600}', '\u2028', '\ufeff', ' ') },
  {
    weight: 3,
    arbitrary: fc.constantFrom('[', ']', '{', '}', ':', ',', '1', '-', 'e', 't', '/', "'"),
  },
  {
    weight: 4,
    arbitrary: fc.constantFrom(
      '\\"',
      '\\\\',
      '\\/',
      '\\b',
      '\\f',
      '\\n',
      '\\r',
      '\\t',
      '\\u0022',
      '\\u005c',
      '\\u005C',
      '\\\\\\"',
      '\\ud83d\\ude00',
      '\\u0000',
    ),
  },
  {
    weight: 2,
    // any code unit, escaped where JSON requires it (lone surrogates included)
    arbitrary: fc
      .string({ unit: 'binary', minLength: 1, maxLength: 1 })
      .map((char) => JSON.stringify(char).slice(1, -1)),
  },
);

/**
 * Runs that drive the scanner's two string-skipping paths: a run of escaped backslashes before an
 * escaped quote (odd and even runs of backslash characters before a quote), a dense stretch of
 * escaped quotes (the regular-expression path starts once their mean gap is under 16 code
 * units) and sparse escaped quotes (the indexOf path).
 */
const escapeRun = fc.oneof(
  fc
    .tuple(fc.integer({ min: 0, max: 6 }), fc.boolean())
    .map(([pairs, quote]) => `${'\\\\'.repeat(pairs)}${quote ? '\\"' : ''}`),
  fc.integer({ min: 1, max: 40 }).map((count) => '\\"'.repeat(count)),
  fc
    .tuple(fc.integer({ min: 1, max: 6 }), fc.integer({ min: 17, max: 40 }))
    .map(([count, gap]) => `${'x'.repeat(gap)}\\"`.repeat(count)),
);

const stringText = fc
  .array(fc.oneof({ weight: 5, arbitrary: stringPiece }, { weight: 1, arbitrary: escapeRun }), {
    maxLength: 6,
  })
  .map((pieces) => `"${pieces.join('')}"`);

const digits = (min: number, max: number): fc.Arbitrary<string> =>
  fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });

const numberText = fc
  .tuple(
    fc.constantFrom('', '', '-'),
    fc.oneof(
      fc.constant('0'),
      fc.tuple(fc.constantFrom(...'123456789'), digits(0, 9)).map(([a, b]) => a + b),
    ),
    fc.option(
      digits(1, 6).map((fraction) => `.${fraction}`),
      { nil: '' },
    ),
    fc.option(
      fc
        .tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), digits(1, 4))
        .map((parts) => parts.join('')),
      { nil: '' },
    ),
  )
  .map((parts) => parts.join(''));

const literalText = fc.constantFrom('true', 'false', 'null');

const { value: valueText } = fc.letrec<{ value: string; array: string; object: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    stringText,
    numberText,
    literalText,
    tie('array'),
    tie('object'),
  ),
  array: fc
    .tuple(whitespace, fc.array(fc.tuple(tie('value'), whitespace), { maxLength: 5 }), whitespace)
    .map(
      ([before, items, after]) =>
        `[${before}${items.map(([item, space]) => item + space).join(',')}${after}]`,
    ),
  object: fc
    .tuple(
      whitespace,
      fc.array(fc.tuple(stringText, whitespace, tie('value')), { maxLength: 5 }),
      whitespace,
    )
    .map(
      ([before, members, after]) =>
        `{${before}${members.map(([key, space, value]) => `${key}${space}:${value}`).join(',')}${after}}`,
    ),
}));

/** A value, sometimes wrapped in a run of arrays and objects to reach deeper nesting. */
const jsonText = fc
  .tuple(
    whitespace,
    valueText,
    fc.array(fc.constantFrom('array', 'object'), { maxLength: 9 }),
    whitespace,
  )
  .map(([before, inner, wrappers, after]) => {
    let text = inner;
    for (const wrapper of wrappers) text = wrapper === 'array' ? `[${text}]` : `{"k":${text}}`;
    return before + text + after;
  });

/** Tight limits around the sizes the generators reach, so both sides of every limit are hit. */
const limitsArbitrary: fc.Arbitrary<StructureLimits> = fc.record({
  maxRecordTokens: fc.integer({ min: 1, max: 60 }),
  maxRecordDepth: fc.integer({ min: 1, max: 10 }),
  maxNumberBytes: fc.integer({ min: 1, max: 16 }),
});

const interesting = fc.constantFrom(
  ...'"\\[]{},:0123456789-+.eEtrufalsn \t\r\n/u',
  '\u00a0',
  '\ufeff',
  '\u2028',
  '\u0000',
  'é',
  '\ud800',
  // several characters at once: a backslash pair, an escaped quote, an even run before a quote
  '\\\\',
  '\\"',
  '\\\\"',
  '\\\\\\"',
);

type Mutation =
  | { readonly kind: 'insert'; readonly at: number; readonly text: string }
  | { readonly kind: 'delete'; readonly at: number; readonly length: number }
  | { readonly kind: 'replace'; readonly at: number; readonly text: string }
  | { readonly kind: 'duplicate'; readonly at: number; readonly length: number }
  | { readonly kind: 'truncate'; readonly at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), text: interesting }),
  fc.record({
    kind: fc.constant('delete' as const),
    at: fc.nat(),
    length: fc.integer({ min: 1, max: 3 }),
  }),
  fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), text: interesting }),
  fc.record({
    kind: fc.constant('duplicate' as const),
    at: fc.nat(),
    length: fc.integer({ min: 1, max: 12 }),
  }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
);

function mutate(text: string, mutations: readonly Mutation[]): string {
  let result = text;
  for (const change of mutations) {
    const at = change.at % (result.length + 1);
    switch (change.kind) {
      case 'insert':
        result = result.slice(0, at) + change.text + result.slice(at);
        break;
      case 'delete':
        result = result.slice(0, at) + result.slice(at + change.length);
        break;
      case 'replace':
        result = result.slice(0, at) + change.text + result.slice(at + 1);
        break;
      case 'duplicate':
        result = result.slice(0, at + change.length) + result.slice(at);
        break;
      case 'truncate':
        result = result.slice(0, at);
        break;
    }
  }
  return result;
}

/** Checks one input against JSON.parse and the tokenizer; returns what kind of input it was. */
function check(text: string, limits: StructureLimits): 'within' | 'over' | 'invalid' {
  const reference = tryJsonParse(text);
  let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, value: parseBoundedJson(text, limits) };
  } catch (error) {
    outcome = { ok: false, error };
  }
  if (!outcome.ok) {
    // only the two typed errors, never a raw SyntaxError, RangeError or TypeError
    const typed =
      outcome.error instanceof ResponseTooComplexError ||
      outcome.error instanceof TransportProtocolError;
    if (!typed) throw new Error(`untyped failure: ${String(outcome.error)}`);
  }
  if (!reference.ok) {
    expect(outcome.ok, 'an invalid text was accepted').toBe(false);
    return 'invalid';
  }
  const exceeded = broken(measure(text), limits);
  if (exceeded.length === 0) {
    // no false block
    if (!outcome.ok)
      throw new Error(`a valid text within the limits was refused: ${outcome.error}`);
    expect(outcome.value).toEqual(reference.value);
    return 'within';
  }
  // no over-limit accept, and the refusal names a limit the text really breaks
  expect(outcome.ok, `a text over ${exceeded.join(', ')} was accepted`).toBe(false);
  const error = (outcome as { error: unknown }).error;
  expect(error).toBeInstanceOf(ResponseTooComplexError);
  expect(exceeded).toContain((error as ResponseTooComplexError).kind);
  return 'over';
}

describe('scanJsonStructure fuzz (fixed seed)', () => {
  it('20,000 random valid JSON texts: no false block, no over-limit accept', () => {
    const seen = { within: 0, over: 0, invalid: 0 };
    fc.assert(
      fc.property(jsonText, limitsArbitrary, (text, limits) => {
        expect(tryJsonParse(text).ok, 'the generator made an invalid text').toBe(true);
        seen[check(text, limits)]++;
      }),
      {
        seed: SEED,
        numRuns: 20_000,
        interruptAfterTimeLimit: TIME_LIMIT_MS,
        markInterruptAsFailure: true,
      },
    );
    // both sides of the limits were exercised (the property cannot pass vacuously)
    expect(seen.invalid).toBe(0);
    expect(seen.within).toBeGreaterThan(4000);
    expect(seen.over).toBeGreaterThan(4000);
  }, 120_000);

  it('30,000 mutated inputs: JSON.parse decides validity, the limits still hold, errors are typed', () => {
    const seen = { within: 0, over: 0, invalid: 0 };
    fc.assert(
      fc.property(
        jsonText,
        fc.array(mutation, { minLength: 1, maxLength: 4 }),
        limitsArbitrary,
        (text, mutations, limits) => {
          seen[check(mutate(text, mutations), limits)]++;
        },
      ),
      {
        seed: SEED + 1,
        numRuns: 30_000,
        interruptAfterTimeLimit: TIME_LIMIT_MS,
        markInterruptAsFailure: true,
      },
    );
    expect(seen.invalid).toBeGreaterThan(3000);
    expect(seen.within + seen.over).toBeGreaterThan(1500);
  }, 120_000);

  it('agrees with the tokenizer at the default limits on larger texts', () => {
    const limits = { maxRecordTokens: 20_001, maxRecordDepth: 64, maxNumberBytes: 65_536 };
    const wide = `[${Array.from({ length: 20_000 }, (_, index) => String(index)).join(',')}]`;
    expect(check(wide, limits)).toBe('within');
    expect(check(wide.replace(']', ',1]'), limits)).toBe('over');
  });
});
