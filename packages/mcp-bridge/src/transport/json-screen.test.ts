// The WebAssembly screen may only ever let through what the exact scanner lets through: these
// tests hold it, and the screened scan, to the exact scanner (scanJsonStructureExactly) on
// adversarial tables and on random texts that cross the screen's 64-byte blocks and 65,536-code-unit
// chunks, with multi-byte characters and surrogate pairs split at chunk boundaries.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ResponseTooComplexError } from './errors.js';
import { scanJsonStructure, scanJsonStructureExactly } from './json-scan.js';
import { BLOCK, CHUNK_CHARS, screenAvailable, screenRest } from './json-screen.js';
import { DEFAULT_RECORD_LIMITS, type RecordLimits, resolveRecordLimits } from './record-limits.js';

type StructureLimits = Pick<RecordLimits, 'maxRecordTokens' | 'maxRecordDepth' | 'maxNumberBytes'>;

const SEED = 0x2026_1202;

/** The exact scanner's verdict: 'ok', or the kind of limit broken, or 'invalid'. */
function verdict(scan: (text: string, limits: StructureLimits) => void) {
  return (text: string, limits: StructureLimits): string => {
    try {
      scan(text, limits);
      return 'ok';
    } catch (error) {
      return error instanceof ResponseTooComplexError ? error.kind : 'invalid';
    }
  };
}
const exact = verdict(scanJsonStructureExactly);
const screened = verdict(scanJsonStructure);

/** Screens a whole text from its start, outside any string. */
function screenWhole(text: string, limits: StructureLimits): boolean {
  return screenRest(text, 0, false, 0, 0, limits);
}

const escapeDense = (count: number): string => 'say \\"hi\\" C:\\\\temp\\n'.repeat(count);

