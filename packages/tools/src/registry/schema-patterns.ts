// The engine that runs a JSON Schema's regular expressions (`pattern`, `patternProperties`, and
// so `propertyNames` with a `pattern`): ajv's `code.regExp` option. JavaScript's RegExp
// backtracks, so a schema from a server (or any schema, on text a model wrote) with `^(a+)+$`
// can hold the event loop for hours on 40 characters; RE2 (re2js, pure JavaScript) runs in time
// linear in the text.
import type { RE2JS } from 're2js';
import { lazyRequire } from '../internal/lazy-require.js';

// re2js loads when the first pattern is compiled, as ajv does (a schema without patterns never
// loads it).
const re2js = lazyRequire<typeof import('re2js')>('re2js');

/**
 * How {@link AjvSchemaValidator} runs a schema's regular expressions: `linear` (RE2, time linear
 * in the text; a pattern RE2 cannot run is not enforced) or `native` (JavaScript's RegExp with
 * the `u` flag: full syntax, backtracking).
 */
export type SchemaPatternEngine = 'linear' | 'native';

/** What ajv calls with a schema's pattern: a compiled pattern with `test`. */
interface CompiledPattern {
  test(text: string): boolean;
  /** ajv shares compiled patterns of one instance by this text: unique per source and outcome. */
  toString(): string;
}

/** ajv's `code.regExp`: a function from (source, flags) plus the name standalone code would use. */
export interface PatternEngineFunction {
  (source: string, flags: string): CompiledPattern;
  /** The expression ajv's standalone code generator would write (never used here). */
  code: string;
}

/** Why a pattern is not enforced: RE2 cannot run it, or it is over the schema's size budget. */
export type UnenforcedReason = 'unsupported' | 'too-large';

/** What the linear engine asks of the validator that owns it (one validation, one compile at a time). */
export interface PatternEngineHooks {
  /** A pattern is not enforced. */
  unenforced(source: string, reason: UnenforcedReason): void;
  /**
   * Takes `size` RE2 instructions from the budget of the schema being compiled; false (nothing
   * taken) when they do not fit.
   */
  reserveSize(size: number): boolean;
  /** Takes `work` from the budget of the validation in progress; false when it does not fit. */
  spendWork(work: number): boolean;
}

/**
 * ajv's `code.regExp` running patterns with RE2. A pattern JavaScript refuses (with `flags`, `u`)
 * throws, so the schema does not compile, as with the native engine. A pattern valid in
 * JavaScript that RE2 cannot run (lookaround, backreferences, some Unicode property names), or
 * one whose size does not fit the schema's budget (estimated before compiling, so a huge one
 * costs nothing), is not enforced (it matches every text, as an annotation would). A test whose
 * work (the program's size times the text's length) does not fit the validation's budget fails.
 */
export function linearPatternEngine(hooks: PatternEngineHooks): PatternEngineFunction {
  const engine = ((source: string, flags: string): CompiledPattern => {
    // Validity as JavaScript reads it: compiled, never run (parsing is linear in the pattern).
    new RegExp(source, flags);
    const { RE2JS: Engine } = re2js();
    let compiled: RE2JS | undefined;
    let reason: UnenforcedReason = 'unsupported';
    // re2js's translation reads `\k` and `\8` as JavaScript without `u` does (the letter or digit
    // itself), so a backreference is caught here: RE2 has none.
    if (!hasBackreference(source)) {
      const written = asJavaScriptReads(source);
      const estimate = estimatedProgramSize(written);
      if (!hooks.reserveSize(estimate)) {
        reason = 'too-large';
      } else {
        try {
          compiled = Engine.compile(Engine.translateRegExp(written));
        } catch {
          // not enforced, below
        }
        // The estimate is an upper bound; should it fall short, the rest is taken too.
        const extra = compiled === undefined ? 0 : compiled.programSize() - estimate;
        if (extra > 0 && !hooks.reserveSize(extra)) {
          compiled = undefined;
          reason = 'too-large';
        }
      }
    }
    if (compiled === undefined) {
      hooks.unenforced(source, reason);
      const key = `unenforced:/${source}/${flags}`;
      return { test: () => true, toString: () => key };
    }
    const key = `linear:/${source}/${flags}`;
    const pattern = compiled;
    const size = pattern.programSize();
    return {
      test: (text) => hooks.spendWork(size * Math.max(text.length, 1)) && pattern.test(text),
      toString: () => key,
    };
  }) as PatternEngineFunction;
  engine.code = 'linearPatternEngine';
  return engine;
}

/**
 * An upper bound of the RE2 instructions a pattern (as {@link asJavaScriptReads} wrote it)
 * compiles to, read from its text alone: every character, escape character or class counts one
 * (an escape such as `\u{1F600}` counts each character), a group its contents plus two, the
 * alternatives of a group all together, `*`, `+` and `?` one more, and `{m,n}` the repeated atom
 * times the larger count plus that count. RE2 expands counted repetition, so `a{1000}` is 1,002
 * instructions; the estimate lets a huge pattern be refused before it is compiled.
 */
