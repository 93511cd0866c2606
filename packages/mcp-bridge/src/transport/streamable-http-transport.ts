import { setMaxListeners } from 'node:events';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  isJSONRPCErrorResponse,
  isJSONRPCNotification,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  type JSONRPCRequest,
  type JSONRPCResultResponse,
  type MessageExtraInfo,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { Dispatcher } from 'undici';
import { lazyRequire } from '../lazy-require.js';
import { McpBridgeError } from '../mcp-bridge-error.js';
import { sleepUnlessAborted } from './abortable-sleep.js';
import type { McpAuthChallenge, McpAuthHeaders, McpAuthProvider } from './auth-provider.js';
import { markAuthRefusal } from './auth-refusal.js';
import { decodeRecord } from './decode-record.js';
import {
  RequestNotSentError,
  ResponseTooLargeError,
  SessionExpiredError,
  TransportError,
  TransportHttpError,
  TransportProtocolError,
  TransportTimeoutError,
  TransportUnauthorizedError,
} from './errors.js';
import { checkMessageHeaders, hasControlCharacter } from './header-rules.js';
import type { McpBridgeLogger } from './logger.js';
import { isMarkedPlainRecord } from './plain-message.js';
import type { RecordLimits } from './record-limits.js';
import { parseRetryAfter } from './retry-after.js';
import { ServerOverloadedError } from './server-overloaded-error.js';
import { ServerRateLimitedError } from './server-rate-limited-error.js';
import { SseParser, type SseParserHandlers } from './sse-parser.js';
import {
  checkStreamableHttpOptions,
  type StreamableHttpTransportOptions,
} from './streamable-http-options.js';
import { decodeUtf8 } from './utf8.js';

export type { StreamableHttpTransportOptions };

/** undici (CommonJS, tens of milliseconds to load), required by the first request: a gateway
 * with stdio upstreams only never loads it. */
const undici = lazyRequire<typeof import('undici')>('undici');

const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_INVALID_ARG',
  'ERR_TLS_CERT_ALTNAME_INVALID',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
]);

/** Bytes of a 4xx body read for a JSON-RPC error in modern mode. */
const ERROR_BODY_BYTES = 64 * 1024;

/**
 * Which protocol era the transport speaks: `legacy` keeps the session (`Mcp-Session-Id`), the
 * standalone GET stream, `Last-Event-ID` resumption and DELETE on close; `modern` (MCP
 * 2026-07-28) has none of them, and a 4xx answer that carries a JSON-RPC error is delivered as
 * that error.
 */
export type HttpTransportEra = 'legacy' | 'modern';

/** Extra headers for one outgoing message (the protocol layer's `Mcp-Method`, `Mcp-Name`, ...). */
export type MessageHeaders = (
  message: JSONRPCMessage,
) => Readonly<Record<string, string>> | undefined;

/** What `onmessage` gets with a message that came in the answer to one of the client's requests. */
export interface RelatedMessageInfo {
  /** The JSON-RPC id of the client's request whose answer carried the message. */
  readonly relatedRequestId: RequestId;
}

/** A 4xx answer whose body is a JSON-RPC error: delivered to the protocol layer as that error. */
interface RejectedWithRpcError {
  readonly rpcError: JSONRPCMessage;
}

/** How one `subscriptions/listen` stream ended ({@link StreamableHttpTransport.listen}). */
export type ListenStreamEnd =
  | {
      /** The server ended the stream (after a graceful close or an error answer). */
      readonly kind: 'ended';
    }
  | {
      /** The transport was closed. */
      readonly kind: 'closed';
    }
  | {
      /** The stream was refused or cut. */
      readonly kind: 'failed';
      /** Why: an HTTP error, a limit, a malformed record, a broken wire. */
      readonly error: Error;
    };

/** The longest `close()` waits for the session `DELETE` (also never past `readTimeoutMs`). */
const DELETE_DEADLINE_MS = 5000;

/** How long a request's SSE stream may stay open after its answer arrived. */
const ANSWERED_STREAM_LINGER_MS = 2000;