describe('screenRest', () => {
  it('runs in this Node (WebAssembly with SIMD)', () => {
    expect(screenAvailable()).toBe(true);
  });

  it.each([
    [
      'a JSON-RPC result',
      '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}',
    ],
    ['escapes of every kind', `["${escapeDense(500)}\\u0022\\/\\b\\f\\r\\t",1,{"k":[2]}]`],
    ['literals and numbers', '[true,false,null,-1.5,0,12]'],
    ['64 levels', `${'['.repeat(64)}${']'.repeat(64)}`],
    ['non-ASCII text', `["héllo 😀 €","${'ü'.repeat(CHUNK_CHARS)}",1]`],
    ['a string across the first chunk', `["${escapeDense(4_000)}",{"a":[1,2,3]}]`],
  ])('vouches for %s within the default limits', (_name, text) => {
    expect(screenWhole(text, DEFAULT_RECORD_LIMITS)).toBe(true);
    expect(exact(text, DEFAULT_RECORD_LIMITS)).toBe('ok');
  });

  // Every row is a text the screen must hand back to the exact scanner.
  const tight = resolveRecordLimits({ maxRecordTokens: 8, maxRecordDepth: 3, maxNumberBytes: 5 });
  const block = (prefix: string): string => prefix.padEnd(BLOCK - 1, ' ');
  // Strings that fill most of a block, each followed by `,<scalar>,`: the bytes outside strings
  // are a few per block, and a scalar is among them. `count` pairs: 2 x count + 1 tokens.
  const spaced = (count: number, scalar = '7'): string =>
    `[${Array.from({ length: count }, () => `"${'x'.repeat(58)}",${scalar}`).join(',')}]`;
  it.each([
    ['one token too many', '[1,2,3,4,5,6,7,8]'],
    ['one level too deep', '[[[[]]]]'],
    ['a six-digit number', '[123456]'],
    ['a number run across a 64-byte block', `${block('[')}123456]`],
    ['a number run across the first chunk', `["${'x'.repeat(CHUNK_CHARS - 5)}",123456]`],
    ['tokens after a long dense string', `["${escapeDense(3_000)}",1,2,3,4,5,6,7]`],
    ['depth after a long dense string', `["${escapeDense(3_000)}",[[[]]]]`],
    ['an unclosed string', '["abc'],
    ['an escaped closing quote', '["abc\\"]'],
    ['an escaped quote at a block boundary', `${block('["')}\\"]`],
    ['an odd backslash run across a block boundary', `${block('["a\\\\\\')}\\"]`],
    ['a backslash outside a string', '[1,\\"a"]'],
    ['a string the letters would close (quote after an odd run)', '["\\\\\\"]'],
    ['numbers among a few separators a block', spaced(5)],
    ['literals among a few separators a block', spaced(5, 'null')],
  ])('hands back %s', (_name, text) => {
    expect(screenWhole(text, tight)).toBe(false);
    expect(screened(text, tight)).toBe(exact(text, tight));
  });

  it.each([
    ['exactly 8 tokens', '[1,2,3,4,5,6,7]'],
    ['exactly 3 levels', '[[[]]]'],
    ['a five-digit number across a block', `${block('[')}12345]`],
    ['an even backslash run across a block boundary', `${block('["a\\\\')}\\\\"]`],
    ['numbers among a few separators a block, within the limit', spaced(3)],
  ])('vouches for %s at the limits', (_name, text) => {
    expect(screenWhole(text, tight)).toBe(true);
    expect(exact(text, tight)).toBe('ok');
  });

  // The skip inside strings: a block with no quote is passed over (two blocks a turn after the
  // first), whatever backslashes it holds, unless its last byte is a backslash. Each row ends a
  // backslash run on or beside the last byte of the first, second or third block, odd (the
  // quote after it is escaped: the string never closes) or even (it closes; two numbers follow).
  const skipRows = [62, 63, 64, 126, 127, 128, 190, 191, 192].flatMap((end) =>
    [1, 2, 3, 4].map((run): [string, string] => {
      const text = `["${'x'.repeat(end - 1 - run)}${'\\'.repeat(run)}","y",1,2]`;
      return [`a run of ${run} ending at byte ${end}`, text];
    }),
  );
  const fourTokens = resolveRecordLimits({ maxRecordTokens: 4 });
  it.each(skipRows)('agrees with the exact scanner on %s', (_name, text) => {
    for (const limits of [DEFAULT_RECORD_LIMITS, fourTokens]) {
      const expected = exact(text, limits);
      expect(screenWhole(text, limits)).toBe(expected === 'ok');
      expect(screened(text, limits)).toBe(expected);
    }
  });

  it('continues from an escape boundary with the counts so far', () => {
    const text = `["${escapeDense(10)}",1,[2]]`;
    const boundary = text.indexOf('C:');
    const limits = resolveRecordLimits({ maxRecordTokens: 5, maxRecordDepth: 2 });
    // `[` and the string are counted (2 tokens, depth 1); 1, `[` and 2 follow: 5 tokens.
    expect(screenRest(text, boundary, true, 2, 1, limits)).toBe(true);
    expect(screenRest(text, boundary, true, 3, 1, limits)).toBe(false);
    expect(screenRest(text, boundary, true, 2, 2, limits)).toBe(false);
  });

  it('reads a surrogate pair split by the chunk boundary as text', () => {
    for (const shift of [-2, -1, 0, 1]) {
      const text = `["${'a'.repeat(CHUNK_CHARS + shift - 2)}😀😀","x",[1]]`;
      expect(screenWhole(text, DEFAULT_RECORD_LIMITS)).toBe(true);
      const two = resolveRecordLimits({ maxRecordTokens: 4 });
      expect(screenWhole(text, two)).toBe(false);
    }
  });
});

/** Pieces that make every edge of the scanners meet: quotes, backslash runs, classes, bytes. */
const PIECES = [
  '"',
  '\\',
  '\\\\',
  '\\"',
  '{',
  '}',
  '[',
  ']',
  ',',
  ':',
  ' ',
  '\n',
  '1',
  '-',
  '+',
  '.',
  'e',
  'E',
  'true',
  'x',
  'ee',
  '1e5',
  '0123456789',
  'é',
  '€',
  '😀',
  '\ud800',
  '\udc00',
  'say \\"hi\\"',
];
const pieces = (maxLength: number) =>
  fc.array(fc.constantFrom(...PIECES), { maxLength, size: 'max' }).map((parts) => parts.join(''));