export function estimatedProgramSize(source: string): number {
  // Per open group: the size so far, and the size of its last atom (a quantifier's operand).
  const stack: { size: number; last: number }[] = [{ size: 0, last: 0 }];
  let frame = stack[0] as { size: number; last: number };
  const atom = (size: number): void => {
    frame.size += size;
    frame.last = size;
  };
  const repeat = (times: number, extra: number): void => {
    frame.size += frame.last * (times - 1) + extra;
    frame.last = frame.last * times + extra;
  };
  for (let index = 0; index < source.length; ) {
    const char = source[index] as string;
    if (char === '\\') {
      atom(1);
      index += 2;
    } else if (char === '[') {
      // A class (never nested with the u flag) ends at its first unescaped ].
      let end = index + 1;
      while (end < source.length && source[end] !== ']') end += source[end] === '\\' ? 2 : 1;
      atom(1);
      index = end + 1;
    } else if (char === '(') {
      frame = { size: 0, last: 0 };
      stack.push(frame);
      index += 1;
    } else if (char === ')') {
      const group = stack.length > 1 ? (stack.pop() as { size: number; last: number }) : frame;
      frame = stack.at(-1) as { size: number; last: number };
      atom(group.size + 2);
      index += 1;
    } else if (char === '*' || char === '+' || char === '?') {
      // A lazy `?` after a quantifier counts one more too (an over-estimate, never under).
      repeat(1, 1);
      index += 1;
    } else if (char === '{') {
      const counted = /^\{(\d+)(?:,(\d*))?\}/.exec(source.slice(index, index + 24));
      if (counted === null) {
        atom(1);
        index += 1;
      } else {
        const times = Math.max(Number(counted[1]), Number(counted[2] || 0), 1);
        repeat(times, times);
        index += counted[0].length;
      }
    } else {
      atom(1);
      index += 1;
    }
  }
  let total = 0;
  for (const open of stack) total += open.size + 2;
  return total + 4;
}

/** True when the pattern has an escape `\1`-`\9` or `\k` (a backreference, with the `u` flag). */
function hasBackreference(source: string): boolean {
  for (let index = source.indexOf('\\'); index !== -1; index = source.indexOf('\\', index + 2)) {
    const next = source[index + 1];
    if (next === 'k' || (next !== undefined && next >= '1' && next <= '9')) return true;
  }
  return false;
}

// JavaScript's `\s` (WhiteSpace and LineTerminator: tab, LF, VT, FF, CR, space, U+00A0, U+1680,
// U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000, U+FEFF) as RE2 class ranges, and its
// complement; RE2's own `\s` is ASCII only.
const SPACE =
  '\\x{9}-\\x{D}\\x{20}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}';
const NOT_SPACE =
  '\\x{0}-\\x{8}\\x{E}-\\x{1F}\\x{21}-\\x{9F}\\x{A1}-\\x{167F}\\x{1681}-\\x{1FFF}\\x{200B}-\\x{2027}\\x{202A}-\\x{202E}\\x{2030}-\\x{205E}\\x{2060}-\\x{2FFF}\\x{3001}-\\x{FEFE}\\x{FF00}-\\x{10FFFF}';
/** JavaScript's `.` (any code point but LF, CR, U+2028 and U+2029); RE2's also matches CR and those two. */
const DOT = '[^\\x{A}\\x{D}\\x{2028}\\x{2029}]';
/** A surrogate pair written as two `\u` escapes, which JavaScript with `u` reads as one code point. */
const SURROGATE_PAIR = /^\\u([dD][89abAB][0-9a-fA-F]{2})\\u([dD][c-fC-F][0-9a-fA-F]{2})/;

/**
 * The pattern with the atoms RE2 reads differently from JavaScript (with `u`) written out as
 * JavaScript reads them: `.`, `\s`, `\S`, and a surrogate pair written as two escapes. The
 * pattern is valid JavaScript with `u` (checked before), so a character class never nests and
 * always closes with the first unescaped `]`.
 */
function asJavaScriptReads(source: string): string {
  let out = '';
  let inClass = false;
  for (let index = 0; index < source.length; ) {
    const char = source[index] as string;
    if (char === '\\') {
      const next = source[index + 1];
      if (next === 's' || next === 'S') {
        const ranges = next === 's' ? SPACE : NOT_SPACE;
        out += inClass ? ranges : `[${ranges}]`;
        index += 2;
        continue;
      }
      const pair = next === 'u' ? SURROGATE_PAIR.exec(source.slice(index, index + 12)) : null;
      if (pair !== null) {
        const high = Number.parseInt(pair[1] as string, 16);
        const low = Number.parseInt(pair[2] as string, 16);
        const codePoint = (high - 0xd800) * 0x400 + (low - 0xdc00) + 0x10000;
        out += `\\x{${codePoint.toString(16).toUpperCase()}}`;
        index += 12;
        continue;
      }
      // Any other escape is copied; what follows it (`{...}` of `\u{...}` or `\p{...}`) holds no
      // `.`, `[` or `]` that could be misread below.
      out += source.slice(index, index + 2);
      index += 2;
      continue;
    }
    if (inClass) {
      if (char === ']') inClass = false;
      out += char;
    } else if (char === '[') {
      inClass = true;
      out += char;
    } else {
      out += char === '.' ? DOT : char;
    }
    index += 1;
  }
  return out;
}
