import { describe, expect, it } from 'vitest';
import { RecordEncodingError, ResponseTooLargeError } from './errors.js';
import { type SseEvent, SseParser } from './sse-parser.js';

interface Run {
  readonly events: SseEvent[];
  readonly retries: number[];
  readonly starts: number;
}

/** Feeds `chunks` to a parser and returns what it reported. */
function parse(
  chunks: readonly (string | Uint8Array)[],
  limits = { maxEventBytes: 1024, maxCommentBytes: 256 },
): Run {
  const events: SseEvent[] = [];
  const retries: number[] = [];
  let starts = 0;
  const parser = new SseParser(limits, {
    onEvent: (event) => events.push(event),
    onRetry: (milliseconds) => retries.push(milliseconds),
    onRecordStart: () => starts++,
  });
  for (const chunk of chunks) parser.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  return { events, retries, starts };
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf]);

describe('SseParser', () => {
  it.each([
    ['in one chunk', [Buffer.concat([BOM, Buffer.from('data: a\n\n')])]],
    [
      'split after its first byte',
      [BOM.subarray(0, 1), Buffer.concat([BOM.subarray(1), Buffer.from('data: a\n\n')])],
    ],
    [
      'in three chunks of one byte',
      [BOM.subarray(0, 1), BOM.subarray(1, 2), BOM.subarray(2), 'data: a\n\n'],
    ],
  ])('drops a byte-order mark at the start of the stream %s', (_name, chunks) => {
    expect(parse(chunks).events).toEqual([{ event: 'message', data: 'a', id: undefined }]);
  });

  it('drops only one byte-order mark, and only at the start of the stream', () => {
    const second = parse([Buffer.concat([BOM, BOM, Buffer.from('data: a\n\n')])]);
    expect(second.events).toEqual([]);
    const later = parse(['data: a\n\n', Buffer.concat([BOM, Buffer.from('data: b\n\n')])]);
    expect(later.events.map((event) => event.data)).toEqual(['a']);
  });

  it('keeps bytes that only begin like a byte-order mark', () => {
    // EF BB followed by something else is not a BOM; the bytes reach the line (as UTF-8 they
    // are invalid, so the field line is refused rather than silently changed).
    expect(() => parse([BOM.subarray(0, 2), 'data: a\n\n'])).toThrow(RecordEncodingError);
    expect(parse(['d', 'ata: a\n\n']).events.map((event) => event.data)).toEqual(['a']);
  });

  it('refuses a field line that is not valid UTF-8', () => {
    let caught: unknown;
    try {
      parse([Buffer.concat([Buffer.from('data: "'), Buffer.from([0xff]), Buffer.from('"\n\n')])]);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(RecordEncodingError);
    expect((caught as RecordEncodingError).kind).toBe('sse');
  });

  it('drops a comment line without decoding it, counting it nowhere in the event', () => {
    const run = parse([
      Buffer.concat([Buffer.from(': '), Buffer.from([0xff, 0xfe]), Buffer.from('\n')]),
      'data: a\n: between\ndata: b\n\n',
    ]);
    expect(run.events).toEqual([{ event: 'message', data: 'a\nb', id: undefined }]);
  });

  it('does not start a record for comment lines', () => {
    const run = parse([': ping\n: ping\n: ping\n']);
    expect(run.starts).toBe(0);
    expect(run.events).toEqual([]);
  });

  it('does not count comment bytes against the event limit', () => {
    const comments = `: ${'c'.repeat(100)}\n`.repeat(2);
    const run = parse([`data: a\n${comments}data: b\n\n`], {
      maxEventBytes: 40,
      maxCommentBytes: 1024,
    });
    expect(run.events.map((event) => event.data)).toEqual(['a\nb']);
  });

  it.each([
    ['in one line', [`: ${'c'.repeat(300)}\n`]],
    ['over many lines with no blank line between them', Array(40).fill(': 123456\n')],
    ['split over chunks of one line', [': ', 'c'.repeat(200), 'c'.repeat(100)]],
  ])('stops comment lines over maxCommentBytes %s', (_name, chunks) => {
    let caught: unknown;
    try {
      parse(chunks);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(ResponseTooLargeError);
    expect((caught as ResponseTooLargeError).kind).toBe('sse-comment');
    expect((caught as ResponseTooLargeError).limit).toBe(256);
  });

  it('starts the comment count again after each blank line', () => {
    const keepAlive = ': 123456\n\n';
    const run = parse([keepAlive.repeat(200), 'data: a\n\n']);
    expect(run.events.map((event) => event.data)).toEqual(['a']);
  });

  it('counts a CRLF line ending as one byte, like a LF', () => {
    const text = `data: ${'x'.repeat(10)}`;
    const lf = parse([`${text}\n\n`], { maxEventBytes: text.length + 2, maxCommentBytes: 16 });
    const crlf = parse([`${text}\r\n\r\n`], {
      maxEventBytes: text.length + 2,
      maxCommentBytes: 16,
    });
    expect(lf.events).toHaveLength(1);
    expect(crlf.events).toHaveLength(1);
    expect(() =>
      parse([`${text}x\r\n\r\n`], { maxEventBytes: text.length + 2, maxCommentBytes: 16 }),
    ).toThrow(ResponseTooLargeError);
  });

  it('reports retry: in milliseconds and ignores a value that is not digits', () => {
    const run = parse(['retry: 2000000000\nretry: 1e3\nretry: -1\ndata: a\n\n']);
    expect(run.retries).toEqual([2_000_000_000]);
  });
});
