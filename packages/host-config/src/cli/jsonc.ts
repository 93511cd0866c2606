// VS Code's config files are JSONC (comments and trailing commas allowed), and users add comments
// to others too. The installer reads them all as JSONC; it never writes a file whose comments the
// write would drop (JSON.stringify cannot keep them).

/** JSON text with JSONC's comments blanked out and trailing commas removed. */
export interface StrippedJsonc {
  /** Plain JSON text, same length and line breaks as the input (positions stay valid). */
  readonly json: string;
  /** 1-based line of the first comment, when the text has one. */
  readonly firstCommentLine: number | undefined;
  /** 1-based line of the first trailing comma, when the text has one. */
  readonly firstTrailingCommaLine: number | undefined;
}

/** Blanks `//` and `/* *\/` comments (outside strings) and trailing commas, keeping positions. */
export function stripJsonc(text: string): StrippedJsonc {
  const out = text.split('');
  let line = 1;
  let firstCommentLine: number | undefined;
  let firstTrailingCommaLine: number | undefined;
  let inString = false;
  let pendingComma: { index: number; line: number } | undefined;
  for (let index = 0; index < text.length; index += 1) {
    const char = text[index];
    if (char === '\n') line += 1;
    if (inString) {
      if (char === '\\') index += 1;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"') {
      inString = true;
      pendingComma = undefined;
      continue;
    }
    if (char === '/' && (text[index + 1] === '/' || text[index + 1] === '*')) {
      firstCommentLine ??= line;
      const block = text[index + 1] === '*';
      const end = block ? text.indexOf('*/', index + 2) : text.indexOf('\n', index);
      const stop = end < 0 ? text.length : block ? end + 2 : end;
      for (let blank = index; blank < stop; blank += 1) {
        if (text[blank] === '\n') line += 1;
        else out[blank] = ' ';
      }
      index = stop - 1;
      continue;
    }
    if (char === ',') {
      pendingComma = { index, line };
      continue;
    }
    if (char === '}' || char === ']') {
      if (pendingComma !== undefined) {
        out[pendingComma.index] = ' ';
        firstTrailingCommaLine ??= pendingComma.line;
      }
      pendingComma = undefined;
      continue;
    }
    if (char !== ' ' && char !== '\t' && char !== '\r' && char !== '\n') pendingComma = undefined;
  }
  return { json: out.join(''), firstCommentLine, firstTrailingCommaLine };
}