const limitsArbitrary = fc.record({
  maxRecordTokens: fc.integer({ min: 1, max: 80 }),
  maxRecordDepth: fc.integer({ min: 1, max: 8 }),
  maxNumberBytes: fc.integer({ min: 1, max: 70 }),
});

describe('screenRest against the exact scanner (property)', () => {
  it('never vouches for a short text the exact scanner refuses', () => {
    let vouched = 0;
    fc.assert(
      fc.property(pieces(300), limitsArbitrary, (text, limits) => {
        if (!screenWhole(text, limits)) return;
        vouched++;
        expect(exact(text, limits)).toBe('ok');
      }),
      { seed: SEED, numRuns: 20_000 },
    );
    // Not a vacuous pass: the screen vouched for a share of the texts.
    expect(vouched).toBeGreaterThan(500);
  });

  it('never vouches for a long text the exact scanner refuses, across chunks', () => {
    let vouched = 0;
    // A long run of one unit, most often as a string's body, between random pieces.
    const filler = fc.constantFrom('x', 'é', '😀', '\\"', '\\\\', 'a\\"b', '1', ' ', '[');
    fc.assert(
      fc.property(
        pieces(12),
        fc.boolean(),
        filler,
        fc.integer({ min: CHUNK_CHARS - 70, max: 2 * CHUNK_CHARS + 70 }),
        pieces(12),
        limitsArbitrary,
        (head, quoted, unit, length, tail, limits) => {
          const run = unit.repeat(Math.ceil(length / unit.length));
          const text = quoted ? `${head}"${run}"${tail}` : `${head}${run}${tail}`;
          if (!screenWhole(text, limits)) return;
          vouched++;
          expect(exact(text, limits)).toBe('ok');
        },
      ),
      { seed: SEED, numRuns: 400 },
    );
    expect(vouched).toBeGreaterThan(40);
  });

  it('never changes the verdict of scanJsonStructure on texts with a long dense string', () => {
    const seen = new Set<string>();
    fc.assert(
      fc.property(
        pieces(40),
        fc.integer({ min: 5_000, max: 20_000 }),
        pieces(120),
        limitsArbitrary,
        (head, escapes, tail, limits) => {
          const text = `${head}"${escapeDense(escapes / 10)}${tail}`;
          const expected = exact(text, limits);
          seen.add(expected);
          expect(screened(text, limits)).toBe(expected);
        },
      ),
      { seed: SEED, numRuns: 400 },
    );
    // Every verdict was met: accepted, each limit broken, and not JSON.
    expect([...seen].sort()).toEqual(['depth', 'invalid', 'number', 'ok', 'tokens']);
  });
});

describe('the exact scanner alone where WebAssembly is not available', () => {
  it('gives the same verdicts under node --jitless (no WebAssembly)', () => {
    const module = fileURLToPath(new URL('./json-scan.ts', import.meta.url));
    const script = `
      const { scanJsonStructure } = await import(${JSON.stringify(module)});
      const { screenAvailable } = await import(${JSON.stringify(module.replace('json-scan.ts', 'json-screen.ts'))});
      const dense = 'say \\\\"hi\\\\" '.repeat(2000);
      const verdicts = [screenAvailable()];
      for (const text of ['["' + dense + '",1,2]', '["' + dense + '",1,2,3]']) {
        try { scanJsonStructure(text, { maxRecordTokens: 4, maxRecordDepth: 64, maxNumberBytes: 10 }); verdicts.push('ok'); }
        catch (error) { verdicts.push(error.kind); }
      }
      console.log(JSON.stringify(verdicts));`;
    const child = spawnSync(
      process.execPath,
      ['--jitless', '--import', 'tsx', '--input-type=module', '-e', script],
      {
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(child.stderr).not.toMatch(/Error/);
    expect(JSON.parse(child.stdout.trim())).toEqual([false, 'ok', 'tokens']);
  });
});
