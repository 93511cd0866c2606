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

/**
 * ajv's `code.regExp` running patterns with RE2. A pattern JavaScript refuses (with `flags`, `u`)
 * throws, so the schema does not compile, as with the native engine. A pattern valid in
 * JavaScript that RE2 cannot run (lookaround, backreferences, some Unicode property names) is
 * not enforced (it matches every text, as an annotation would) and handed to `unenforced`.
 */
export function linearPatternEngine(unenforced: (source: string) => void): PatternEngineFunction {
  const engine = ((source: string, flags: string): CompiledPattern => {
    // Validity as JavaScript reads it: compiled, never run (parsing is linear in the pattern).
    new RegExp(source, flags);
    const { RE2JS: Engine } = re2js();
    let compiled: RE2JS | undefined;
    // re2js's translation reads `\k` and `\8` as JavaScript without `u` does (the letter or digit
    // itself), so a backreference is caught here: RE2 has none.
    if (!hasBackreference(source)) {
      try {
        compiled = Engine.compile(Engine.translateRegExp(source));
      } catch {
        // not enforced, below
      }
    }
    if (compiled === undefined) {
      unenforced(source);
      const key = `unenforced:/${source}/${flags}`;
      return { test: () => true, toString: () => key };
    }
    const key = `linear:/${source}/${flags}`;
    const pattern = compiled;
    return { test: (text) => pattern.test(text), toString: () => key };
  }) as PatternEngineFunction;
  engine.code = 'linearPatternEngine';
  return engine;
}

/** True when the pattern has an escape `\1`-`\9` or `\k` (a backreference, with the `u` flag). */
function hasBackreference(source: string): boolean {
  for (let index = source.indexOf('\\'); index !== -1; index = source.indexOf('\\', index + 2)) {
    const next = source[index + 1];
    if (next === 'k' || (next !== undefined && next >= '1' && next <= '9')) return true;
  }
  return false;
}
