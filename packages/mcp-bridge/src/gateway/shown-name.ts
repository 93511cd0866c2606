/** Names at most this long are shown whole in a message; longer ones are cut with "…". */
const SHOWN_NAME_CHARS = 40;

/**
 * A name from a config file as an error message may show it: JSON-quoted, control, invisible and
 * bidirectional characters escaped (`\u001b`), at most 40 characters, so a terminal shows what
 * the file holds and nothing in the name can rewrite the line.
 */
export function shownName(name: string): string {
  const bounded = name.length > SHOWN_NAME_CHARS ? `${name.slice(0, SHOWN_NAME_CHARS)}…` : name;
  return JSON.stringify(bounded).replace(
    /[\u007f-\u009f\u00ad\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g,
    (char) => `\\u${(char.codePointAt(0) as number).toString(16).padStart(4, '0')}`,
  );
}