/** True when an error from undici proves no request byte reached the server. */
export function isConnectPhaseError(error: unknown): boolean {
  for (let current = error, depth = 0; current !== undefined && depth < 5; depth++) {
    if (typeof current !== 'object' || current === null) return false;
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (NOT_SENT_CODES.has(code) || code.startsWith('NET_'))) {
      return true;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

interface StreamContext {
  /** The request whose response this stream carries, if any. */
  readonly requestId: RequestId | undefined;
  answered: boolean;
  lastEventId: string | undefined;
  retryMs: number | undefined;
}

/**
 * The SDK `Transport` over MCP Streamable HTTP (JSON and SSE replies) with undici.
 *
 * Every JSON body and every SSE event is bounded by `maxRecordBytes` as bytes arrive (a declared
 * `Content-Length` over the limit fails before reading) and scanned for structure before parsing;
 * requests ask for `Accept-Encoding: identity`. A limit error, or a stream that ends before its
 * response and cannot be resumed, fails the whole transport: pending requests are rejected at
 * once and the session is forgotten.
 */
export class StreamableHttpTransport implements Transport {
  onclose?: (() => void) | undefined;
  onerror?: ((error: Error) => void) | undefined;
  /** `extra` is a `RelatedMessageInfo` (the request it answers) for a message that came in the answer to a request. */
  onmessage?: ((message: JSONRPCMessage, extra?: MessageExtraInfo) => void) | undefined;
  sessionId?: string | undefined;

  /** The error that ended the wire, if one did. */
  failure: Error | undefined;
  /** Set when response headers arrive; the client clears it before a replayable read. */
  responseStarted = false;
  /** The protocol era; set by the protocol layer before it sends. Default `legacy`. */
  era: HttpTransportEra = 'legacy';
  /** Per-message extra headers (validated like fixed headers); set by the protocol layer. */
  messageHeaders: MessageHeaders | undefined;

  readonly #url: URL;
  readonly #dispatcher: Dispatcher;
  readonly #authProvider: McpAuthProvider | undefined;
  readonly #headers: Readonly<Record<string, string>>;
  readonly #limits: RecordLimits;
  readonly #readTimeoutMs: number;
  readonly #deleteSessionOnClose: boolean;
  readonly #maxSseReconnects: number;
  readonly #defaultSseRetry: number;
  readonly #maxSseRetry: number;
  readonly #maxSseCommentBytes: number;
  readonly #logger: McpBridgeLogger | undefined;
  readonly #standaloneStream: boolean;
  readonly #abort = new AbortController();
  #protocolVersion: string | undefined;
  #closed = false;
  #started = false;

  /**
   * Validates `options`; nothing is sent before `start()`.
   * @throws {TransportConfigurationError} for an invalid or non-https (except loopback) URL, a URL
   *   with credentials, or a bad option.
   */
  constructor(options: StreamableHttpTransportOptions) {
    // Every request in flight (and each open SSE body) listens on this internal signal until it
    // completes, when undici removes its listener: the count is bounded by the client's
    // maxConcurrentRequests, so Node's 10-listener leak warning would be noise in the host.
    setMaxListeners(0, this.#abort.signal);
    const checked = checkStreamableHttpOptions(options);
    this.#url = checked.url;
    this.#dispatcher = options.dispatcher;
    this.#authProvider = options.authProvider;
    this.#headers = checked.headers;
    this.#limits = checked.limits;
    this.#readTimeoutMs = checked.readTimeoutMs;
    this.#deleteSessionOnClose = checked.deleteSessionOnClose;
    this.#maxSseReconnects = checked.maxSseReconnects;
    this.#defaultSseRetry = checked.defaultSseRetryMs;
    this.#maxSseRetry = checked.maxSseRetryMs;
    this.#maxSseCommentBytes = checked.maxSseCommentBytes;
    this.#standaloneStream = checked.standaloneStream;
    this.#logger = options.logger;
  }

  /** The protocol version negotiated by `initialize`. */
  get protocolVersion(): string | undefined {
    return this.#protocolVersion;
  }

  async start(): Promise<void> {
    if (this.#started) throw new TransportError('The HTTP transport already started');
    this.#started = true;
  }

  /** Sets (or, with `undefined`, clears) the `MCP-Protocol-Version` header of later requests. */
  setProtocolVersion(version: string | undefined): void {
    this.#protocolVersion = version;
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) {
      throw new RequestNotSentError('The MCP connection is closed; nothing was sent');
    }
    const requestId = isJSONRPCRequest(message) ? message.id : undefined;
    const body = JSON.stringify(message);
    const isInitialize = isJSONRPCRequest(message) && message.method === 'initialize';
    const posted = await this.#post(body, message);
    if ('rpcError' in posted) {
      if (requestId !== undefined) {
        this.#dispatchAll([{ ...(posted.rpcError as object), id: requestId } as JSONRPCMessage]);
      }
      return;
    }
    const response = posted;
    const status = response.statusCode;
    if (isInitialize) {
      const session = headerValue(response.headers['mcp-session-id']);
      if (session !== undefined) {
        if (hasControlCharacter(session) || session.length > 1024) {
          drop(response.body);
          throw new TransportProtocolError('The server sent an invalid Mcp-Session-Id');
        }
        this.sessionId = session;
      }
    }
    if (
      isJSONRPCNotification(message) &&
      message.method === 'notifications/initialized' &&
      this.era === 'legacy' &&
      this.#standaloneStream
    ) {
      void this.#openStandaloneStream();
    }
    if (status === 202) {
      // Accepted: nothing to read. A body is drained in the background for at most
      // readTimeoutMs (then dropped), so a 202 whose body never ends holds up no send.
      void discard(response.body, this.#readTimeoutMs);
      return;
    }
    const contentType = (headerValue(response.headers['content-type']) ?? '').toLowerCase();
    if (contentType.startsWith('text/event-stream')) {
      const context: StreamContext = {
        requestId,
        answered: false,
        lastEventId: undefined,
        retryMs: undefined,
      };
      void this.#consumeStream(response.body, context, 0);
      return;
    }
    if (contentType.startsWith('application/json')) {
      const text = await this.#readBody(response);
      if (text === undefined) return;
      let messages: JSONRPCMessage[];
      try {
        messages = decodeRecord(text, this.#limits);
      } catch (error) {
        if (requestId === undefined && error instanceof TransportProtocolError) {
          // A notification or response expects no answer: an unusable body is ignored.
          this.#logger?.debug?.('Ignored a non-JSON-RPC body sent for a notification');
          return;
        }
        this.#fail(error as Error);
        return;
      }
      this.#dispatchAll(messages, requestId);
      return;
    }
    void discard(response.body, this.#readTimeoutMs);
    if (requestId === undefined) return;
    throw new TransportProtocolError('The server answered with an unexpected content type', {
      details: { status },
    });
  }

  /**
   * POSTs one message, answering 401/403/404 and HTTP errors; returns a 2xx response, or in
   * modern mode the JSON-RPC error a 4xx answer carried.
   */
  async #post(
    body: string,
    message: JSONRPCMessage,
    background = false,
  ): Promise<Dispatcher.ResponseData | RejectedWithRpcError> {
    let challenges = 0;
    let previous: McpAuthChallenge['previous'];
    const extra = messageHeaderValues(this.messageHeaders, message);
    for (;;) {
      const headers = await this.#requestHeaders(
        {
          ...extra,
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        'POST',
      );
      let response: Dispatcher.ResponseData;
      try {
        response = await undici().request(this.#url, {
          method: 'POST',
          headers,
          body,
          dispatcher: this.#dispatcher,
          signal: this.#abort.signal,
          headersTimeout: this.#readTimeoutMs,
          bodyTimeout: 0,
        });
      } catch (error) {
        throw this.#requestFailure(error);
      }
      // A background stream (subscriptions/listen) says nothing about the caller's request.
      if (!background) this.responseStarted = true;
      const status = response.statusCode;
      this.#noteResponse(status, response);
      if (status >= 200 && status < 300) return response;
      if (status === 429 || status === 529) {
        // Refused under load: typed, with the server's Retry-After; never retried here. An
        // error's body is never read: dropped at once, so it cannot hold up the request.
        drop(response.body);
        const retryAfterMs = parseRetryAfter(headerValue(response.headers['retry-after']));
        throw status === 429
          ? new ServerRateLimitedError(retryAfterMs)
          : new ServerOverloadedError(retryAfterMs);
      }
      // In modern mode (and for a legacy handshake, which a modern-only server refuses with the
      // versions it speaks) a 4xx JSON-RPC error body is the answer to the request.
      const readsRpcError =
        this.era === 'modern' || (isJSONRPCRequest(message) && message.method === 'initialize');
      if (readsRpcError && status >= 400 && status < 500 && status !== 401 && status !== 403) {
        const rpcError = await readRpcError(response, this.#limits, this.#readTimeoutMs);
        if (rpcError !== undefined) return { rpcError };
        throw new TransportHttpError(status);
      }
      drop(response.body);
      if (status === 401 || status === 403) {
        challenges++;
        if (
          await this.#answerChallenge(status, response, challenges, previous, headers.authorization)
        ) {
          previous = { status, wwwAuthenticate: headerValue(response.headers['www-authenticate']) };
          continue;
        }
        throw new TransportUnauthorizedError(status);
      }
      if (status === 404 && this.sessionId !== undefined) {
        this.sessionId = undefined;
        throw new SessionExpiredError('The MCP server no longer knows this session');
      }
      throw new TransportHttpError(status);
    }
  }

  /**
   * Opens one `subscriptions/listen` stream (modern mode): POSTs `message` with the same headers,
   * auth and limits as every request, and hands each record the stream carries to `onMessage`
   * (not to the JSON-RPC layer). Every event is bounded by `maxRecordBytes` and the structure
   * limits, comments by `maxSseCommentBytes`, and each record must complete within
   * `readTimeoutMs`. Resolves when the stream ends or is cut; a limit error, a malformed record, an
   * HTTP error or a broken connection ends only this stream, never the transport.
   */
  async listen(
    message: JSONRPCRequest,
    onMessage: (message: JSONRPCMessage) => void,
  ): Promise<ListenStreamEnd> {
    if (this.#closed) return { kind: 'closed' };
    let posted: Dispatcher.ResponseData | RejectedWithRpcError;
    try {
      posted = await this.#post(JSON.stringify(message), message, true);
    } catch (error) {
      return this.#closed ? { kind: 'closed' } : { kind: 'failed', error: error as Error };
    }
    if ('rpcError' in posted) {
      onMessage({ ...(posted.rpcError as object), id: message.id } as JSONRPCMessage);
      return { kind: 'ended' };
    }
    const body = posted.body;
    const contentType = (headerValue(posted.headers['content-type']) ?? '').toLowerCase();
    if (!contentType.startsWith('text/event-stream')) {
      // A server that answers at once (for example with a JSON-RPC error) sends one small record.
      let rpcError: JSONRPCMessage | undefined;
      if (contentType.startsWith('application/json')) {
        rpcError = await readRpcError(posted, this.#limits, this.#readTimeoutMs);
      } else {
        drop(body);
      }
      if (rpcError === undefined) {
        return {
          kind: 'failed',
          error: new TransportProtocolError(
            'The server answered subscriptions/listen without a stream',
            {
              details: { status: posted.statusCode },
            },
          ),
        };
      }
      onMessage({ ...(rpcError as object), id: message.id } as JSONRPCMessage);
      return { kind: 'ended' };
    }
    const { parser, clearTimer } = this.#recordParser(body, {
      onEvent: (event) => {
        if (event.event !== 'message' || event.data === '') return;
        for (const decoded of decodeRecord(event.data, this.#limits)) {
          if (this.#closed) return;
          onMessage(decoded);
        }
      },
    });
    try {
      for await (const chunk of body) {
        if (this.#closed) break;
        parser.push(chunk as Buffer);
      }
    } catch (error) {
      body.destroy();
      if (this.#closed) return { kind: 'closed' };
      return {
        kind: 'failed',
        error: McpBridgeError.isInstance(error)
          ? error
          : new TransportError('The subscriptions/listen stream broke off', { cause: error }),
      };
    } finally {
      clearTimer();
    }
    return this.#closed ? { kind: 'closed' } : { kind: 'ended' };
  }

  /**
   * An SSE parser bounded like every record source: the record byte and comment limits, and each
   * record under `readTimeoutMs` (a record that does not complete destroys `body`). Call
   * `clearTimer` when the stream ends.
   */
  #recordParser(
    body: Dispatcher.ResponseData['body'],
    handlers: Pick<SseParserHandlers, 'onEvent' | 'onRetry'>,
  ): { readonly parser: SseParser; readonly clearTimer: () => void } {
    let timer: NodeJS.Timeout | undefined;
    const clearTimer = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    };
    const parser = new SseParser(
      { maxEventBytes: this.#limits.maxRecordBytes, maxCommentBytes: this.#maxSseCommentBytes },
      {
        ...handlers,
        onRecordStart: () => {
          timer = setTimeout(() => {
            body.destroy(
              new TransportTimeoutError('An SSE record did not complete within readTimeoutMs'),
            );
          }, this.#readTimeoutMs);
        },
        onRecordEnd: clearTimer,
      },
    );
    return { parser, clearTimer };
  }

  /** Lets the auth provider see each answer's `DPoP-Nonce` (RFC 9449 §9). */
  #noteResponse(status: number, response: Dispatcher.ResponseData): void {
    this.#authProvider?.onResponse?.({
      url: this.#url.href,
      status,
      dpopNonce: headerValue(response.headers['dpop-nonce']),
    });
  }

  async #answerChallenge(
    status: 401 | 403,
    response: Dispatcher.ResponseData,
    attempt: number,
    previous: McpAuthChallenge['previous'],
    authorization: string | undefined,
  ): Promise<boolean> {
    const provider = this.#authProvider;
    if (provider?.onChallenge === undefined) return false;
    const limit = provider.maxChallengesPerRequest ?? 2;
    if (attempt > limit) return false;
    try {
      return (
        (await provider.onChallenge({
          status,
          wwwAuthenticate: headerValue(response.headers['www-authenticate']),
          url: this.#url.href,
          attempt,
          authorization,
          dpopNonce: headerValue(response.headers['dpop-nonce']),
          ...(previous === undefined ? {} : { previous }),
        })) === true
      );
    } catch (error) {
      // The provider's own error (for example OAuth's AuthorizationRequiredError with a widened
      // scope) reaches the caller unchanged; the server refused the request, so it did not run.
      if (McpBridgeError.isInstance(error)) {
        markAuthRefusal(error);
        throw error;
      }
      throw new TransportUnauthorizedError(status, { cause: error });
    }
  }

  #requestFailure(error: unknown): Error {
    if (this.#closed) {
      return new TransportError('The MCP connection was closed', { cause: error });
    }
    if (isConnectPhaseError(error)) {
      return new RequestNotSentError('The connection failed before the request was sent', {
        cause: error,
        details: { code: errorCode(error) },
      });
    }
    if (errorCode(error) === 'UND_ERR_HEADERS_TIMEOUT') {
      return new TransportTimeoutError('The MCP server did not answer within readTimeoutMs', {
        cause: error,
        details: { readTimeoutMs: this.#readTimeoutMs },
      });
    }
    return new TransportError('The HTTP request failed after it may have been sent', {
      cause: error,
      details: { code: errorCode(error) },
    });
  }

  async #requestHeaders(
    base: Record<string, string>,
    method: string,
  ): Promise<Record<string, string>> {
    const headers: Record<string, string> = { ...this.#headers, ...base };
    headers['accept-encoding'] = 'identity';
    if (this.sessionId !== undefined) headers['mcp-session-id'] = this.sessionId;
    if (this.#protocolVersion !== undefined)
      headers['mcp-protocol-version'] = this.#protocolVersion;
    if (this.#authProvider?.headers !== undefined) {
      await this.#providerHeaders(headers, method);
    } else if (this.#authProvider !== undefined) {
      let token: string | undefined;
      try {
        token = await this.#authProvider.token();
      } catch (error) {
        // The provider's own error (for example OAuth's AuthorizationRequiredError) reaches the
        // caller unchanged; nothing was sent.
        if (McpBridgeError.isInstance(error)) {
          markAuthRefusal(error);
          throw error;
        }
        throw new RequestNotSentError('The token could not be resolved; nothing was sent', {
          cause: error,
        });
      }
      if (token !== undefined) {
        if (typeof token !== 'string' || token === '' || hasControlCharacter(token)) {
          throw new RequestNotSentError(
            'The token is not a safe non-empty string; nothing was sent',
          );
        }
        headers.authorization = `Bearer ${token}`;
      }
    }
    return headers;
  }

  /** The provider's `Authorization` (and DPoP proof) for this exact request. */
  async #providerHeaders(headers: Record<string, string>, method: string): Promise<void> {
    let auth: McpAuthHeaders | undefined;
    try {
      auth = await this.#authProvider?.headers?.({ method, url: this.#url.href });
    } catch (error) {
      if (McpBridgeError.isInstance(error)) {
        markAuthRefusal(error);
        throw error;
      }
      throw new RequestNotSentError('The auth headers could not be resolved; nothing was sent', {
        cause: error,
      });
    }
    if (auth === undefined) return;
    const values = auth.dpop === undefined ? [auth.authorization] : [auth.authorization, auth.dpop];
    for (const value of values) {
      if (typeof value !== 'string' || value === '' || hasControlCharacter(value)) {
        throw new RequestNotSentError(
          'The auth headers are not safe non-empty strings; nothing was sent',
        );
      }
    }
    headers.authorization = auth.authorization;
    if (auth.dpop !== undefined) headers.dpop = auth.dpop;
  }

  async #readBody(response: Dispatcher.ResponseData): Promise<string | undefined> {
    const limit = this.#limits.maxRecordBytes;
    const declared = Number(headerValue(response.headers['content-length']) ?? Number.NaN);
    if (Number.isFinite(declared) && declared > limit) {
      drop(response.body);
      this.#fail(new ResponseTooLargeError('content-length', limit));
      return undefined;
    }
    const chunks: Buffer[] = [];
    let total = 0;
    const timer = setTimeout(() => {
      response.body.destroy(
        new TransportTimeoutError('A JSON record did not complete within readTimeoutMs'),
      );
    }, this.#readTimeoutMs);
    try {
      for await (const chunk of response.body) {
        total += (chunk as Buffer).length;
        if (total > limit) {
          response.body.destroy();
          this.#fail(new ResponseTooLargeError('json', limit));
          return undefined;
        }
        chunks.push(chunk as Buffer);
      }
    } catch (error) {
      this.#fail(
        error instanceof TransportTimeoutError
          ? error
          : new TransportError('The HTTP response broke off', { cause: error }),
      );
      return undefined;
    } finally {
      clearTimeout(timer);
    }
    try {
      return decodeUtf8(Buffer.concat(chunks, total), 'json');
    } catch (error) {
      this.#fail(error as Error);
      return undefined;
    }
  }

  async #consumeStream(
    body: Dispatcher.ResponseData['body'],
    context: StreamContext,
    reconnects: number,
  ): Promise<void> {
    const { parser, clearTimer } = this.#recordParser(body, {
      onRetry: (milliseconds) => {
        context.retryMs = Math.min(milliseconds, this.#maxSseRetry);
      },
      onEvent: (event) => {
        if (event.id !== undefined) context.lastEventId = event.id;
        if (event.event !== 'message' || event.data === '') return;
        const messages = decodeRecord(event.data, this.#limits);
        for (const message of messages) {
          if (
            context.requestId !== undefined &&
            isResponse(message) &&
            message.id === context.requestId
          ) {
            context.answered = true;
          }
        }
        this.#dispatchAll(messages, context.requestId);
      },
    });
    let failure: Error | undefined;
    try {
      let linger: NodeJS.Timeout | undefined;
      try {
        for await (const chunk of body) {
          if (this.#closed) break;
          parser.push(chunk as Buffer);
          // The answer is in: a server that keeps the stream open gets a short grace to end it
          // (so the connection can be reused), then the stream is dropped.
          if (context.requestId !== undefined && context.answered && linger === undefined) {
            linger = setTimeout(() => body.destroy(), ANSWERED_STREAM_LINGER_MS);
          }
        }
      } finally {
        clearTimeout(linger);
      }
    } catch (error) {
      failure =
        error instanceof ResponseTooLargeError ||
        error instanceof TransportTimeoutError ||
        (error as { code?: string }).code?.startsWith('TRANSPORT_') === true
          ? (error as Error)
          : new TransportError('The SSE stream broke off', { cause: error });
    } finally {
      clearTimer();
    }
    if (this.#closed) return;
    if (failure !== undefined && (failure as { code?: string }).code !== 'TRANSPORT_FAILED') {
      // A limit, a timeout or a malformed record: the wire is no longer trustworthy.
      body.destroy();
      this.#fail(failure);
      return;
    }
    if (context.requestId === undefined || context.answered) return;
    if (
      this.era === 'legacy' &&
      context.lastEventId !== undefined &&
      reconnects < this.#maxSseReconnects
    ) {
      await this.#resume(context, reconnects + 1);
      return;
    }
    this.#fail(failure ?? new TransportError('The SSE stream ended before the response arrived'));
  }

  async #resume(context: StreamContext, reconnects: number): Promise<void> {
    const delay = context.retryMs ?? this.#defaultSseRetry;
    this.#logger?.debug?.('Resuming the SSE stream', { delayMs: delay, attempt: reconnects });
    await this.#sleep(delay);
    if (this.#closed) return;
    let response: Dispatcher.ResponseData;
    try {
      response = await this.#getEventStream(context.lastEventId);
    } catch (error) {
      this.#fail(new TransportError('Resuming the SSE stream failed', { cause: error }));
      return;
    }
    if (!isEventStream(response)) {
      drop(response.body);
      this.#fail(new TransportHttpError(response.statusCode, { details: { phase: 'resume' } }));
      return;
    }
    await this.#consumeStream(response.body, context, reconnects);
  }

  /** Waits `milliseconds`, or less when the transport closes (the timer never outlives it). */
  #sleep(milliseconds: number): Promise<void> {
    return sleepUnlessAborted(milliseconds, this.#abort.signal);
  }

  /**
   * Opens the optional GET stream on which a server sends requests and notifications that belong
   * to no client request (for example an elicitation). A 405 means the server offers none.
   * Records on it are bounded like any other; a limit error fails the transport.
   */
  async #openStandaloneStream(): Promise<void> {
    let response: Dispatcher.ResponseData;
    try {
      response = await this.#getEventStream(undefined);
    } catch (error) {
      this.#logger?.debug?.('The standalone SSE stream could not be opened', {
        code: errorCode(error),
      });
      return;
    }
    if (!isEventStream(response)) {
      drop(response.body);
      return;
    }
    const context: StreamContext = {
      requestId: undefined,
      answered: false,
      lastEventId: undefined,
      retryMs: undefined,
    };
    await this.#consumeStream(response.body, context, 0);
  }

  /** A GET for an SSE stream (resuming after `lastEventId` when given); the body is unbounded in time, not in bytes. */
  async #getEventStream(lastEventId: string | undefined): Promise<Dispatcher.ResponseData> {
    const headers = await this.#requestHeaders({ accept: 'text/event-stream' }, 'GET');
    if (lastEventId !== undefined) headers['last-event-id'] = lastEventId;
    return undici().request(this.#url, {
      method: 'GET',
      headers,
      dispatcher: this.#dispatcher,
      signal: this.#abort.signal,
      headersTimeout: this.#readTimeoutMs,
      bodyTimeout: 0,
    });
  }

  /**
   * Hands each message on; one that came in the answer to a request of the client's (its JSON
   * body or SSE stream) names that request as `relatedRequestId`, so a server request there is
   * tied to the call it belongs to.
   */
  #dispatchAll(messages: readonly JSONRPCMessage[], relatedRequestId?: RequestId): void {
    const extra: RelatedMessageInfo | undefined =
      relatedRequestId === undefined ? undefined : { relatedRequestId };
    for (const message of messages) {
      if (this.#closed) return;
      this.onmessage?.(message, extra as MessageExtraInfo | undefined);
    }
  }

  #fail(error: Error): void {
    if (this.#closed) return;
    this.failure = error;
    this.#logger?.warn?.('MCP HTTP transport failed', {
      code: errorCode(error),
      message: error.message,
      cause: String((error as { cause?: unknown }).cause),
    });
    this.onerror?.(error);
    this.#shutdown();
    this.onclose?.();
  }

  #shutdown(): void {
    this.#closed = true;
    this.sessionId = undefined;
    this.#abort.abort(new TransportError('The MCP connection was closed'));
  }

  /**
   * Closes the transport: everything in flight is aborted and `onclose` runs first, so pending
   * requests are rejected at once; then a legacy session is ended with `DELETE`, given at most
   * `min(readTimeoutMs, 5000)` ms in all (token, connection, headers) and its body is never read.
   * No timer of it outlives `close()`.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    const session = this.sessionId;
    this.#shutdown();
    this.onclose?.();
    if (session !== undefined && this.era === 'legacy' && this.#deleteSessionOnClose) {
      await this.#deleteSession(session);
    }
  }

  async #deleteSession(session: string): Promise<void> {
    const deadlineMs = Math.min(this.#readTimeoutMs, DELETE_DEADLINE_MS);
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        abort.abort(new TransportTimeoutError('The session DELETE did not finish in time'));
        resolve();
      }, deadlineMs);
    });
    const attempt = (async () => {
      const headers = await this.#requestHeaders({}, 'DELETE');
      headers['mcp-session-id'] = session;
      abort.signal.throwIfAborted();
      const response = await undici().request(this.#url, {
        method: 'DELETE',
        headers,
        dispatcher: this.#dispatcher,
        signal: abort.signal,
        headersTimeout: deadlineMs,
        bodyTimeout: deadlineMs,
      });
      // The status is all there is to know: the body is dropped, never drained.
      drop(response.body);
    })().catch((error: unknown) => {
      this.#logger?.debug?.('Deleting the MCP session failed', { code: errorCode(error) });
    });
    try {
      await Promise.race([attempt, deadline]);
    } finally {
      clearTimeout(timer);
      abort.abort();
    }
  }
}

/** The protocol layer's headers for one message, checked like fixed headers. */
function messageHeaderValues(
  source: MessageHeaders | undefined,
  message: JSONRPCMessage,
): Record<string, string> {
  const headers = source?.(message);
  if (headers === undefined) return {};
  try {
    return checkMessageHeaders(headers);
  } catch (error) {
    throw new RequestNotSentError('A per-request header is not safe to send; nothing was sent', {
      cause: error,
    });
  }
}

