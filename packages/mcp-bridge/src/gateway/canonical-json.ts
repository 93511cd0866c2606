import { hash } from 'node:crypto';

/** What `JSON.stringify` escapes in a string: `"`, `\\`, controls, and surrogates (lone ones). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters JSON escapes are the point
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** `JSON.stringify(text)`, without the call when nothing in `text` needs escaping. */
function quoted(text: string): string {
  return NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;
}

/** Key lists at most this long are sorted by insertion (in place, nothing allocated). */
const INSERTION_SORT_MAX = 32;

/**
 * Sorts `keys` in place into `Array.prototype.sort`'s order (UTF-16 code units; an object's keys
 * are distinct strings, so `>` decides every pair), knowing the first `sorted` are in order. A
 * short list (an object's usual few keys) is sorted by insertion, which allocates nothing; `sort`
 * copies the list into a work array first.
 */
function sortFrom(keys: string[], sorted: number): void {
  const length = keys.length;
  if (length > INSERTION_SORT_MAX) {
    keys.sort();
    return;
  }
  for (let index = sorted; index < length; index += 1) {
    const key = keys[index] as string;
    let at = index - 1;
    while (at >= 0 && (keys[at] as string) > key) {
      keys[at + 1] = keys[at] as string;
      at -= 1;
    }
    keys[at + 1] = key;
  }
}

/**
 * JSON with object keys sorted and `undefined` members left out; the basis of every digest.
 *
 * Runs on every gateway call (the arguments, the result and the audit line), so it is written
 * for speed: one pass, no intermediate arrays of parts, keys sorted only when they are not in
 * order already, and strings that need no escaping quoted as they are. The output is exactly that
 * of the plain definition: sorted keys (`Array.prototype.sort`, UTF-16 code unit order),
 * `JSON.stringify` for every key and primitive, `null` for `undefined` and for values JSON
 * cannot hold.
 */
export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return quoted(value);
    case 'object':
      break;
    case 'undefined':
      return 'null';
    default:
      return JSON.stringify(value) ?? 'null';
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) {
    const length = value.length;
    if (length === 0) return '[]';
    let out = `[${canonicalJson(value[0])}`;
    for (let index = 1; index < length; index += 1) out += `,${canonicalJson(value[index])}`;
    return `${out}]`;
  }
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  for (let index = 1; index < keys.length; index += 1) {
    if ((keys[index - 1] as string) > (keys[index] as string)) {
      sortFrom(keys, index);
      break;
    }
  }
  let out = '{';
  for (const key of keys) {
    const member = record[key];
    if (member === undefined) continue;
    if (out.length > 1) out += ',';
    out += `${quoted(key)}:${canonicalJson(member)}`;
  }
  return `${out}}`;
}

/** The hex SHA-256 of `text` (UTF-8), in one call (no hash object per digest). */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex');
}

/** `sha256:` and the hex SHA-256 of the canonical JSON of `value`. */
export function digestOf(value: unknown): string {
  return `sha256:${sha256Hex(canonicalJson(value))}`;
}
