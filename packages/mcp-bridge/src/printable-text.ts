// What tool-poisoning text hides in, or shows as blank: every default-ignorable code point
// (zero-width and joiner characters, variation selectors with their supplement U+E0100-E01EF,
// tag characters, bidi controls, the Hangul fillers, ...) and every format character (Cf: bidi
// isolates, the interlinear annotation controls U+FFF9-FFFB, Egyptian hieroglyph format controls,
// ...), by their Unicode properties, so a new one is covered as Node's Unicode data knows it; and
// the characters that are drawn as a blank glyph while not being spaces (the braille pattern
// blank U+2800, the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0). The joiner U+200D and the
// variation selectors U+FE0E/U+FE0F are escaped too, so an emoji built with them (a family, a
// red heart) is shown as its parts: the same selectors carry hidden bytes.
const INVISIBLE_CLASS = String.raw`[\p{Default_Ignorable_Code_Point}\p{Cf}\u{115f}\u{1160}\u{2800}\u{3164}\u{ffa0}]`;
const INVISIBLE = new RegExp(INVISIBLE_CLASS, 'u');
const INVISIBLE_ALL = new RegExp(INVISIBLE_CLASS, 'gu');

const escaped = (char: string): string => `\\u{${(char.codePointAt(0) as number).toString(16)}}`;

// C0 and C1 controls and DEL: terminal escapes (ESC), carriage returns that overwrite a line.
const isControl = (code: number): boolean => code < 0x20 || (code >= 0x7f && code <= 0x9f);

/**
 * True when `text` holds an invisible character: a default-ignorable code point (zero-width,
 * joiner, variation selector, tag, bidi control, ...), a format character (Unicode category Cf),
 * or one drawn as a blank glyph (U+2800, U+115F, U+1160, U+3164, U+FFA0).
 */
export function hasInvisibleUnicode(text: string): boolean {
  return INVISIBLE.test(text);
}

/** `text` with every invisible character (see {@link hasInvisibleUnicode}) shown as `\u{…}`. */
export function escapeInvisible(text: string): string {
  return INVISIBLE.test(text) ? text.replace(INVISIBLE_ALL, escaped) : text;
}

/**
 * Remote text made safe to show a person or a model on one line: control characters (newlines
 * and ESC included) and invisible characters become `\u{…}`, and the result keeps at most
 * `maxChars` characters of the original, with `…` and the count cut when it was longer.
 */
export function printableText(text: string, maxChars: number): string {
  let out = '';
  let kept = 0;
  for (const char of text) {
    if (kept === maxChars) {
      return `${out}… (${[...text].length - kept} more characters cut)`;
    }
    kept += 1;
    const code = char.codePointAt(0) as number;
    out += isControl(code) || INVISIBLE.test(char) ? `\\u{${code.toString(16)}}` : char;
  }
  return out;
}
