/** A path as a message may show it: control characters escaped, at most 200 characters. */
export function shownPath(path: string): string {
  const escaped = path.replace(
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what is escaped
    /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g,
    (char) => `\\u{${(char.codePointAt(0) as number).toString(16)}}`,
  );
  return escaped.length > 200 ? `…${escaped.slice(-199)}` : escaped;
}
