import { ResponseTooComplexError, TransportProtocolError } from './errors.js';
import type { RecordLimits } from './record-limits.js';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

function isNumberChar(code: number): boolean {
  // 0-9 + - . e E
  return (
    (code >= 0x30 && code <= 0x39) ||
    code === 0x2d ||
    code === 0x2b ||
    code === 0x2e ||
    code === 0x65 ||
    code === 0x45
  );
}

function isLetter(code: number): boolean {
  return code >= 0x61 && code <= 0x7a;
}

/**
 * The body of a string that holds escapes, from just after its opening quote: runs of plain
 * characters and escape pairs, at most 4,096 escapes per match so the regular expression's
 * backtracking stack stays small however long the string is (the caller loops). It always
 * matches, and stops at the closing quote, at the next backslash, or at the end of the text.
 */
const STRING_BODY = /(?:[^"\\]*\\[\s\S]){0,4096}[^"\\]*/y;

/**
 * Index of the quote that closes the string opened at `open`, or -1 when it is not closed. A
 * string whose first quote is not preceded by a backslash (the common case) costs one `indexOf`;
 * one with escapes is skipped escape by escape in native regular-expression code, which is about
 * twice as fast on escape-dense text as a JavaScript loop over every quote and backslash.
 */
function stringEnd(text: string, open: number): number {
  const quote = text.indexOf('"', open + 1);
  if (quote === -1 || text.charCodeAt(quote - 1) !== BACKSLASH) return quote;
  let index = open + 1;
  for (;;) {
    STRING_BODY.lastIndex = index;
    STRING_BODY.test(text);
    const next = STRING_BODY.lastIndex;
    const code = text.charCodeAt(next);
    if (code === QUOTE) return next;
    // Stopped at a backslash without progress: a lone backslash ends the text.
    if (code !== BACKSLASH || next === index) return -1;
    index = next;
  }
}

/**
 * One linear pass over a JSON text that bounds its structure before `JSON.parse` sees it:
 * token count (every scalar, key, `{` and `[`), nesting depth, and the length of each numeric
 * token. It does not validate the grammar (the parse does); it only guarantees the parse
 * cannot be made to allocate or recurse beyond the limits.
 */
export function scanJsonStructure(
  text: string,
  limits: Pick<RecordLimits, 'maxRecordTokens' | 'maxRecordDepth' | 'maxNumberBytes'>,
): void {
  const { maxRecordTokens, maxRecordDepth, maxNumberBytes } = limits;
  const length = text.length;
  let tokens = 0;
  let depth = 0;
  let index = 0;
  while (index < length) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) {
      if (++tokens > maxRecordTokens) throw new ResponseTooComplexError('tokens', maxRecordTokens);
      const end = stringEnd(text, index);
      if (end === -1) throw new TransportProtocolError('A record is not valid JSON');
      index = end + 1;
    } else if (code === OPEN_BRACE || code === OPEN_BRACKET) {
      if (++tokens > maxRecordTokens) throw new ResponseTooComplexError('tokens', maxRecordTokens);
      if (++depth > maxRecordDepth) throw new ResponseTooComplexError('depth', maxRecordDepth);
      index++;
    } else if (code === CLOSE_BRACE || code === CLOSE_BRACKET) {
      depth--;
      index++;
    } else if (isNumberChar(code)) {
      if (++tokens > maxRecordTokens) throw new ResponseTooComplexError('tokens', maxRecordTokens);
      const start = index;
      do index++;
      while (index < length && isNumberChar(text.charCodeAt(index)));
      if (index - start > maxNumberBytes)
        throw new ResponseTooComplexError('number', maxNumberBytes);
    } else if (isLetter(code)) {
      if (++tokens > maxRecordTokens) throw new ResponseTooComplexError('tokens', maxRecordTokens);
      do index++;
      while (index < length && isLetter(text.charCodeAt(index)));
    } else {
      // whitespace, ',' and ':' (anything else is left for JSON.parse to refuse)
      index++;
    }
  }
}

/** Scans then parses one record; a grammar error becomes {@link TransportProtocolError}. */
export function parseBoundedJson(
  text: string,
  limits: Pick<RecordLimits, 'maxRecordTokens' | 'maxRecordDepth' | 'maxNumberBytes'>,
): unknown {
  scanJsonStructure(text, limits);
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new TransportProtocolError('A record from the MCP server is not valid JSON', {
      cause: error,
    });
  }
}
