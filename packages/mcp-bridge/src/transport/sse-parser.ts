import { ResponseTooLargeError } from './errors.js';
import { decodeUtf8 } from './utf8.js';

/** One server-sent event. */
export interface SseEvent {
  readonly event: string;
  readonly data: string;
  readonly id: string | undefined;
}

/** Callbacks of {@link SseParser}. */
export interface SseParserHandlers {
  /** A complete event with its data lines joined. */
  onEvent(event: SseEvent): void;
  /** The `retry:` field, in milliseconds. */
  onRetry?(milliseconds: number): void;
  /** The first byte of a new event arrived (starts the per-record timer). */
  onRecordStart?(): void;
  /** The current event ended (dispatched or empty). */
  onRecordEnd?(): void;
}

/** Limits of {@link SseParser}. */
export interface SseParserLimits {
  /** Bytes per event (its field lines and line endings). */
  readonly maxEventBytes: number;
  /** Bytes of comment lines between two blank lines. */
  readonly maxCommentBytes: number;
}

const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const BOM: readonly number[] = [0xef, 0xbb, 0xbf];

/** What the current line is, decided by its first byte. */
const LINE_EMPTY = 0;
const LINE_COMMENT = 1;
const LINE_FIELD = 2;

/**
 * A byte-level `text/event-stream` parser that counts every byte of an event as it arrives and
 * throws {@link ResponseTooLargeError} (kind `sse`) as soon as one event exceeds the limit.
 *
 * As the SSE standard says, one UTF-8 byte-order mark at the start of the stream is dropped.
 * Comment lines (`:` first) are dropped as they arrive: never buffered, never part of an event
 * and never the start of one; their bytes between two blank lines count against
 * `maxCommentBytes` (kind `sse-comment`). Field lines are decoded as strict UTF-8
 * ({@link RecordEncodingError} otherwise).
 */
export class SseParser {
  readonly #maxEventBytes: number;
  readonly #maxCommentBytes: number;
  readonly #handlers: SseParserHandlers;
  /** Bytes of a possible byte-order mark seen at the stream start; -1 once decided. */
  #bomBytes = 0;
  #line: Buffer[] = [];
  #lineKind = LINE_EMPTY;
  #eventBytes = 0;
  #commentBytes = 0;
  #inRecord = false;
  #sawCr = false;
  #data: string[] = [];
  #event = '';
  #id: string | undefined;
  #hasId = false;

  /** Creates a parser for one stream. */
  constructor(limits: SseParserLimits, handlers: SseParserHandlers) {
    this.#maxEventBytes = limits.maxEventBytes;
    this.#maxCommentBytes = limits.maxCommentBytes;
    this.#handlers = handlers;
  }

  /** True while part of an event has arrived but the event is not complete. */
  get inRecord(): boolean {
    return this.#inRecord;
  }

  /** Feeds the next bytes of the stream. */
  push(chunk: Uint8Array): void {
    let buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
    if (this.#bomBytes >= 0) {
      let index = 0;
      while (index < buffer.length && this.#bomBytes < BOM.length) {
        if (buffer[index] !== BOM[this.#bomBytes]) break;
        this.#bomBytes++;
        index++;
      }
      if (this.#bomBytes === BOM.length) {
        this.#bomBytes = -1;
        buffer = buffer.subarray(index);
      } else if (index === buffer.length) {
        return; // all of it may still be a byte-order mark
      } else {
        // Not a byte-order mark: the bytes held back belong to the stream.
        const held = Buffer.from(BOM.slice(0, this.#bomBytes));
        this.#bomBytes = -1;
        buffer = Buffer.concat([held, buffer.subarray(index)]);
      }
    }
    this.#pushBytes(buffer);
  }

  #pushBytes(buffer: Buffer): void {
    let start = 0;
    const length = buffer.length;
    while (start < length) {
      if (this.#sawCr) {
        this.#sawCr = false;
        if (buffer[start] === LF) {
          start++;
          continue;
        }
      }
      let end = start;
      while (end < length) {
        const byte = buffer[end];
        if (byte === LF || byte === CR) break;
        end++;
      }
      if (end > start) {
        if (this.#lineKind === LINE_EMPTY) {
          this.#lineKind = buffer[start] === COLON ? LINE_COMMENT : LINE_FIELD;
        }
        if (this.#lineKind === LINE_COMMENT) {
          this.#countComment(end - start);
        } else {
          this.#count(end - start);
          this.#line.push(buffer.subarray(start, end));
        }
      }
      if (end === length) return;
      if (this.#lineKind === LINE_COMMENT) this.#countComment(1);
      else this.#count(1);
      if (buffer[end] === CR) this.#sawCr = true;
      start = end + 1;
      this.#endLine();
    }
  }

  #count(bytes: number): void {
    if (!this.#inRecord) {
      this.#inRecord = true;
      this.#handlers.onRecordStart?.();
    }
    this.#eventBytes += bytes;
    if (this.#eventBytes > this.#maxEventBytes) {
      throw new ResponseTooLargeError('sse', this.#maxEventBytes);
    }
  }

  #countComment(bytes: number): void {
    this.#commentBytes += bytes;
    if (this.#commentBytes > this.#maxCommentBytes) {
      throw new ResponseTooLargeError('sse-comment', this.#maxCommentBytes);
    }
  }

  #endLine(): void {
    const kind = this.#lineKind;
    this.#lineKind = LINE_EMPTY;
    if (kind === LINE_COMMENT) return;
    const parts = this.#line;
    this.#line = [];
    if (kind === LINE_EMPTY) {
      this.#commentBytes = 0;
      this.#dispatch();
      return;
    }
    const line = decodeUtf8(
      parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts),
      'sse',
    );
    const colon = line.indexOf(':');
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data':
        this.#data.push(value);
        break;
      case 'event':
        this.#event = value;
        break;
      case 'id':
        if (!value.includes('\0')) {
          this.#id = value;
          this.#hasId = true;
        }
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.#handlers.onRetry?.(Number(value));
        break;
      default:
        break;
    }
  }

  #dispatch(): void {
    const data = this.#data;
    const event = this.#event;
    const id = this.#hasId ? this.#id : undefined;
    this.#data = [];
    this.#event = '';
    this.#hasId = false;
    this.#eventBytes = 0;
    this.#inRecord = false;
    this.#handlers.onRecordEnd?.();
    if (data.length === 0 && id === undefined) return;
    this.#handlers.onEvent({
      event: event === '' ? 'message' : event,
      data: data.length === 1 ? (data[0] as string) : data.join('\n'),
      id,
    });
  }
}
