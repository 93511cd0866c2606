import { ResponseTooLargeError } from './errors.js';

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

const LF = 0x0a;
const CR = 0x0d;

/**
 * A byte-level `text/event-stream` parser that counts every byte of an event as it arrives and
 * throws {@link ResponseTooLargeError} (kind `sse`) as soon as one event exceeds the limit.
 */
export class SseParser {
  readonly #maxEventBytes: number;
  readonly #handlers: SseParserHandlers;
  #line: Buffer[] = [];
  #eventBytes = 0;
  #inRecord = false;
  #sawCr = false;
  #data: string[] = [];
  #event = '';
  #id: string | undefined;
  #hasId = false;

  constructor(maxEventBytes: number, handlers: SseParserHandlers) {
    this.#maxEventBytes = maxEventBytes;
    this.#handlers = handlers;
  }

  /** True while part of an event has arrived but the event is not complete. */
  get inRecord(): boolean {
    return this.#inRecord;
  }

  push(chunk: Uint8Array): void {
    const buffer = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk);
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
      if (end > start) this.#count(end - start);
      if (end === length) {
        if (end > start) this.#line.push(buffer.subarray(start, end));
        return;
      }
      if (end > start) this.#line.push(buffer.subarray(start, end));
      this.#count(1);
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

  #endLine(): void {
    const parts = this.#line;
    this.#line = [];
    if (parts.length === 0) {
      this.#dispatch();
      return;
    }
    const line =
      parts.length === 1
        ? (parts[0] as Buffer).toString('utf8')
        : Buffer.concat(parts).toString('utf8');
    if (line.startsWith(':')) return;
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
