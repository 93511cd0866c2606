import { ResponseTooComplexError, TransportProtocolError } from './errors.js';
import { screenRest } from './json-screen.js';
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

/** A run of characters that are neither a quote nor a backslash. */
const PLAIN_RUN = String.raw`[^"\\]*`;

/** One run of plain characters then one escape pair, inside a string. */
const RUN_THEN_ESCAPE = String.raw`${PLAIN_RUN}\\[\s\S]`;

/** Turns of four escapes in one {@link STRING_BODY} match. */
const TURNS_PER_MATCH = 1024;

/** The most escapes one {@link STRING_BODY} match consumes. */
const ESCAPES_PER_MATCH = 4 * TURNS_PER_MATCH + 3;

/**
 * The body of a string that holds escapes, from an escape boundary inside it: runs of plain
 * characters and escape pairs, at most {@link ESCAPES_PER_MATCH} escapes per match so the
 * regular expression's backtracking stack stays small however long the string is (the caller
 * loops). It always matches, and stops at the closing quote, at the next backslash, or at the
 * end of the text. The loop takes four escapes a turn (then up to three more): each turn of a
 * counted group costs a counter and a backtrack entry, and on escape-dense text that
 * bookkeeping, not the characters, was most of the time (four a turn scans about 11% faster
 * than one).
 */
const STRING_BODY = new RegExp(
  `(?:${RUN_THEN_ESCAPE.repeat(4)}){0,${TURNS_PER_MATCH}}(?:${RUN_THEN_ESCAPE}){0,3}${PLAIN_RUN}`,
  'y',
);

/**
 * Below this mean distance (in UTF-16 code units) between the escaped quotes of one string,
 * skipping its escapes in native regular-expression code (about 0.6 ns a code unit) is cheaper
 * than one `indexOf` call per quote (about 10 ns a call, memchr between calls).
 */
const DENSE_QUOTE_GAP = 16;

/**
 * With at least this many UTF-16 code units left after a dense string's escape boundary, the rest
 * of the record is handed to the WebAssembly screen ({@link screenRest}, 0.1 to 0.3 ns a byte on
 * any shape) instead of {@link STRING_BODY} (about 0.5 ns a code unit on dense escapes); below
 * it, starting the screen costs more than it saves.
 */
const SCREEN_MIN_CHARS = 4096;

/**
 * What {@link stringEnd} returns for the escape boundary `boundary` where it stopped to offer a
 * dense string's rest to the screen: below -1, so never an index or "not closed". It is its own
 * inverse: `screenAt(end)` gives the boundary back.
 */
function screenAt(boundary: number): number {
  return -2 - boundary;
}

/**
 * Whether the quote at `quote` is escaped: preceded by an odd run of backslashes. Inside a
 * string a backslash always escapes the character after it, so a run of backslashes pairs up
 * from its first one (the character before the run is not a backslash: another character or the
 * opening quote); the quote is escaped exactly when one backslash is left over. The run belongs
 * to this quote alone, so walking it back costs each backslash of a text at most once.
 */
function quoteIsEscaped(text: string, quote: number): boolean {
  let before = quote - 1;
  while (text.charCodeAt(before) === BACKSLASH) before--;
  return ((quote - before) & 1) === 0;
}

/**
 * Index of the quote that closes the string opened at `open`, or -1 when it is not closed. With
 * `screen`, where the string turns dense and more than {@link SCREEN_MIN_CHARS} are left, it
 * returns {@link screenAt} of that escape boundary instead (the caller may run the screen from
 * there, or call again without `screen`).
 * Exact on any text (not only valid JSON): the closing quote is the first quote after `open` that
 * {@link quoteIsEscaped} says is not escaped, and both paths below find exactly that one.
 *
 * - Sparse quotes (the common case: no escaped quote, or a few in prose): jump from quote to
 *   quote with `indexOf` (memchr) and decide each by its backslash run. A string with no
 *   escaped quote costs one `indexOf`.
 * - Dense escaped quotes (source code, JSON inside JSON): when the mean gap between escaped
 *   quotes drops below {@link DENSE_QUOTE_GAP}, skip up to 4,099 escapes at a time in
 *   {@link STRING_BODY}, starting just after an escaped quote (an escape boundary), then go back
 *   to `indexOf` from where it stopped, so a dense stretch never makes a sparse one per-character.
 */
