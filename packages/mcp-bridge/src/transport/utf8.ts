import { isUtf8 } from 'node:buffer';
import { RecordEncodingError, type RecordEncodingKind } from './errors.js';

/**
 * Decodes one record's bytes as UTF-8, strictly: a byte sequence that is not UTF-8 raises
 * {@link RecordEncodingError} instead of becoming U+FFFD. A byte-order mark is kept (so a JSON
 * record that starts with one is refused by the parse).
 */
export function decodeUtf8(bytes: Buffer, kind: RecordEncodingKind): string {
  if (!isUtf8(bytes)) throw new RecordEncodingError(kind);
  return bytes.toString('utf8');
}
