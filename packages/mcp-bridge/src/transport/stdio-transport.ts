import type { ChildProcess } from 'node:child_process';
import type { Writable } from 'node:stream';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage, JSONRPCRequest } from '@modelcontextprotocol/sdk/types.js';
import { decodeRecord } from './decode-record.js';
import {
  DEFAULT_INHERITED_ENV,
  type EarlyStdioProcess,
  type EarlyStdioSink,
  signalGroup,
  spawnOutcome,
  spawnStdioChild,
  stdioChildEnv,
} from './early-stdio-process.js';
import {
  RequestNotSentError,
  ResponseTooLargeError,
  TransportConfigurationError,
  TransportError,
  TransportTimeoutError,
} from './errors.js';
import type { McpBridgeLogger } from './logger.js';
import {
  positiveInteger,
  positiveNumber,
  type RecordLimits,
  refuseRenamedOptions,
  resolveRecordLimits,
} from './record-limits.js';
import { decodeUtf8 } from './utf8.js';

/** Options of {@link StdioTransport}. */
export interface StdioTransportOptions extends Partial<RecordLimits> {
  /** The server's argv: `[executable, ...args]`. Never a shell string. */
  readonly command: readonly string[];
  /**
   * Variables set for the child, on top of the ones inherited by `inheritEnv`. Default `{}`.
   * The child never sees the rest of this process's environment.
   */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Names of this process's variables the child inherits (when set; values that start with
   * `()`, shell functions, are skipped). Default {@link DEFAULT_INHERITED_ENV}: `HOME`, `LOGNAME`,
   * `PATH`, `SHELL`, `TERM`, `USER` (the SDK's choice), so `npx` and other commands on `PATH`
   * are found. `[]` gives the child only `env`.
   */
  readonly inheritEnv?: readonly string[];
  /** Bytes of the child's last stderr output kept for the error when it exits. Default 2048; 0 keeps none. */
  readonly stderrTailBytes?: number;
  /** Working directory of the child. Default: this process's. */
  readonly cwd?: string;
  /** Milliseconds a started record may take to complete. Default 120,000. */
  readonly readTimeoutMs?: number;
  /**
   * Milliseconds between SIGTERM and SIGKILL on close; also how long a process that refused a
   * write (its stdin closed) is given to exit, so its exit code and stderr tail are the failure
   * reported. Default 2,000.
   */
  readonly killGraceMs?: number;
  /** Bytes kept per stderr line before it is cut (the rest of the line is dropped). Default 4096. */
  readonly maxStderrLineBytes?: number;
  /** Receives the child's stderr lines (at debug level) and transport diagnostics. */
  readonly logger?: McpBridgeLogger;
}

export { DEFAULT_INHERITED_ENV };

/**
 * Most records one corked write carries. A burst issued in one tick (hundreds of concurrent
 * calls) leaves in writes of this many records, so the server starts on the first ones while
 * the rest are still being built; an unbounded cork held them all until the end of the tick
 * (400 concurrent calls: 28 µs per call against 24 µs with this bound, and 23 µs for the SDK
 * client, which writes each record at once).
 */
export const MAX_CORKED_RECORDS = 16;
const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;
const SPACE = 0x20;
const TAB = 0x09;

/** True for an empty line or one of spaces and tabs only (the lines a stdio server may send between records). */
function isBlankLine(line: Buffer): boolean {
  for (let index = 0; index < line.length; index++) {
    const byte = line[index];
    if (byte !== SPACE && byte !== TAB) return false;
  }
  return true;
}

let handEarly: (transport: StdioTransport, early: EarlyStdioProcess) => void;

/**
 * Internal (not exported from the package): gives `transport` a process spawned early; its
 * `start()` takes it when it runs exactly the transport's command, environment and folder, else
 * ends it and spawns its own.
 */
export function withEarlyProcess(
  transport: StdioTransport,
  early: EarlyStdioProcess | undefined,
): StdioTransport {
  if (early !== undefined) handEarly(transport, early);
  return transport;
}

/**
 * The SDK `Transport` over a child process's stdin/stdout, one JSON-RPC record per line.
 *
 * Each stdout line is bounded by `maxRecordBytes` as bytes arrive and by `readTimeoutMs` from its
 * first byte to its newline (the CR of a CRLF ending is not counted), decoded as strict UTF-8,
 * then scanned for structure before parsing. Empty lines and lines of only spaces and tabs are
 * skipped; any other non-protocol line is a fatal error. A last record without a trailing
 * newline is delivered when stdout ends. The child runs in its own process group; `close()` sends SIGTERM to the
 * group, then SIGKILL after `killGraceMs` milliseconds.
 */
