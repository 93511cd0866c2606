import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import type {
  AuthInfo,
  JSONRPCMessage,
  Transport,
  TransportSendOptions,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import type { FastCallOutcome } from '../gateway/fast-call-transport.js';
import { FastCallsInFlight } from '../gateway/fast-calls-in-flight.js';
import type { HttpFastCallHandler } from '../gateway/mcp-gateway.js';
import {
  isPlainCallToolResult,
  type PlainId,
  type PlainToolsCall,
} from '../gateway/plain-tools-call.js';

/** The SDK transport's keep-alive comment interval on a request's stream (its default, 15 s). */
const KEEP_ALIVE_MS = 15_000;
const KEEP_ALIVE = ': keepalive\n\n';

/** One plain call this session serves itself: where its answer goes, and how it is aborted. */
interface FastCall {
  readonly out: ServerResponse;
  readonly controller: AbortController;
  /** The answer's stream has started (something was sent before the answer): SSE, not JSON. */
  streaming: boolean;
  keepAlive: NodeJS.Timeout | undefined;
}

/**
 * The transport a legacy HTTP session's downstream server is connected to: the SDK's Streamable
 * HTTP transport (`inner`), which still serves every request the front hands it, and beside it
 * the fast path of the session's plain `tools/call` POSTs ({@link serve}), answered from Node's
 * `http` objects without a web `Request`, a `Response`, a stream, or the SDK's per-message
 * checks. What the SDK path would send on such a call's own stream (a message the server sends
 * with the call's id as `relatedRequestId`, the answer of a call handed back to the SDK) is
 * written to the call's response here; the answer alone leaves as `application/json`, as the
 * front sends the SDK path's single-event streams, and anything before it makes it an event
 * stream, as on the SDK path.
 */
export class HttpFastSession implements Transport {
  readonly #inner: WebStandardStreamableHTTPServerTransport;
  readonly #handler: HttpFastCallHandler;
  /** Plain calls in flight on the fast path, by id (until answered or the client goes). */
  readonly #running = new FastCallsInFlight<FastCall>();
  /** Requests in flight on the SDK path, by id (a fast call never reuses one of them). */
  readonly #sdkRunning = new Set<PlainId>();
  /** The versions the SDK transport accepts in `MCP-Protocol-Version` (set by the server). */
  #versions: readonly string[] | undefined;
  #closed = false;
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  onmessage?: Transport['onmessage'];

  constructor(inner: WebStandardStreamableHTTPServerTransport, handler: HttpFastCallHandler) {
    this.#inner = inner;
    this.#handler = handler;
  }

  get sessionId(): string | undefined {
    return this.#inner.sessionId;
  }

  setSupportedProtocolVersions(versions: string[]): void {
    this.#versions = [...versions];
    this.#inner.setSupportedProtocolVersions(versions);
  }

  start(): Promise<void> {
    this.#inner.onmessage = (message, extra) => this.#inbound(message, extra);
    this.#inner.onerror = (error) => this.onerror?.(error);
    this.#inner.onclose = () => {
      this.#closed = true;
      this.#sdkRunning.clear();
      this.#running.abortAll(new Error('Connection closed'), (call) => {
        // The SDK closes a request's stream when its transport closes: an empty event stream.
        this.#stream(call);
        call.out.end();
      });
      this.onclose?.();
    };
    return this.#inner.start();
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  send(message: JSONRPCMessage, options?: TransportSendOptions): Promise<void> {
    const record = message as { id?: unknown; method?: unknown };
    const answer = record.method === undefined && record.id !== undefined;
    const id = answer ? (record.id as PlainId) : options?.relatedRequestId;
    const call = id === undefined ? undefined : this.#running.get(id as PlainId);
    if (call === undefined) {
      if (answer) this.#sdkRunning.delete(id as PlainId);
      return (this.#inner as Transport).send(message, options);
    }
    if (answer) {
      this.#answer(id as PlainId, call, message);
    } else {
      if (call.out.destroyed) return Promise.resolve();
      this.#stream(call);
      call.out.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`);
    }
    return Promise.resolve();
  }

  /**
   * True when a POST of this session carrying `call` may be served by {@link serve}: every check
   * the SDK transport makes on it passes (open, initialized, `Accept` naming both JSON and event
   * streams, `Content-Type` exactly `application/json`, no `MCP-Protocol-Version` or one it
   * accepts), and its id is not in flight. Anything else goes to the SDK path, which decides.
   */
  accepts(call: PlainToolsCall, headers: IncomingHttpHeaders): boolean {
    if (this.#closed || this.#versions === undefined || !this.#handler.ready()) return false;
    const accept = headers.accept;
    if (
      typeof accept !== 'string' ||
      !accept.includes('application/json') ||
      !accept.includes('text/event-stream') ||
      headers['content-type'] !== 'application/json'
    ) {
      return false;
    }
    const version = headers['mcp-protocol-version'];
    if (version !== undefined && (typeof version !== 'string' || !this.#versions.includes(version)))
      return false;
    return !this.#running.has(call.id) && !this.#sdkRunning.has(call.id);
  }

  /**
   * Runs a plain call ({@link accepts}) and writes its answer to `out`; `ended` runs once `out`
   * has closed (answered, or the client gone). A cancelled call is not answered (its response
   * stays open, as the SDK path leaves its stream, until the client goes).
   */
  serve(
    call: PlainToolsCall,
    out: ServerResponse,
    authInfo: AuthInfo | undefined,
    ended: () => void,
  ): void {
    const running: FastCall = {
      out,
      controller: new AbortController(),
      streaming: false,
      keepAlive: undefined,
    };
    running.keepAlive = setTimeout(() => this.#keepAlive(running), KEEP_ALIVE_MS);
    running.keepAlive.unref();
    out.once('close', () => {
      this.#forget(call.id, running);
      ended();
    });
    this.#running
      .run(call.id, running, (signal) => this.#handler.call(call, signal, authInfo))
      .then(
        (value) => this.#settle(call, running, { ok: true, value }),
        (error: unknown) => this.#settle(call, running, { ok: false, error }),
      );
  }

  #settle(call: PlainToolsCall, running: FastCall, outcome: FastCallOutcome): void {
    // The SDK answers no request that was cancelled (or whose connection closed).
    if (running.controller.signal.aborted || this.#running.get(call.id) !== running) return;
    if (outcome.ok && isPlainCallToolResult(outcome.value)) {
      this.#answer(call.id, running, { result: outcome.value, jsonrpc: '2.0', id: call.id });
      return;
    }
    // The SDK checks, encodes and sends it; its answer comes back through send().
    this.onmessage?.(this.#handler.replay(call, outcome));
  }

  #answer(id: PlainId, call: FastCall, message: unknown): void {
    this.#forget(id, call);
    // The client went before its answer: the SDK path drops it too (undeliverable).
    if (call.out.destroyed) return;
    const text = JSON.stringify(message);
    if (call.streaming) {
      call.out.end(`event: message\ndata: ${text}\n\n`);
      return;
    }
    // The head the front writes for the SDK's single-answer stream (its headers, in order).
    const head = this.#head('application/json');
    head['content-length'] = String(Buffer.byteLength(text));
    call.out.writeHead(200, head);
    call.out.end(text);
  }

  #forget(id: PlainId, call: FastCall): void {
    if (!this.#running.forget(id, call)) return;
    if (call.keepAlive !== undefined) clearTimeout(call.keepAlive);
    call.keepAlive = undefined;
  }

  #keepAlive(call: FastCall): void {
    if (call.out.writableEnded || call.out.destroyed || this.#closed) return;
    this.#stream(call);
    call.out.write(KEEP_ALIVE);
    call.keepAlive = setTimeout(() => this.#keepAlive(call), KEEP_ALIVE_MS);
    call.keepAlive.unref();
  }

  /** Starts `call`'s answer as an event stream (the SDK's headers), once. */
  #stream(call: FastCall): void {
    if (call.streaming || call.out.headersSent) return;
    call.streaming = true;
    call.out.writeHead(200, this.#head('text/event-stream'));
  }

  /** The headers of the SDK transport's answer to a request (sorted, as a web `Headers`). */
  #head(contentType: string): Record<string, string> {
    const sessionId = this.#inner.sessionId;
    return {
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'content-type': contentType,
      ...(sessionId === undefined ? {} : { 'mcp-session-id': sessionId }),
      'x-accel-buffering': 'no',
    };
  }

  #inbound(message: JSONRPCMessage, extra: Parameters<NonNullable<Transport['onmessage']>>[1]) {
    const record = message as { id?: unknown; method?: unknown; params?: unknown };
    if (typeof record.method === 'string') {
      if (record.id !== undefined) this.#sdkRunning.add(record.id as PlainId);
      else {
        // A well-formed `notifications/cancelled` naming a fast call aborts it, as the SDK's would.
        this.#running.cancel(message);
      }
    }
    this.onmessage?.(message, extra);
  }
}
