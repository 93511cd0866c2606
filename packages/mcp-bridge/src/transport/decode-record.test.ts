import { describe, expect, it } from 'vitest';
import { decodeRecord } from './decode-record.js';
import { TransportProtocolError } from './errors.js';
import { DEFAULT_RECORD_LIMITS } from './record-limits.js';

const notification = '{"jsonrpc":"2.0","method":"notifications/progress","params":{}}';

describe('decodeRecord', () => {
  it('decodes one message and a batch of two', () => {
    expect(decodeRecord(notification, DEFAULT_RECORD_LIMITS)).toHaveLength(1);
    expect(decodeRecord(`[${notification},${notification}]`, DEFAULT_RECORD_LIMITS)).toHaveLength(
      2,
    );
  });

  it.each([
    ['an empty batch', '[]'],
    ['an empty batch with whitespace', ' [ \r\n\t] '],
  ])('refuses %s', (_name, text) => {
    expect(() => decodeRecord(text, DEFAULT_RECORD_LIMITS)).toThrow(TransportProtocolError);
    expect(() => decodeRecord(text, DEFAULT_RECORD_LIMITS)).toThrow(/empty batch/);
  });

  it.each([
    ['a batch holding a non-message', `[${notification},1]`],
    ['a nested empty batch', '[[]]'],
    ['a string', '"[]"'],
  ])('refuses %s as not JSON-RPC', (_name, text) => {
    expect(() => decodeRecord(text, DEFAULT_RECORD_LIMITS)).toThrow(TransportProtocolError);
  });
});
