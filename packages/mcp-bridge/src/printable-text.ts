// Zero-width and joiner characters, bidirectional controls and isolates, tag characters, and
// other invisible formatting characters: what tool-poisoning descriptions hide text in.
const INVISIBLE =
  // biome-ignore lint/suspicious/noMisleadingCharacterClass: each listed code point is matched alone on purpose
  /[\u{ad}\u{34f}\u{61c}\u{115f}\u{1160}\u{17b4}\u{17b5}\u{180b}-\u{180f}\u{200b}-\u{200f}\u{202a}-\u{202e}\u{2060}-\u{206f}\u{3164}\u{fe00}-\u{fe0f}\u{feff}\u{ffa0}\u{e0000}-\u{e007f}]/u;

// C0 and C1 controls and DEL: terminal escapes (ESC), carriage returns that overwrite a line.
const isControl = (code: number): boolean => code < 0x20 || (code >= 0x7f && code <= 0x9f);

/** True when `text` holds an invisible, zero-width, tag or bidirectional-control character. */
export function hasInvisibleUnicode(text: string): boolean {
  return INVISIBLE.test(text);
}

/** `text` with every invisible or bidirectional character shown as `\u{…}`, safe to print. */
export function escapeInvisible(text: string): string {
  let out = '';
  for (const char of text) {
    out += INVISIBLE.test(char) ? `\\u{${(char.codePointAt(0) as number).toString(16)}}` : char;
  }
  return out;
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