/** Reads a small 4xx body; returns it when it is one JSON-RPC error response. */
async function readRpcError(
  response: Dispatcher.ResponseData,
  limits: RecordLimits,
  readTimeoutMs: number,
): Promise<JSONRPCMessage | undefined> {
  const contentType = (headerValue(response.headers['content-type']) ?? '').toLowerCase();
  if (!contentType.startsWith('application/json')) {
    drop(response.body);
    return undefined;
  }
  const chunks: Buffer[] = [];
  let total = 0;
  // The body must be whole within readTimeoutMs, like every record; then it is dropped.
  const timer = setTimeout(() => response.body.destroy(), readTimeoutMs);
  try {
    for await (const chunk of response.body) {
      total += (chunk as Buffer).length;
      if (total > ERROR_BODY_BYTES) {
        response.body.destroy();
        return undefined;
      }
      chunks.push(chunk as Buffer);
    }
    // Strict like every other record: a body that is not UTF-8 is not a JSON-RPC error body
    // (decodeUtf8 throws, and the catch below answers undefined).
    const messages = decodeRecord(decodeUtf8(Buffer.concat(chunks, total), 'json'), {
      ...limits,
      maxRecordBytes: Math.min(limits.maxRecordBytes, ERROR_BODY_BYTES),
    });
    const [only] = messages;
    return messages.length === 1 && only !== undefined && isJSONRPCErrorResponse(only)
      ? only
      : undefined;
  } catch {
    return undefined;
  } finally {
    clearTimeout(timer);
  }
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function errorCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Drops a body unread. undici's body destroyed before its end emits `RequestAbortedError`: that
 * error is expected here and swallowed (an unhandled one would end the process).
 */
function drop(body: Dispatcher.ResponseData['body']): void {
  body.on('error', () => undefined);
  body.destroy();
}

/**
 * Reads and drops a body nobody needs (at most 64 KiB, so the connection can be reused); a body
 * that has not ended within `deadlineMs` is destroyed, so no drain is ever unbounded in time.
 * Closing the transport (its abort signal) destroys it at once too.
 */
async function discard(body: Dispatcher.ResponseData['body'], deadlineMs: number): Promise<void> {
  const timer = setTimeout(() => body.destroy(), deadlineMs);
  try {
    await body.dump({ limit: 64 * 1024 });
  } catch {
    // nothing to keep
  } finally {
    clearTimeout(timer);
  }
}

/** A 200 answer whose content type is `text/event-stream`. */
function isEventStream(response: Dispatcher.ResponseData): boolean {
  const contentType = (headerValue(response.headers['content-type']) ?? '').toLowerCase();
  return response.statusCode === 200 && contentType.startsWith('text/event-stream');
}

/**
 * True for a result or an error response. A message the decoder marked plain is one exactly when
 * it has a `result` or an `error` (the plain rule admits nothing else with them), so the SDK's
 * response schemas run only for a message without the mark.
 */
function isResponse(
  message: JSONRPCMessage,
): message is JSONRPCResultResponse | JSONRPCErrorResponse {
  if (isMarkedPlainRecord(message)) return 'result' in message || 'error' in message;
  return isJSONRPCResultResponse(message) || isJSONRPCErrorResponse(message);
}