export class StdioTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: ((message: JSONRPCMessage) => void) | undefined;
  sessionId?: string | undefined;

  /** The error that ended the wire, if one did. */
  failure: Error | undefined;
  /** Set when any stdout byte arrives; the client clears it before a replayable read. */
  responseStarted = false;

  readonly #command: readonly string[];
  readonly #env: Readonly<Record<string, string>>;
  readonly #cwd: string | undefined;
  readonly #limits: RecordLimits;
  readonly #readTimeoutMs: number;
  readonly #killGraceMs: number;
  readonly #maxStderrLineBytes: number;
  readonly #stderrTailBytes: number;
  #stderrTail: Buffer[] = [];
  #stderrTailLength = 0;
  readonly #logger: McpBridgeLogger | undefined;
  #child: ChildProcess | undefined;
  readonly #chunks: Buffer[] = [];
  #pending = 0;
  #recordTimer: NodeJS.Timeout | undefined;
  #stderrLine: Buffer[] = [];
  #stderrBytes = 0;
  #stderrCut = false;
  #closed = false;
  #exited: Promise<void> | undefined;
  /** A process spawned before this transport, to take at start instead of spawning (once). */
  #early: EarlyStdioProcess | undefined;
  /**
   * Requests sent and not answered yet, as far as the wire shows (only to decide whether to
   * cork; an answer that never comes leaves it high, which only means the next records are
   * corked too).
   */
  #inFlight = 0;
  /** Ids of the standing requests ({@link StdioTransport.sendStanding}), never counted in flight. */
  readonly #standing = new Set<unknown>();
  /** The stdin corked for this tick's records, until {@link StdioTransport.#uncork} runs. */
  #corked: Writable | undefined;
  /** Records written into the current cork after its first. */
  #corkedRecords = 0;
  readonly #uncork = (): void => {
    const stdin = this.#corked;
    this.#corked = undefined;
    stdin?.uncork();
  };

  /**
   * Validates `options`; the process is spawned by `start()`.
   * @throws {TransportConfigurationError} for a bad `command` (not a non-empty argv array) or
   *   `env`.
   */
  constructor(options: StdioTransportOptions) {
    refuseRenamedOptions(
      options,
      { readTimeout: 'readTimeoutMs', killGrace: 'killGraceMs' },
      'StdioTransport',
    );
    const command = options.command;
    if (
      !Array.isArray(command) ||
      command.length === 0 ||
      !command.every((part) => typeof part === 'string' && !part.includes('\0')) ||
      command[0] === ''
    ) {
      throw new TransportConfigurationError(
        'command must be a non-empty argv array of strings (never a shell string)',
      );
    }
    const env = options.env ?? {};
    const inherit = options.inheritEnv ?? DEFAULT_INHERITED_ENV;
    if (!Array.isArray(inherit) || !inherit.every((name) => typeof name === 'string')) {
      throw new TransportConfigurationError(
        'inheritEnv must be an array of variable names, such as ["PATH", "HOME"]',
      );
    }
    if (typeof env !== 'object' || env === null) {
      throw new TransportConfigurationError('env must be an object of strings');
    }
    for (const [key, value] of Object.entries(env)) {
      if (
        typeof value !== 'string' ||
        key.includes('=') ||
        key.includes('\0') ||
        value.includes('\0')
      ) {
        throw new TransportConfigurationError('env must map names to strings', {
          details: { variable: key },
        });
      }
    }
    this.#command = Object.freeze([...command]);
    this.#env = stdioChildEnv(env, inherit);
    this.#cwd = options.cwd;
    this.#limits = resolveRecordLimits(options);
    this.#readTimeoutMs = positiveNumber('readTimeoutMs', options.readTimeoutMs, 120_000);
    this.#killGraceMs = positiveNumber('killGraceMs', options.killGraceMs, 2000);
    this.#maxStderrLineBytes = positiveInteger(
      'maxStderrLineBytes',
      options.maxStderrLineBytes,
      4096,
    );
    this.#stderrTailBytes =
      options.stderrTailBytes === 0
        ? 0
        : positiveInteger('stderrTailBytes', options.stderrTailBytes, 2048);
    this.#logger = options.logger;
  }

  static {
    handEarly = (transport, early) => {
      transport.#early = early;
    };
  }

  /** The child's process id while it runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  async start(): Promise<void> {
    if (this.#child !== undefined) throw new TransportError('The stdio transport already started');
    const [executable] = this.#command as [string, ...string[]];
    const early = this.#early;
    this.#early = undefined;
    // The events of a process spawned before this transport existed (the same argv,
    // environment and folder): its output waited in the pipes (or, once it exited, in memory).
    const sink: EarlyStdioSink = {
      stdout: (chunk) => this.#onStdout(chunk),
      stdoutEnd: () => this.#onStdoutEnd(),
      stderr: (chunk) => this.#onStderr(chunk),
      error: (error) =>
        this.#fail(new TransportError('The MCP server process failed', { cause: error })),
      stdinError: (error) =>
        this.#failAfterExit(
          new TransportError('Writing to the MCP server failed', { cause: error }),
        ),
      close: (code, signal) => this.#onClose(executable, code, signal),
    };
    const taken = early?.matches(this.#command, this.#env, this.#cwd)
      ? early.take(sink)
      : undefined;
    if (early !== undefined && taken === undefined) void early.dispose(this.#killGraceMs);
    let child: ChildProcess;
    let spawned: Promise<void>;
    if (early !== undefined && taken !== undefined) {
      child = early.child;
      spawned = early.spawned;
      this.#exited = early.exited;
    } else {
      child = spawnStdioChild(this.#command, this.#env, this.#cwd);
      spawned = spawnOutcome(child);
      this.#exited = new Promise((resolve) => child.once('close', () => resolve()));
    }
    this.#child = child;
    try {
      await spawned;
    } catch (error) {
      this.#closed = true;
      const code = (error as { code?: unknown }).code;
      const errno = typeof code === 'string' ? code : 'unknown';
      const hint =
        errno === 'ENOENT'
          ? `: not found (ENOENT); check that it is installed and on the PATH the server gets (inheritEnv, env.PATH)`
          : errno === 'EACCES'
            ? ': permission denied (EACCES); check that it is executable'
            : ` (${errno})`;
      throw new TransportError(
        `The MCP server command ${JSON.stringify(commandName(executable))} could not be started${hint}`,
        { cause: error, details: { command: commandName(executable), errno } },
      );
    }
    // An early process that exited before it was taken passes everything through the sink; what
    // it left (its exit with its code and stderr tail included) is delivered before start()
    // resolves, so nothing is written to it before its failure is known.
    if (taken === 'forwarded') {
      await early?.delivered;
      return;
    }
    child.on('error', sink.error);
    child.stdin?.on('error', sink.stdinError);
    child.stdout?.on('data', sink.stdout);
    child.stdout?.once('end', sink.stdoutEnd);
    child.stderr?.on('data', sink.stderr);
    // 'close' (not 'exit'): stdout is drained first, so a last answer is still delivered.
    child.once('close', sink.close);
  }

  #onClose(executable: string, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#closed) return;
    const how = code !== null ? `with code ${code}` : `on signal ${signal ?? 'unknown'}`;
    const stderrTail = this.#tailText();
    this.#fail(
      new TransportError(
        `The MCP server process ${JSON.stringify(commandName(executable))} exited ${how}${code === 127 ? ' (command not found inside the server)' : ''}${stderrTail === '' ? '' : '; its last stderr output is in details.stderrTail'}`,
        {
          details: {
            exitCode: code,
            signal,
            command: commandName(executable),
            ...(stderrTail === '' ? {} : { stderrTail }),
          },
        },
      ),
    );
  }

  async send(message: JSONRPCMessage): Promise<void> {
    return this.#write(message, true);
  }

  /**
   * Sends a request that stays open for the life of the process (`subscriptions/listen`): written
   * as {@link StdioTransport.send} writes it, but never counted as in flight (nor its answer, if
   * one comes), so the calls sent after it are written at once instead of waiting in a cork for
   * the end of the tick.
   */
  async sendStanding(message: JSONRPCRequest): Promise<void> {
    this.#standing.add(message.id);
    return this.#write(message, false);
  }

  async #write(message: JSONRPCMessage, counted: boolean): Promise<void> {
    const stdin = this.#child?.stdin;
    if (
      this.#closed ||
      stdin === undefined ||
      stdin === null ||
      stdin.destroyed ||
      !stdin.writable
    ) {
      // The process's own failure (its exit code and stderr tail), when known, is the cause.
      throw new RequestNotSentError(
        'The MCP server process is not running; nothing was sent',
        this.failure === undefined ? {} : { cause: this.failure },
      );
    }
    // An answer to the server's request while more than maxRecordBytes already wait in its stdin:
    // the server stopped reading while it keeps asking. Nothing more is buffered for it.
    if (
      ('result' in message || 'error' in message) &&
      stdin.writableLength > this.#limits.maxRecordBytes
    ) {
      const failure = new TransportError(
        'The MCP server stopped reading its stdin: more than maxRecordBytes wait there unread',
        {
          details: {
            reason: 'stdin-backlog',
            waitingBytes: stdin.writableLength,
            maxRecordBytes: this.#limits.maxRecordBytes,
          },
        },
      );
      this.#fail(failure);
      throw failure;
    }
    const line = `${JSON.stringify(message)}\n`;
    // With a request already in flight, more records are likely in this tick (a burst of
    // concurrent calls, or the waiting calls a batch of answers releases): the pipe is corked
    // and uncorked once the tick's callbacks and promise jobs have run, or as soon as it holds
    // MAX_CORKED_RECORDS records, so they leave in a few writes and the server wakes and reads
    // once per batch instead of once per record. With nothing in flight (sequential calls, the
    // first of a burst) the record is written at once.
    if (this.#inFlight > 0) {
      if (this.#corked === undefined) {
        this.#corked = stdin;
        this.#corkedRecords = 0;
        stdin.cork();
        process.nextTick(this.#uncork);
      } else if (++this.#corkedRecords >= MAX_CORKED_RECORDS) {
        this.#corkedRecords = 0;
        stdin.uncork();
        stdin.cork();
      }
    }
    if (counted && 'method' in message && 'id' in message) this.#inFlight++;
    // Once handed to the pipe, the bytes may reach the server: a later failure is ambiguous.
    // A failed write surfaces through the 'error' handler, which closes the transport and
    // rejects every pending request.
    if (stdin.write(line)) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        stdin.off('drain', done);
        stdin.off('close', done);
        resolve();
      };
      stdin.once('drain', done);
      stdin.once('close', done);
    });
  }

  async close(): Promise<void> {
    if (this.#closed && this.#child === undefined) return;
    const wasClosed = this.#closed;
    this.#closed = true;
    this.#clearRecordTimer();
    const child = this.#child;
    this.#child = undefined;
    if (child !== undefined) await this.#terminate(child);
    if (!wasClosed || this.failure !== undefined) this.onclose?.();
  }

  async #terminate(child: ChildProcess): Promise<void> {
    child.stdin?.end();
    const exited = this.#exited ?? Promise.resolve();
    if (child.exitCode !== null || child.signalCode !== null) {
      await exited;
      // The leader exited on its own (a failed start): what it started in its group may not have.
      signalGroup(child, 'SIGKILL');
      return;
    }
    signalGroup(child, 'SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const killed = await Promise.race([
      exited.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), this.#killGraceMs);
      }),
    ]);
    clearTimeout(timer);
    if (killed) {
      signalGroup(child, 'SIGKILL');
      await exited;
    } else {
      // The leader is gone; make sure nothing it started in its group survives.
      signalGroup(child, 'SIGKILL');
    }
  }

  /**
   * A write the process refused (its stdin closed: `EPIPE`) usually means it is exiting. Its exit
   * (with its code and stderr tail, see #onClose) is the failure reported when it comes within
   * `killGraceMs`; else `error` is. Nothing is written meanwhile: the pipe is no longer writable.
   */
  #failAfterExit(error: Error): void {
    const exited = this.#exited;
    if (this.#closed || exited === undefined) {
      this.#fail(error);
      return;
    }
    let timer: NodeJS.Timeout | undefined;
    void Promise.race([
      exited,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.#killGraceMs);
        timer.unref();
      }),
    ]).then(() => {
      clearTimeout(timer);
      this.#fail(error);
    });
  }

  #fail(error: Error): void {
    if (this.#closed) return;
    this.failure = error;
    this.#logger?.warn?.('MCP stdio transport failed', { code: (error as { code?: string }).code });
    this.onerror?.(error);
    this.#closed = true;
    this.#clearRecordTimer();
    const child = this.#child;
    this.#child = undefined;
    if (child !== undefined) void this.#terminate(child);
    this.onclose?.();
  }

  #clearRecordTimer(): void {
    if (this.#recordTimer !== undefined) {
      clearTimeout(this.#recordTimer);
      this.#recordTimer = undefined;
    }
  }

  #onStdout(chunk: Buffer): void {
    this.responseStarted = true;
    let start = 0;
    while (!this.#closed) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      const piece = end > start ? chunk.subarray(start, end) : undefined;
      if (piece !== undefined) {
        if (this.#pending === 0 && newline === -1) {
          this.#recordTimer = setTimeout(
            () =>
              this.#fail(
                new TransportTimeoutError('A stdio record did not complete within readTimeoutMs', {
                  details: { readTimeoutMs: this.#readTimeoutMs },
                }),
              ),
            this.#readTimeoutMs,
          );
        }
        this.#pending += piece.length;
        // The CR of a CRLF ending is framing, not record: a trailing CR does not count (if more
        // than a LF follows it, it becomes part of the record and the next byte is over).
        const framing = piece[piece.length - 1] === CARRIAGE_RETURN ? 1 : 0;
        if (this.#pending - framing > this.#limits.maxRecordBytes) {
          this.#fail(new ResponseTooLargeError('stdio', this.#limits.maxRecordBytes));
          return;
        }
        this.#chunks.push(piece);
      }
      if (newline === -1) return;
      start = newline + 1;
      this.#takeLine();
    }
  }

  /** The record kept so far, as one buffer; the kept pieces are forgotten. */
  #takeChunks(): Buffer {
    const chunks = this.#chunks;
    const line = chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
    // The pieces were copied (or the one piece taken): the array is reused for the next record.
    chunks.length = 0;
    this.#pending = 0;
    return line;
  }

  /** The server closed its stdout: a last record without a trailing newline is still a record. */
  #onStdoutEnd(): void {
    if (!this.#closed && this.#chunks.length > 0) this.#takeLine();
  }

  #takeLine(): void {
    this.#clearRecordTimer();
    let line = this.#takeChunks();
    if (line[line.length - 1] === CARRIAGE_RETURN) line = line.subarray(0, line.length - 1);
    // Only an empty line or one of spaces and tabs is skipped; anything else (NBSP, a BOM,
    // U+2028, a stray word) must be a JSON-RPC record.
    if (isBlankLine(line)) return;
    let messages: JSONRPCMessage[];
    try {
      messages = decodeRecord(decodeUtf8(line, 'stdio'), this.#limits);
    } catch (error) {
      this.#fail(error as Error);
      return;
    }
    for (const message of messages) {
      if (this.#closed) return;
      if (
        this.#inFlight > 0 &&
        'id' in message &&
        !('method' in message) &&
        (this.#standing.size === 0 || !this.#standing.has(message.id as string | number))
      ) {
        this.#inFlight--;
      }
      this.onmessage?.(message);
    }
  }

  /** The kept stderr tail as text: valid UTF-8 only, control and escape sequences removed. */
  #tailText(): string {
    if (this.#stderrTailLength === 0) return '';
    const text = Buffer.concat(this.#stderrTail).toString('utf8');
    return (
      text
        // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences are removed
        .replace(/\u001b\[[0-9;?]*[ -/]*[@-~]/g, '')
        // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are removed
        .replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\ufffd]/g, '')
        .trim()
    );
  }

  #keepTail(chunk: Buffer): void {
    if (this.#stderrTailBytes === 0) return;
    this.#stderrTail.push(
      Buffer.from(chunk.subarray(Math.max(0, chunk.length - this.#stderrTailBytes))),
    );
    this.#stderrTailLength += Math.min(chunk.length, this.#stderrTailBytes);
    while (this.#stderrTailLength > this.#stderrTailBytes && this.#stderrTail.length > 0) {
      const first = this.#stderrTail[0] as Buffer;
      const excess = this.#stderrTailLength - this.#stderrTailBytes;
      if (first.length <= excess) {
        this.#stderrTail.shift();
        this.#stderrTailLength -= first.length;
      } else {
        this.#stderrTail[0] = first.subarray(excess);
        this.#stderrTailLength -= excess;
      }
    }
  }

  #onStderr(chunk: Buffer): void {
    this.#keepTail(chunk);
    let start = 0;
    for (;;) {
      const newline = chunk.indexOf(NEWLINE, start);
      const end = newline === -1 ? chunk.length : newline;
      const room = this.#maxStderrLineBytes - this.#stderrBytes;
      if (end > start) {
        const take = Math.min(room, end - start);
        if (take > 0) {
          this.#stderrLine.push(Buffer.from(chunk.subarray(start, start + take)));
          this.#stderrBytes += take;
        }
        if (take < end - start) this.#stderrCut = true;
      }
      if (newline === -1) return;
      const text = Buffer.concat(this.#stderrLine).toString('utf8');
      this.#logger?.debug?.('MCP server stderr', { line: text, truncated: this.#stderrCut });
      this.#stderrLine = [];
      this.#stderrBytes = 0;
      this.#stderrCut = false;
      start = newline + 1;
    }
  }
}

/** The executable's file name, never its directory (which may name a user's home). */
function commandName(executable: string): string {
  const name = executable.split(/[\\/]/).pop() ?? executable;
  return name.length > 64 ? `${name.slice(0, 64)}…` : name;
}
