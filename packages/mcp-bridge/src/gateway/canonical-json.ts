import { hash } from 'node:crypto';

/**
 * JSON with object keys sorted and `undefined` members left out; the basis of every digest.
 *
 * Runs on every gateway call (the arguments, the result and the audit line), so it is written
 * for speed: one pass, no intermediate arrays of parts, and the keys sorted only when they are
 * not in order already. The output is exactly that of the plain definition: sorted keys
 * (`Array.prototype.sort`, UTF-16 code unit order), `JSON.stringify` for every key and
 * primitive, `null` for `undefined` and for values JSON cannot hold.
 */
export function canonicalJson(value: unknown): string {
  if (typeof value !== 'object') {
    return value === undefined ? 'null' : (JSON.stringify(value) ?? 'null');
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
      keys.sort();
      break;
    }
  }
  let out = '{';
  for (const key of keys) {
    const member = record[key];
    if (member === undefined) continue;
    if (out.length > 1) out += ',';
    out += `${JSON.stringify(key)}:${canonicalJson(member)}`;
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
