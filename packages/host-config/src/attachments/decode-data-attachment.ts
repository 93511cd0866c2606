import {
  AttachmentDataInvalidError,
  AttachmentOptionError,
  AttachmentTooLargeError,
} from './errors.js';
import { MAX_BYTES } from './hook-script.js';

/** Options of {@link decodeDataAttachment}. */
export interface DecodeDataAttachmentOptions {
  /** Largest decoded size accepted, in bytes. Default {@link MAX_BYTES} (25 MiB). */
  readonly maxBytes?: number;
}

/** A decoded `data:` attachment. */
export interface DecodedDataAttachment {
  /** The media type of the data URI, without parameters, lower-cased (`text/plain` if empty). */
  readonly mimeType: string;
  /** The decoded bytes. */
  readonly bytes: Uint8Array;
}

const BASE64_BODY = /^[A-Za-z0-9+/]*$/;
const MEDIA_TYPE = /^[a-z0-9!#$&^_.+-]+\/[a-z0-9!#$&^_.+-]+$/;
// Last base64 character before padding must leave the unused low bits zero (canonical form).
const LAST_BEFORE_ONE_PAD = /[AEIMQUYcgkosw048]$/;
const LAST_BEFORE_TWO_PADS = /[AQgw]$/;

function invalid(reason: string, message: string): AttachmentDataInvalidError {
  return new AttachmentDataInvalidError(message, { details: { reason } });
}

/**
 * Decodes a `data:<mime>[;params];base64,<bytes>` attachment source, as the hook produces it.
 * Validates the base64 strictly (alphabet, length, padding, canonical trailing bits, no
 * whitespace) and checks the size before decoding.
 *
 * @throws {AttachmentDataInvalidError} `ATTACHMENT_DATA_INVALID` for anything malformed.
 * @throws {AttachmentTooLargeError} `ATTACHMENT_TOO_LARGE` when it decodes to more than `maxBytes`.
 * @throws {AttachmentOptionError} `ATTACHMENT_OPTION_INVALID` for a bad `maxBytes`.
 */
export function decodeDataAttachment(
  source: string,
  options: DecodeDataAttachmentOptions = {},
): DecodedDataAttachment {
  const maxBytes = options.maxBytes ?? MAX_BYTES;
  if (typeof maxBytes !== 'number' || !Number.isSafeInteger(maxBytes) || maxBytes < 0) {
    throw new AttachmentOptionError('maxBytes must be a non-negative whole number of bytes', {
      details: { option: 'maxBytes' },
    });
  }
  if (typeof source !== 'string' || !/^data:/i.test(source)) {
    throw invalid('not_data_uri', 'the attachment source is not a data: URI');
  }
  const comma = source.indexOf(',');
  if (comma < 0) throw invalid('no_comma', 'the data: URI has no comma before its payload');
  const header = source.slice(5, comma);
  const parts = header.split(';');
  const last = parts.pop();
  if (last === undefined || last.toLowerCase() !== 'base64') {
    throw invalid('not_base64', 'the data: URI is not base64-encoded (expected ";base64,")');
  }
  const mediaType = (parts[0] ?? '').trim().toLowerCase();
  if (mediaType !== '' && !MEDIA_TYPE.test(mediaType)) {
    throw invalid('bad_media_type', 'the data: URI has a malformed media type');
  }
  const body = source.slice(comma + 1);
  const padding = body.endsWith('==') ? 2 : body.endsWith('=') ? 1 : 0;
  const decodedLength = Math.floor(body.length / 4) * 3 - padding;
  if (decodedLength > maxBytes) {
    throw new AttachmentTooLargeError(`the attachment is larger than ${maxBytes} bytes`, {
      details: { maxBytes, bytes: decodedLength },
    });
  }
  if (body.length % 4 !== 0) {
    throw invalid('bad_length', 'the base64 payload length is not a multiple of 4');
  }
  const data = body.slice(0, body.length - padding);
  if (!BASE64_BODY.test(data)) {
    throw invalid('bad_alphabet', 'the base64 payload has characters outside the base64 alphabet');
  }
  if (
    (padding === 1 && !LAST_BEFORE_ONE_PAD.test(data)) ||
    (padding === 2 && !LAST_BEFORE_TWO_PADS.test(data))
  ) {
    throw invalid('non_canonical', 'the base64 payload is not canonical (non-zero padding bits)');
  }
  const decoded = Buffer.from(data, 'base64');
  if (decoded.length !== decodedLength) {
    throw invalid('bad_length', 'the base64 payload does not decode to its declared length');
  }
  return {
    mimeType: mediaType === '' ? 'text/plain' : mediaType,
    // Small Buffers share a pooled ArrayBuffer; hand out memory that belongs to this result only.
    bytes:
      decoded.byteLength === decoded.buffer.byteLength
        ? new Uint8Array(decoded.buffer, decoded.byteOffset, decoded.byteLength)
        : new Uint8Array(decoded),
  };
}
