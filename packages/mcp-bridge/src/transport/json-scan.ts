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
      // Find the closing quote: a quote preceded by an even number of backslashes.
      let end = index;
      for (;;) {
        end = text.indexOf('"', end + 1);
        if (end === -1) throw new TransportProtocolError('A record is not valid JSON');
        let backslashes = 0;
        for (let back = end - 1; text.charCodeAt(back) === BACKSLASH; back--) backslashes++;
        if ((backslashes & 1) === 0) break;
      }
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
