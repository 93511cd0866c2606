import type { Readable, Writable } from 'node:stream';
import {
  type JSONRPCMessage,
  parseJSONRPCMessage,
  type Transport,
} from '@modelcontextprotocol/server';
import { isPlainMessage } from '../transport/plain-message.js';

/**
 * Bytes at most of one unfinished line from the downstream client (the SDK v2 stdio transport's
 * buffer, `STDIO_DEFAULT_MAX_BUFFER_SIZE`): beyond it the connection is closed.
 */
export const STDIO_FRONT_MAX_BUFFER_BYTES: number = 10 * 1024 * 1024;

/** What the transport reads and writes: stdin and stdout, or a pair of streams like them. */
export interface StdioFrontStreams {
  readonly stdin: Readable;
  readonly stdout: Writable;
}

/**
 * The downstream stdio transport of `toolfence-mcp serve`: the SDK v2 `StdioServerTransport`'s
 * behaviour (newline-delimited JSON-RPC, a trailing `\r` dropped, a line that is not JSON
 * skipped, a message the schema refuses reported through `onerror`, at most
 * {@link STDIO_FRONT_MAX_BUFFER_BYTES} of an unfinished line, then the connection closes; stdin
 * ending or closing closes it; a stdout error after close is swallowed), with
 * one difference: a message of a plain shape (`isPlainMessage`, proven against the SDK v2
 * schema in `src/transport/decode-record.test.ts`) is taken as the JSON text's own parse, without
 * the schema's copy (which would give back an equal value). Everything else goes through
 * `parseJSONRPCMessage`, which decides.
 */
export class StdioFrontTransport implements Transport {
  readonly #stdin: Readable;
  readonly #stdout: Writable;
  readonly #maxBufferBytes: number;
  #buffer: Buffer | undefined;
  #started = false;
  #closed = false;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: Transport['onmessage'];
  /** Called once, when the first message has been written (`serve`: its `initialize` answer). */
  onfirstsend?: (() => void) | undefined;

  constructor(streams: StdioFrontStreams, maxBufferBytes: number = STDIO_FRONT_MAX_BUFFER_BYTES) {
    this.#stdin = streams.stdin;
    this.#stdout = streams.stdout;
    this.#maxBufferBytes = maxBufferBytes;
  }

  readonly #onData = (chunk: Buffer) => {
    try {
      const length = (this.#buffer?.length ?? 0) + chunk.length;
      if (length > this.#maxBufferBytes) {
        this.#buffer = undefined;
        throw new Error(`ReadBuffer exceeded maximum size of ${this.#maxBufferBytes} bytes`);
      }
      this.#buffer = this.#buffer === undefined ? chunk : Buffer.concat([this.#buffer, chunk]);
      this.#readMessages();
    } catch (error) {
      this.onerror?.(error as Error);
      this.close().catch(() => undefined);
    }
  };

  readonly #onError = (error: Error) => {
    this.onerror?.(error);
  };

  /** Stays on stdout after close, swallowing what a closed pipe still reports (as the SDK does). */
  readonly #onStdoutError = (error: Error) => {
    if (this.#closed) return;
    this.onerror?.(error);
    this.close().catch(() => undefined);
  };

  /** stdin ended or closed: the client went away, so the connection closes. */
  readonly #onStdinClose = () => {
    this.close().catch(() => undefined);
  };

  #readMessages(): void {
    while (this.#buffer !== undefined) {
      const buffer: Buffer = this.#buffer;
      const index = buffer.indexOf(0x0a);
      if (index === -1) return;
      const end = index > 0 && buffer[index - 1] === 0x0d ? index - 1 : index;
      const line = buffer.toString('utf8', 0, end);
      this.#buffer = index + 1 === buffer.length ? undefined : buffer.subarray(index + 1);
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        continue;
      }
      // A message the schema refuses, or a handler that throws, is reported; reading goes on.
      try {
        const message = isPlainMessage(value)
          ? (value as JSONRPCMessage)
          : (parseJSONRPCMessage(value) as JSONRPCMessage);
        this.onmessage?.(message);
      } catch (error) {
        this.onerror?.(error as Error);
      }
    }
  }

  async start(): Promise<void> {
    if (this.#started) throw new Error('StdioFrontTransport already started');
    this.#started = true;
    if (this.#stdin.readableEnded || this.#stdin.destroyed) setImmediate(this.#onStdinClose);
    this.#stdin.on('data', this.#onData);
    this.#stdin.on('error', this.#onError);
    this.#stdin.on('end', this.#onStdinClose);
    this.#stdin.on('close', this.#onStdinClose);
    this.#stdout.on('error', this.#onStdoutError);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stdin.off('data', this.#onData);
    this.#stdin.off('error', this.#onError);
    this.#stdin.off('end', this.#onStdinClose);
    this.#stdin.off('close', this.#onStdinClose);
    if (this.#stdin.listenerCount('data') === 0) this.#stdin.pause();
    this.#buffer = undefined;
    this.onclose?.();
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('StdioFrontTransport is closed'));
    const first = this.onfirstsend;
    if (first !== undefined) {
      this.onfirstsend = undefined;
      queueMicrotask(first);
    }
    // A write error reaches `onerror` (and closes) through the stdout listener set at start.
    if (this.#stdout.write(`${JSON.stringify(message)}\n`)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const settle = (error?: Error) => {
        this.#stdout.off('drain', onDrain);
        this.#stdout.off('error', onError);
        if (error === undefined) resolve();
        else reject(error);
      };
      const onDrain = () => settle();
      const onError = (error: Error) => settle(error);
      this.#stdout.once('drain', onDrain);
      this.#stdout.once('error', onError);
    });
  }
}
