import { describe, expect, it } from 'vitest';
import { decodeDataAttachment } from './decode-data-attachment.js';
import {
  AttachmentDataInvalidError,
  AttachmentOptionError,
  AttachmentTooLargeError,
} from './errors.js';

describe('decodeDataAttachment', () => {
  it('decodes what the hook produces', () => {
    const result = decodeDataAttachment('data:text/plain;base64,aGVsbG8gd29ybGQK');
    expect(result.mimeType).toBe('text/plain');
    expect(Buffer.from(result.bytes).toString()).toBe('hello world\n');
    expect(result.bytes.buffer.byteLength).toBe(result.bytes.byteLength);
  });

  it('keeps parameters out of mimeType and accepts an empty payload', () => {
    expect(decodeDataAttachment('data:Text/Plain;charset=utf-8;base64,').mimeType).toBe(
      'text/plain',
    );
    expect(decodeDataAttachment('data:;base64,YQ==').mimeType).toBe('text/plain');
    expect(decodeDataAttachment('data:application/pdf;base64,').bytes.length).toBe(0);
  });

  it.each([
    ['not a data URI', 'file:///etc/passwd', 'not_data_uri'],
    ['no comma', 'data:text/plain;base64', 'no_comma'],
    ['percent-encoded, not base64', 'data:text/plain,hello', 'not_base64'],
    ['bad media type', 'data:text plain;base64,YQ==', 'bad_media_type'],
    ['length not a multiple of 4', 'data:;base64,YQ=', 'bad_length'],
    ['missing padding', 'data:;base64,YQ', 'bad_length'],
    ['whitespace inside', 'data:;base64,YW J', 'bad_alphabet'],
    ['newline inside', 'data:;base64,YWJj\nYWJj', 'bad_length'],
    ['url-safe alphabet', 'data:;base64,-_-_', 'bad_alphabet'],
    ['padding in the middle', 'data:;base64,YQ==YQ==', 'bad_alphabet'],
    ['three pads', 'data:;base64,Y===', 'bad_alphabet'],
    ['non-zero bits before one pad', 'data:;base64,YWJ=', 'non_canonical'],
    ['non-zero bits before two pads', 'data:;base64,YR==', 'non_canonical'],
  ])('rejects %s', (_name, source, reason) => {
    try {
      decodeDataAttachment(source);
      expect.unreachable();
    } catch (error) {
      expect(AttachmentDataInvalidError.isInstance(error)).toBe(true);
      expect((error as AttachmentDataInvalidError).details).toEqual({ reason });
      expect((error as Error).message).not.toContain('YQ');
    }
  });

  it('enforces maxBytes before decoding, at the exact boundary', () => {
    expect(decodeDataAttachment('data:;base64,YWJj', { maxBytes: 3 }).bytes.length).toBe(3);
    expect(() => decodeDataAttachment('data:;base64,YWJjZA==', { maxBytes: 3 })).toThrow(
      AttachmentTooLargeError,
    );
    expect(() => decodeDataAttachment('data:;base64,!!!!!!!!', { maxBytes: 3 })).toThrow(
      AttachmentTooLargeError,
    );
  });

  it('defaults maxBytes to 25 MiB', () => {
    const big = `data:;base64,${'A'.repeat((Math.ceil((25 * 1024 * 1024) / 3) + 1) * 4)}`;
    expect(() => decodeDataAttachment(big)).toThrow(AttachmentTooLargeError);
  });

  it.each([[true], [-1], [1.5], ['10'], [Number.NaN]])('rejects maxBytes %j', (maxBytes) => {
    expect(() =>
      decodeDataAttachment('data:;base64,', { maxBytes: maxBytes as unknown as number }),
    ).toThrow(AttachmentOptionError);
  });
});