function stringEnd(text: string, open: number, screen: boolean): number {
  let from = open + 1;
  // Running mean of the gaps between escaped quotes, starting sparse.
  let meanGap = 4 * DENSE_QUOTE_GAP;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote === -1 || !quoteIsEscaped(text, quote)) return quote;
    meanGap = (3 * meanGap + (quote - from)) / 4;
    if (meanGap >= DENSE_QUOTE_GAP) {
      from = quote + 1;
      continue;
    }
    if (screen && text.length - quote > SCREEN_MIN_CHARS) return screenAt(quote + 1);
    STRING_BODY.lastIndex = quote + 1;
    STRING_BODY.test(text);
    const stop = STRING_BODY.lastIndex;
    const code = text.charCodeAt(stop);
    // It consumed escapes in pairs, so a quote where it stopped is not escaped.
    if (code === QUOTE) return stop;
    if (code !== BACKSLASH) return -1; // the end of the text
    // 4,099 escapes consumed: a quote after `stop` is decided by its own run again. A chunk that
    // spanned a sparse stretch sends the next quotes back to `indexOf`.
    if (stop - quote > ESCAPES_PER_MATCH * DENSE_QUOTE_GAP) meanGap = 4 * DENSE_QUOTE_GAP;
    from = stop;
  }
}

/**
 * One linear pass over a JSON text that bounds its structure before `JSON.parse` sees it:
 * token count (every scalar, key, `{` and `[`), nesting depth, and the length of each numeric
 * token. It does not validate the grammar (the parse does); it only guarantees the parse
 * cannot be made to allocate or recurse beyond the limits.
 *
 * Where a long text holds a string dense with escapes, the rest of the text is offered once to
 * a WebAssembly screen (internal): when it answers that the rest is certainly within the
 * limits, the scan ends there; otherwise the scan goes on here exactly as it would have, so
 * every refusal, and its kind, is this function's own.
 */
export function scanJsonStructure(
  text: string,
  limits: Pick<RecordLimits, 'maxRecordTokens' | 'maxRecordDepth' | 'maxNumberBytes'>,
): void {
  scanStructure(text, limits, text.length > SCREEN_MIN_CHARS);
}

/**
 * {@link scanJsonStructure} without the screen: the exact scanner alone (internal; the tests hold
 * the screened scan to it).
 */
export function scanJsonStructureExactly(
  text: string,
  limits: Pick<RecordLimits, 'maxRecordTokens' | 'maxRecordDepth' | 'maxNumberBytes'>,
): void {
  scanStructure(text, limits, false);
}

function scanStructure(
  text: string,
  limits: Pick<RecordLimits, 'maxRecordTokens' | 'maxRecordDepth' | 'maxNumberBytes'>,
  screenable: boolean,
): void {
  const { maxRecordTokens, maxRecordDepth, maxNumberBytes } = limits;
  const length = text.length;
  let tokens = 0;
  let depth = 0;
  let index = 0;
  let screen = screenable;
  while (index < length) {
    const code = text.charCodeAt(index);
    if (code === QUOTE) {
      if (++tokens > maxRecordTokens) throw new ResponseTooComplexError('tokens', maxRecordTokens);
      let end = stringEnd(text, index, screen);
      if (end < -1) {
        // Offered once a record: a screen that cannot vouch for the rest costs one pass at most.
        screen = false;
        if (screenRest(text, screenAt(end), true, tokens, depth, limits)) return;
        end = stringEnd(text, index, false);
      }
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
