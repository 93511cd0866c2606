// One connection to an MCP server in either protocol era: version negotiation (the
// `server/discover` probe, the corrective retry, the legacy `initialize` fallback), the modern
// per-request `_meta` envelope and standard headers, and multi round-trip requests.
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode,
  type JSONRPCErrorResponse,
  type JSONRPCMessage,
  type JSONRPCNotification,
  type JSONRPCRequest,
  type JSONRPCResponse,
  ListRootsRequestSchema,
  McpError,
  PromptListChangedNotificationSchema,
  type RequestId,
  ResourceListChangedNotificationSchema,
  type Result,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { isRecord } from '../is-record.js';
import { TransportHttpError, TransportTimeoutError } from '../transport/errors.js';
import type { McpBridgeLogger } from '../transport/logger.js';
import type { StdioTransport } from '../transport/stdio-transport.js';
import type { StreamableHttpTransport } from '../transport/streamable-http-transport.js';
import { type AbortMember, unwatchAbort, watchAbort } from './abort-link.js';
import { InputRequestError } from './input-request-error.js';
import { answerInputRequests, type InputHandlers, isInputRequired } from './input-requests.js';
import { standardHeaders } from './mcp-headers.js';
import { PromptAllowance } from './prompt-allowance.js';
import {
  type ListenBackoff,
  SUBSCRIPTION_ID_KEY,
  SubscriptionListener,
} from './subscription-listener.js';
import { TASKS_EXTENSION_ID } from './tasks-extension.js';
import { UnsupportedProtocolVersionError } from './unsupported-protocol-version-error.js';
import { VersionNegotiationError } from './version-negotiation-error.js';
import { isModernEra, isVersionShaped, legacyVersions, modernVersions } from './versions.js';

/** A bounded transport of the bridge. */
export type ProtocolTransport = StdioTransport | StreamableHttpTransport;

/** The protocol era of a connection. */
export type ProtocolEra = 'modern' | 'legacy';

/** What the server said about itself: from `server/discover` (modern) or `initialize` (legacy). */
export interface McpServerDescription {
  /** The negotiated protocol revision. */
  readonly protocolVersion: string;
  /** `modern` (2026-07-28, no handshake) or `legacy` (the `initialize` handshake). */
  readonly era: ProtocolEra;
  /** The revisions the server listed (`YYYY-MM-DD`-shaped entries only); legacy: the negotiated one. */
  readonly supportedVersions: readonly string[];
  /** The server's implementation name and version, as it reported them (untrusted text). */
  readonly serverInfo:
    | {
        /** The implementation name (untrusted text). */
        readonly name: string;
        /** The implementation version (untrusted text; empty when the server gave none). */
        readonly version: string;
      }
    | undefined;
  /** The server's capabilities, as it reported them. */
  readonly capabilities: Readonly<Record<string, unknown>>;
  /** The server's `instructions` (untrusted text). */
  readonly instructions: string | undefined;
}

/** Options of {@link ProtocolSession}. */
export interface ProtocolSessionOptions {
  /** Builds a fresh transport (called once, and once more if a stdio probe ended the process). */
  readonly makeTransport: () => ProtocolTransport;
  /** The revisions the client offers, in preference order. */
  readonly protocolVersions: readonly string[];
  /** `clientInfo` for `initialize` and the modern `_meta`. */
  readonly clientInfo: { readonly name: string; readonly version: string };
  /** The client's capabilities (declared only for the callbacks the host gave). */
  readonly capabilities: Readonly<Record<string, unknown>>;
  /** The host's input callbacks. */
  readonly handlers: InputHandlers;
  /** `input_required` results one request may answer. */
  readonly maxInputRounds: number;
  /** Elicitation and sampling requests one request may ask the host (when not given per request). */
  readonly maxInputPrompts: number;
  /** Milliseconds for the probe and the handshake. */
  readonly openTimeoutMs: number;
  /**
   * The most server requests (ping, sampling, elicitation, roots, unknown methods) in progress at
   * once; more are dropped without an answer (logged). Default: unbounded.
   */
  readonly maxServerRequests?: number;
  /** The `Mcp-Param-*` headers of a `tools/call` (already checked). */
  readonly paramHeaders: (toolName: string, args: unknown) => Record<string, string> | undefined;
  /** Called when the connection ends. */
  readonly onClose: () => void;
  /** Called for an error the JSON-RPC layer reports outside a request. */
  readonly onError: (error: Error) => void;
  /** Called for `notifications/tools/list_changed`, in either era and on any stream. */
  readonly onToolsListChanged?: () => void;
  /**
   * Called for `notifications/prompts/list_changed` and `.../resources/list_changed`: legacy
   * era, and modern over stdio (asked for in the `subscriptions/listen` filter).
   */
  readonly onListChanged?: (list: 'prompts' | 'resources') => void;
  /**
   * Called when a change may have been missed (a listen stream acknowledged, or lost): the
   * listing should be taken again, though the server announced nothing.
   */
  readonly onToolsListStale?: () => void;
  /**
   * Modern mode: open `subscriptions/listen` for `toolsListChanged` when the server declares
   * `tools.listChanged` (over HTTP reopened with this backoff). Undefined: never.
   */
  readonly listen?: ListenBackoff;
  /** The host opted in to the Tasks extension (declared only when the server declares it too). */
  readonly tasks?: boolean;
  /** Diagnostics of the listen stream. */
  readonly logger?: McpBridgeLogger;
}

/** Per-request options of {@link ProtocolSession.request}. */
export interface ProtocolRequestOptions {
  /** Milliseconds for each round's answer. */
  readonly timeoutMs: number;
  /** Aborts the request (the server is told through `notifications/cancelled`). */
  readonly signal?: AbortSignal;
  /** The call's prompt allowance (shared with its task); default a fresh `maxInputPrompts`. */
  readonly prompts?: PromptAllowance;
}

const PROTOCOL_VERSION_KEY = 'io.modelcontextprotocol/protocolVersion';
const CLIENT_CAPABILITIES_KEY = 'io.modelcontextprotocol/clientCapabilities';
const CLIENT_INFO_KEY = 'io.modelcontextprotocol/clientInfo';
const SERVER_INFO_KEY = 'io.modelcontextprotocol/serverInfo';
/** The modern `UnsupportedProtocolVersionError` code. */
const UNSUPPORTED_PROTOCOL_VERSION = -32022;

/** The result rule, as a zod schema (for its error): an object. */
const LooseResultSchema: z.ZodType<Record<string, unknown>> = z.custom<Record<string, unknown>>(
  isRecord,
  {
    message: 'the result must be a JSON object',
  },
);

/**
 * The result check of every request: an object result (every answer that passed the transport)
 * is accepted as it is, without zod; anything else gets the zod check's outcome (a `ZodError`,
 * which the client maps as a malformed answer). Internal: exported for its tests.
 */
export const RESULT_CHECK: {
  safeParse(
    data: unknown,
  ):
    | { readonly success: true; readonly data: Record<string, unknown> }
    | { readonly success: false; readonly error: z.ZodError };
} = {
  safeParse(data: unknown) {
    // Anything but an object fails the schema: its error is the one the client maps.
    return isRecord(data)
      ? { success: true as const, data }
      : { success: false as const, error: LooseResultSchema.safeParse(data).error as z.ZodError };
  },
};

/** A schema of the SDK's (`zod`) that checks one kind of incoming message. */
interface MessageSchema {
  safeParse(data: unknown): { success: true; data: unknown } | { success: false; error: unknown };
}

/** One request sent by {@link JsonRpcPeer.send}, until it settles. */
class DirectRequest implements AbortMember {
  readonly id: number;
  /** When it times out (`performance.now()` ms). */
  readonly deadline: number;
  readonly timeoutMs: number;
  readonly resolve: (result: Record<string, unknown>) => void;
  readonly reject: (error: unknown) => void;
  readonly signal: AbortSignal | undefined;
  /** The call's prompt allowance, for the server requests tied to this request (legacy mode). */
  prompts: PromptAllowance | undefined;
  /** The peer's cancel (one function per peer, not a closure per request). */
  readonly #cancel: (request: DirectRequest, reason: unknown) => void;

  constructor(
    id: number,
    timeoutMs: number,
    resolve: (result: Record<string, unknown>) => void,
    reject: (error: unknown) => void,
    signal: AbortSignal | undefined,
    cancel: (request: DirectRequest, reason: unknown) => void,
  ) {
    this.id = id;
    this.deadline = performance.now() + timeoutMs;
    this.timeoutMs = timeoutMs;
    this.resolve = resolve;
    this.reject = reject;
    this.signal = signal;
    this.#cancel = cancel;
  }

  /** The caller's signal aborted: cancelled (if still waiting for its answer). */
  abort(reason: unknown): void {
    this.#cancel(this, reason);
  }
}

/** The error member of a JSON-RPC error answer to a request the peer failed to handle. */
function errorMember(error: unknown): { code: number; message: string; data?: unknown } {
  const failure = error as { code?: unknown; message?: unknown; data?: unknown } | undefined;
  return {
    code: Number.isSafeInteger(failure?.code) ? (failure?.code as number) : ErrorCode.InternalError,
    message: typeof failure?.message === 'string' ? failure.message : 'Internal error',
    ...(failure?.data === undefined ? {} : { data: failure.data }),
  };
}

/**
 * The JSON-RPC peer of one connection (the client's side of it): ids, deadlines, cancellation,
 * the answers to its requests, and the requests and notifications the server sends. What the
 * SDK 1.x client's engine (`Protocol`) does for a client that negotiates its own handshake, and
 * behaves as it did, without loading it (its zod 3 and JSON Schema conversion modules, about a
 * tenth of the gateway's start) and without its per-message schema checks: messages come from
 * the bridge's transports, which checked each one against the SDK's message schema already.
 *
 * - A request ({@link JsonRpcPeer.send}) gets the next id; its answer is matched by id (a
 *   numeric string finds it too), checked by {@link RESULT_CHECK}, and a JSON-RPC error answer
 *   rejects with an `McpError`. Its deadline is kept by one timer for all requests; a request
 *   past it is cancelled (`notifications/cancelled`) and rejects with `RequestTimeout`. An abort
 *   of its signal cancels it the same way with the signal's reason (wrapped in an `McpError`
 *   unless it is one). The connection closing rejects each one with `ConnectionClosed`.
 * - A request from the server goes to its handler (`ping` answers `{}`); a method without one is
 *   answered `MethodNotFound`; a handler's failure is answered with its `code` (an integer) or
 *   `InternalError`, and its message. `notifications/cancelled` aborts the handler of the
 *   request it names, and no answer is sent for it.
 * - A notification goes to its handler, else to {@link JsonRpcPeer.fallbackNotificationHandler};
 *   a progress notification names no request of this peer's (it asks for none) and is reported.
 */
class JsonRpcPeer {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  /** Notifications without a handler of their own. */
  fallbackNotificationHandler?: (notification: JSONRPCNotification) => Promise<void>;
  #transport: Transport | undefined;
  #nextId = 0;
  /** The requests not yet answered, by JSON-RPC id. */
  readonly #pending = new Map<number, DirectRequest>();
  /** The one timer of the requests' deadlines (armed for the earliest one), if any. */
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** When {@link #timer} fires (`performance.now()` ms). */
  #timerAt = 0;
  readonly #requestHandlers = new Map<
    string,
    (request: JSONRPCRequest, related: RequestId | undefined) => unknown
  >();
  readonly #notificationHandlers = new Map<
    string,
    (notification: JSONRPCNotification) => unknown
  >();
  /** The server's requests being handled, by their id (aborted by their cancellation). */
  readonly #handling = new Map<string | number, AbortController>();
  /** The server's requests received and not yet answered (handler running or answer being sent). */
  #answering = 0;
  /** The most server requests answered at once; more are dropped unanswered. */
  readonly #maxAnswering: number;
  /** Server requests dropped so far (the first is logged at warn, the rest at debug). */
  #dropped = 0;
  readonly #logger: McpBridgeLogger | undefined;

  /**
   * @param maxAnswering the most server requests in progress at once (the client's
   *   `maxConcurrentRequests`); a request beyond it is dropped without an answer.
   */
  constructor(maxAnswering = Number.POSITIVE_INFINITY, logger?: McpBridgeLogger) {
    this.#maxAnswering = maxAnswering;
    this.#logger = logger;
    this.#requestHandlers.set('ping', () => ({}));
    this.#notificationHandlers.set('notifications/cancelled', (notification) => {
      const requestId = (notification.params as { requestId?: unknown } | undefined)?.requestId;
      if (requestId === undefined || requestId === null || requestId === '') return;
      this.#handling
        .get(requestId as string | number)
        ?.abort((notification.params as { reason?: unknown }).reason);
    });
    this.#notificationHandlers.set('notifications/progress', (notification) => {
      this.#error(
        new Error(
          `Received a progress notification for an unknown token: ${JSON.stringify(notification)}`,
        ),
      );
    });
  }

  /** Takes `transport` (its handlers are called first), and starts it. */
  async connect(transport: Transport): Promise<void> {
    if (this.#transport !== undefined) throw new Error('Already connected to a transport');
    this.#transport = transport;
    const earlierClose = transport.onclose;
    transport.onclose = () => {
      earlierClose?.();
      this.#closed();
    };
    const earlierError = transport.onerror;
    transport.onerror = (error) => {
      earlierError?.(error);
      this.#error(error);
    };
    const earlierMessage = transport.onmessage;
    transport.onmessage = (message, extra) => {
      earlierMessage?.(message, extra);
      this.#dispatch(
        message,
        (extra as { relatedRequestId?: RequestId } | undefined)?.relatedRequestId,
      );
    };
    await transport.start();
  }

  /** Closes the transport (its close ends this peer). */
  async close(): Promise<void> {
    await this.#transport?.close();
  }

  /** Registers the handler of the server's requests of `method`, each checked by `schema`. */
  setRequestHandler(
    method: string,
    schema: MessageSchema,
    handler: (request: JSONRPCRequest, related: RequestId | undefined) => Promise<Result>,
  ): void {
    this.#requestHandlers.set(method, (request, related) => {
      const checked = schema.safeParse(request);
      if (!checked.success) throw checked.error;
      return handler(checked.data as JSONRPCRequest, related);
    });
  }

  /** The prompt allowance of the request `id` still waiting for its answer, if it has one. */
  promptsOf(id: RequestId): PromptAllowance | undefined {
    return this.#pending.get(typeof id === 'number' ? id : Number(id))?.prompts;
  }

  /** Registers the handler of the server's notifications of `method`, each checked by `schema`. */
  setNotificationHandler(
    method: string,
    schema: MessageSchema,
    handler: (notification: JSONRPCNotification) => void,
  ): void {
    this.#notificationHandlers.set(method, (notification) => {
      const checked = schema.safeParse(notification);
      if (!checked.success) throw checked.error;
      return handler(checked.data as JSONRPCNotification);
    });
  }

  /** Sends a notification. */
  async notification(notification: {
    readonly method: string;
    readonly params?: Record<string, unknown>;
  }): Promise<void> {
    const transport = this.#transport;
    if (transport === undefined) throw new Error('Not connected');
    await transport.send({ ...notification, jsonrpc: '2.0' } as JSONRPCMessage);
  }

  /**
   * Sends one request and resolves with its result (an object, by {@link RESULT_CHECK}). A
   * given `signal` is watched through its one shared `abort` listener (abort-link.ts), left when
   * the request settles, so `notifications/cancelled` is sent only for a request still waiting
   * for its answer; a signal aborted before the send rejects with its reason as it is.
   */
  send(
    request: { readonly method: string; readonly params: Record<string, unknown> },
    timeoutMs: number,
    signal: AbortSignal | undefined,
    prompts?: PromptAllowance,
  ): Promise<Record<string, unknown>> {
    const transport = this.#transport;
    if (transport === undefined) return Promise.reject(new Error('Not connected'));
    if (signal?.aborted === true) return Promise.reject(signal.reason);
    const id = this.#nextId;
    this.#nextId = id + 1;
    const message = { method: request.method, params: request.params, jsonrpc: '2.0', id };
    return new Promise<Record<string, unknown>>((resolve, reject) => {
      const entry = new DirectRequest(id, timeoutMs, resolve, reject, signal, this.#cancelOne);
      entry.prompts = prompts;
      this.#pending.set(id, entry);
      // One listener per signal, shared with every call in flight on it (see abort-link.ts).
      if (signal !== undefined) watchAbort(signal, entry);
      this.#armFor(entry.deadline);
      transport.send(message as JSONRPCMessage).catch((error: unknown) => {
        if (this.#forget(entry)) reject(error);
      });
    });
  }

  #error(error: Error): void {
    this.onerror?.(error);
  }

  /** One message from the transport (already checked against the SDK's message schema there). */
  #dispatch(message: JSONRPCMessage, related?: RequestId): void {
    const record = message as Record<string, unknown>;
    // An error answer may have no id (one to a request the server could not read): it names no
    // request here, and is reported as such.
    if ('result' in record || 'error' in record) {
      this.#answer(message as JSONRPCResponse | JSONRPCErrorResponse);
    } else if (typeof record.method === 'string' && 'id' in record) {
      this.#onRequest(message as JSONRPCRequest, related);
    } else if (typeof record.method === 'string') {
      this.#onNotification(message as JSONRPCNotification);
    } else {
      this.#error(new Error(`Unknown message type: ${JSON.stringify(message)}`));
    }
  }

  /** Hands an answer to its request; an answer to no pending request is reported. */
  #answer(message: JSONRPCResponse | JSONRPCErrorResponse): void {
    // A numeric string finds its request too.
    const id = message.id;
    const entry = this.#pending.get(typeof id === 'number' ? id : Number(id));
    if (entry === undefined) {
      this.#error(
        new Error(`Received a response for an unknown message ID: ${JSON.stringify(message)}`),
      );
      return;
    }
    this.#forget(entry);
    if ('result' in message) {
      const checked = RESULT_CHECK.safeParse(message.result);
      if (checked.success) entry.resolve(checked.data);
      else entry.reject(checked.error);
    } else {
      const { code, message: text, data } = (message as JSONRPCErrorResponse).error;
      entry.reject(McpError.fromError(code, text, data));
    }
  }

  #onRequest(request: JSONRPCRequest, related: RequestId | undefined): void {
    // A server's requests in progress (received, not yet answered: the handler runs or the answer
    // is being written or posted) are bounded: a server that sends more before it takes the
    // earlier answers gets no answer for the extra ones, so neither the answers waiting for the
    // wire nor the connections carrying them can grow without bound.
    if (this.#answering >= this.#maxAnswering) {
      this.#dropped++;
      const details = {
        reason: 'server-request-limit',
        method: request.method,
        maxConcurrentRequests: this.#maxAnswering,
        dropped: this.#dropped,
      };
      if (this.#dropped === 1) {
        this.#logger?.warn?.(
          'The MCP server has more of its requests unanswered than maxConcurrentRequests: the extra ones are dropped without an answer',
          details,
        );
      } else {
        this.#logger?.debug?.('Dropped a server request without an answer', details);
      }
      return;
    }
    this.#answering++;
    const handler = this.#requestHandlers.get(request.method);
    // Answers go where the request came from, even if the peer has moved on since.
    const transport = this.#transport;
    if (handler === undefined) {
      (
        transport?.send({
          jsonrpc: '2.0',
          id: request.id,
          error: { code: ErrorCode.MethodNotFound, message: 'Method not found' },
        } as JSONRPCMessage) ?? Promise.resolve()
      )
        .catch((error: unknown) =>
          this.#error(new Error(`Failed to send an error response: ${String(error)}`)),
        )
        .finally(this.#answered);
      return;
    }
    const controller = new AbortController();
    this.#handling.set(request.id, controller);
    Promise.resolve()
      .then(() => handler(request, related))
      .then(
        async (result) => {
          if (controller.signal.aborted) return;
          await transport?.send({ result, jsonrpc: '2.0', id: request.id } as JSONRPCMessage);
        },
        async (error: unknown) => {
          if (controller.signal.aborted) return;
          await transport?.send({
            jsonrpc: '2.0',
            id: request.id,
            error: errorMember(error),
          } as JSONRPCMessage);
        },
      )
      .catch((error: unknown) =>
        this.#error(new Error(`Failed to send response: ${String(error)}`)),
      )
      .finally(() => {
        if (this.#handling.get(request.id) === controller) this.#handling.delete(request.id);
        this.#answered();
      });
  }

  /** A server request's answer was handed off (or given up): its place is free. */
  readonly #answered = (): void => {
    this.#answering--;
  };

  #onNotification(notification: JSONRPCNotification): void {
    const handler =
      this.#notificationHandlers.get(notification.method) ?? this.fallbackNotificationHandler;
    if (handler === undefined) return;
    Promise.resolve()
      .then(() => handler(notification))
      .catch((error: unknown) =>
        this.#error(new Error(`Uncaught error in notification handler: ${String(error)}`)),
      );
  }

  /**
   * Takes a request out of the table (and its listener off its signal); false when it was no
   * longer there (answered, cancelled or closed already).
   */
  #forget(entry: DirectRequest): boolean {
    const pending = this.#pending;
    if (pending.get(entry.id) !== entry) return false;
    pending.delete(entry.id);
    if (entry.signal !== undefined) unwatchAbort(entry.signal, entry);
    // Nothing waits: the timer (if armed) no longer keeps the process alive.
    if (pending.size === 0) this.#timer?.unref();
    return true;
  }

  /** Cancels a request: tells the server (`notifications/cancelled`) and rejects. */
  readonly #cancelOne = (entry: DirectRequest, reason: unknown): void => {
    if (!this.#forget(entry)) return;
    this.#transport
      ?.send({
        jsonrpc: '2.0',
        method: 'notifications/cancelled',
        params: { requestId: entry.id, reason: String(reason) },
      })
      .catch((error: unknown) =>
        this.#error(new Error(`Failed to send cancellation: ${String(error)}`)),
      );
    entry.reject(
      reason instanceof McpError ? reason : new McpError(ErrorCode.RequestTimeout, String(reason)),
    );
  };

  /** Makes the deadline timer fire by `deadline` (and keep the process alive meanwhile). */
  #armFor(deadline: number): void {
    const timer = this.#timer;
    if (timer !== undefined && this.#timerAt <= deadline) {
      timer.ref();
      return;
    }
    if (timer !== undefined) clearTimeout(timer);
    this.#timerAt = deadline;
    this.#timer = setTimeout(this.#onTimer, Math.max(1, Math.ceil(deadline - performance.now())));
  }

  /** The deadline timer: every request past its deadline times out; re-armed for the next. */
  readonly #onTimer = (): void => {
    this.#timer = undefined;
    const now = performance.now();
    let next = Number.POSITIVE_INFINITY;
    const due: DirectRequest[] = [];
    for (const entry of this.#pending.values()) {
      // Within a millisecond of its deadline counts as due (the timer's own resolution).
      if (entry.deadline - now < 1) due.push(entry);
      else if (entry.deadline < next) next = entry.deadline;
    }
    for (const entry of due) {
      this.#cancelOne(
        entry,
        McpError.fromError(ErrorCode.RequestTimeout, 'Request timed out', {
          timeout: entry.timeoutMs,
        }),
      );
    }
    if (next !== Number.POSITIVE_INFINITY && this.#pending.size > 0) this.#armFor(next);
  };

  /**
   * The connection closed: the server's requests being handled are aborted, the peer is told
   * (`onclose`), then every request waiting rejects with `ConnectionClosed`.
   */
  #closed(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    for (const controller of this.#handling.values()) controller.abort();
    this.#handling.clear();
    this.#transport = undefined;
    const entries = [...this.#pending.values()];
    for (const entry of entries) this.#forget(entry);
    this.onclose?.();
    const error = McpError.fromError(ErrorCode.ConnectionClosed, 'Connection closed');
    for (const entry of entries) entry.reject(error);
  }
}

function versionList(value: unknown): readonly string[] | undefined {
  if (!Array.isArray(value) || value.length === 0) return undefined;
  const versions = value.filter(isVersionShaped);
  return versions.length === 0 ? undefined : Object.freeze(versions);
}

function implementation(value: unknown): McpServerDescription['serverInfo'] {
  if (!isRecord(value) || typeof value.name !== 'string') return undefined;
  return Object.freeze({
    name: value.name,
    version: typeof value.version === 'string' ? value.version : '',
  });
}

/** True for a stdio exit that says the command could not run (126, 127). */
function commandNotFound(failure: unknown): boolean {
  const exitCode = (failure as { details?: { exitCode?: unknown } } | undefined)?.details?.exitCode;
  return exitCode === 126 || exitCode === 127;
}

type ProbeVerdict =
  | { readonly kind: 'modern'; readonly description: McpServerDescription }
  | { readonly kind: 'legacy'; readonly restart: boolean };

/**
 * One connection in one era. `open()` negotiates; `request()` sends in the negotiated era
 * (modern: `_meta` on every request, standard headers over HTTP, `input_required` rounds).
 */
export class ProtocolSession {
  readonly #options: ProtocolSessionOptions;
  #transport: ProtocolTransport;
  #peer: JsonRpcPeer;
  #description: McpServerDescription | undefined;
  #closed = false;
  #listener: SubscriptionListener | undefined;
  /** The client capabilities sent in modern `_meta` (with the Tasks extension once negotiated). */
  #requestCapabilities: Readonly<Record<string, unknown>>;
  #tasksNegotiated = false;
  /**
   * Legacy mode: the allowance of the server's sampling and elicitation requests tied to no
   * call of the client's (stdio, the standalone stream, or after the call was answered); a fresh
   * `maxInputPrompts` each time a `tools/call` starts.
   */
  #untiedPrompts: PromptAllowance;

  /** Builds the first transport; nothing is sent before `open()`. */
  constructor(options: ProtocolSessionOptions) {
    this.#options = options;
    this.#requestCapabilities = options.capabilities;
    this.#untiedPrompts = new PromptAllowance(options.maxInputPrompts);
    this.#transport = options.makeTransport();
    this.#peer = this.#makePeer();
  }

  /** The live transport (replaced once if a stdio probe ended the server process). */
  get transport(): ProtocolTransport {
    return this.#transport;
  }

  /**
   * True when the host opted in to the Tasks extension and the modern server declares it: only
   * then do requests declare it, and only then may a `tools/call` answer with a task handle.
   */
  get tasksNegotiated(): boolean {
    return this.#tasksNegotiated;
  }

  /** The `subscriptions/listen` loop over HTTP, if one runs (diagnostics and tests). */
  get listener(): SubscriptionListener | undefined {
    return this.#listener;
  }

  /** What the server said about itself; set once `open()` resolved. */
  get description(): McpServerDescription | undefined {
    return this.#description;
  }

  /**
   * Negotiates the era and version. With a modern version on offer, sends `server/discover`
   * first (both transports); a `-32022` naming a mutual version is retried once. Falls back to
   * `initialize` on the legacy signals: any other JSON-RPC error, an HTTP 4xx without a modern
   * error body, and on stdio no answer within `openTimeoutMs` or a process that exited (then it is
   * started once more).
   * @throws {UnsupportedProtocolVersionError} when no offered version is shared.
   * @throws {VersionNegotiationError} when the offered eras do not fit the server.
   */
  async open(): Promise<McpServerDescription> {
    const versions = this.#options.protocolVersions;
    const modern = modernVersions(versions);
    const legacy = legacyVersions(versions);
    await this.#peer.connect(this.#transport);
    if (modern.length > 0) {
      const verdict = await this.#probe(modern, legacy.length > 0);
      if (verdict.kind === 'modern') {
        this.#description = verdict.description;
        this.#negotiateTasks(verdict.description);
        this.#startListening(verdict.description);
        return verdict.description;
      }
      if (legacy.length === 0) {
        throw new VersionNegotiationError(
          modern.length === 1 && versions.length === 1
            ? 'pinned-version-refused'
            : 'no-legacy-fallback',
          'The MCP server does not speak the modern protocol and protocolVersions offers no legacy version',
        );
      }
      if (verdict.restart) await this.#restart();
    }
    const description = await this.#initialize(legacy);
    this.#description = description;
    return description;
  }

  /**
   * Sends one request in the negotiated era and returns its complete result. In modern mode an
   * `input_required` result is answered through the host's callbacks and the request repeated
   * (new JSON-RPC id, `inputResponses`, the exact `requestState`), at most `maxInputRounds`
   * times, each round under `timeoutMs`.
   * @throws {InputRequestError} when input cannot be given or the rounds run out.
   */
  request(
    method: string,
    params: Readonly<Record<string, unknown>>,
    options: ProtocolRequestOptions,
  ): Promise<Record<string, unknown>> {
    const description = this.#description;
    if (description === undefined || description.era === 'legacy') {
      if (method === 'tools/call') {
        this.#untiedPrompts = new PromptAllowance(this.#options.maxInputPrompts);
      }
      // Every caller passes a params object of its own making (never the host's), and the
      // JSON-RPC layer never changes it: no second copy per request. The call's allowance goes
      // with it: the server's prompts tied to it draw from it.
      return this.#peer.send(
        { method, params: params as Record<string, unknown> },
        options.timeoutMs,
        options.signal,
        options.prompts,
      );
    }
    return this.#modernRequest(method, params, description, options);
  }

  /**
   * The first round of a modern request: one promise layer (the peer's), mapped; only an
   * `input_required` answer goes on to {@link #inputRounds}. `#withMeta` builds the params sent,
   * so the caller's object is neither changed nor copied a second time.
   */
  #modernRequest(
    method: string,
    params: Readonly<Record<string, unknown>>,
    description: McpServerDescription,
    options: ProtocolRequestOptions,
  ): Promise<Record<string, unknown>> {
    return this.#peer
      .send(
        { method, params: this.#withMeta(params, description.protocolVersion) },
        options.timeoutMs,
        options.signal,
      )
      .then((result) =>
        isInputRequired(result)
          ? this.#inputRounds(method, params, description, options, result)
          : result,
      );
  }

  /** The rounds after an `input_required` answer (`first`), up to `maxInputRounds`. */
  async #inputRounds(
    method: string,
    params: Readonly<Record<string, unknown>>,
    description: McpServerDescription,
    options: ProtocolRequestOptions,
    first: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    let prompts = options.prompts;
    let result = first;
    for (let round = 0; ; round++) {
      if (round >= this.#options.maxInputRounds) {
        throw new InputRequestError('too-many-rounds', undefined, {
          details: { maxInputRounds: this.#options.maxInputRounds },
        });
      }
      options.signal?.throwIfAborted();
      prompts ??= new PromptAllowance(this.#options.maxInputPrompts);
      const inputResponses = await answerInputRequests(result, this.#options.handlers, prompts);
      options.signal?.throwIfAborted();
      const current = {
        ...params,
        inputResponses,
        ...(result.requestState === undefined ? {} : { requestState: result.requestState }),
      };
      result = await this.#peer.send(
        { method, params: this.#withMeta(current, description.protocolVersion) },
        options.timeoutMs,
        options.signal,
      );
      if (!isInputRequired(result)) return result;
    }
  }

  /**
   * Sends a notification without parameters (such as `notifications/roots/list_changed`) on a
   * legacy session; a modern (stateless) connection has no session to tell, so nothing is sent.
   */
  async notify(method: string): Promise<void> {
    if (this.#description?.era !== 'legacy') return;
    await this.#peer.notification({ method });
  }

  /** Ends the connection. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#listener?.stop();
    await this.#peer.close().catch(() => undefined);
    await this.#transport.close().catch(() => undefined);
  }

  #makePeer(): JsonRpcPeer {
    const peer = new JsonRpcPeer(this.#options.maxServerRequests, this.#options.logger);
    peer.onclose = () => {
      if (this.#peer === peer) this.#options.onClose();
    };
    peer.onerror = (error) => this.#options.onError(error);
    const onToolsListChanged = this.#options.onToolsListChanged;
    if (onToolsListChanged !== undefined) {
      peer.setNotificationHandler(
        'notifications/tools/list_changed',
        ToolListChangedNotificationSchema,
        () => onToolsListChanged(),
      );
    }
    const onListChanged = this.#options.onListChanged;
    if (onListChanged !== undefined) {
      peer.setNotificationHandler(
        'notifications/prompts/list_changed',
        PromptListChangedNotificationSchema,
        () => onListChanged('prompts'),
      );
      peer.setNotificationHandler(
        'notifications/resources/list_changed',
        ResourceListChangedNotificationSchema,
        () => onListChanged('resources'),
      );
    }
    const transport = this.#transport;
    if ('messageHeaders' in transport) {
      transport.messageHeaders = (message) =>
        transport.era === 'modern'
          ? standardHeaders(message, this.#options.paramHeaders)
          : undefined;
    }
    return peer;
  }

  #withMeta(params: Readonly<Record<string, unknown>>, version: string): Record<string, unknown> {
    const meta = isRecord(params._meta) ? params._meta : {};
    return {
      ...params,
      _meta: {
        ...meta,
        [PROTOCOL_VERSION_KEY]: version,
        [CLIENT_CAPABILITIES_KEY]: this.#requestCapabilities,
        [CLIENT_INFO_KEY]: this.#options.clientInfo,
      },
    };
  }

  #negotiateTasks(description: McpServerDescription): void {
    const extensions = description.capabilities.extensions;
    if (
      this.#options.tasks !== true ||
      !isRecord(extensions) ||
      !isRecord(extensions[TASKS_EXTENSION_ID])
    ) {
      return;
    }
    const declared = this.#options.capabilities.extensions;
    this.#requestCapabilities = Object.freeze({
      ...this.#options.capabilities,
      extensions: Object.freeze({
        ...(isRecord(declared) ? declared : {}),
        [TASKS_EXTENSION_ID]: Object.freeze({}),
      }),
    });
    this.#tasksNegotiated = true;
  }

  /**
   * Modern mode: follows tool list changes through `subscriptions/listen` when the server
   * declares `tools.listChanged` (and the host did not turn it off). Over HTTP a
   * {@link SubscriptionListener} keeps one stream open; over stdio the request is sent once and
   * its notifications arrive on the same channel for the life of the process.
   */
  #startListening(description: McpServerDescription): void {
    const backoff = this.#options.listen;
    const tools = description.capabilities.tools;
    const onToolsListChanged = this.#options.onToolsListChanged;
    const onToolsListStale = this.#options.onToolsListStale ?? onToolsListChanged;
    if (backoff === undefined || onToolsListChanged === undefined) return;
    if (onToolsListStale === undefined) return;
    if (!isRecord(tools) || tools.listChanged !== true) return;
    const version = description.protocolVersion;
    const request = (id: string): JSONRPCRequest => ({
      jsonrpc: '2.0',
      id,
      method: 'subscriptions/listen',
      // Over stdio the prompt and resource changes arrive on the same channel and reach
      // `onListChanged`; the HTTP listener follows tool changes only.
      params: this.#withMeta(
        {
          notifications: {
            toolsListChanged: true,
            ...(this.#options.onListChanged === undefined || 'listen' in this.#transport
              ? {}
              : { promptsListChanged: true, resourcesListChanged: true }),
          },
        },
        version,
      ),
    });
    const transport = this.#transport;
    if ('listen' in transport) {
      const listener = new SubscriptionListener({
        ...backoff,
        open: (message, onMessage) => transport.listen(message, onMessage),
        request,
        onToolsListChanged,
        onToolsListStale,
        ...(this.#options.logger === undefined ? {} : { logger: this.#options.logger }),
      });
      this.#listener = listener;
      listener.start();
      return;
    }
    const id = 'toolfence-listen-1';
    this.#peer.fallbackNotificationHandler = async (notification) => {
      const meta = isRecord(notification.params?._meta) ? notification.params._meta : {};
      if (
        notification.method === 'notifications/subscriptions/acknowledged' &&
        meta[SUBSCRIPTION_ID_KEY] === id
      ) {
        onToolsListStale();
      }
    };
    // A standing request: the stdio transport does not count it in flight, so it never makes the
    // calls after it wait in a cork for the end of their tick.
    void transport.sendStanding(request(id)).catch((error: unknown) => {
      this.#options.logger?.debug?.('subscriptions/listen could not be sent', {
        name: (error as Error | undefined)?.name,
      });
    });
  }

  #setEra(era: ProtocolEra, version: string | undefined): void {
    const transport = this.#transport;
    if ('era' in transport) {
      transport.era = era;
      transport.setProtocolVersion(version);
    }
  }

  async #probe(modern: readonly string[], fallback: boolean): Promise<ProbeVerdict> {
    const stdio = !('era' in this.#transport);
    let version = modern[0] as string;
    let corrected = false;
    for (;;) {
      this.#setEra('modern', version);
      let result: Record<string, unknown>;
      try {
        result = await this.#peer.send(
          { method: 'server/discover', params: this.#withMeta({}, version) },
          this.#options.openTimeoutMs,
          undefined,
        );
      } catch (error) {
        if (error instanceof McpError && error.code === UNSUPPORTED_PROTOCOL_VERSION) {
          const data = isRecord(error.data) ? error.data : {};
          const supported = versionList(data.supported ?? data.supportedVersions);
          if (supported === undefined) return { kind: 'legacy', restart: false };
          const mutual = modern.find((candidate) => supported.includes(candidate));
          if (mutual !== undefined) {
            if (corrected) {
              throw new VersionNegotiationError(
                'retry-loop',
                'The MCP server refused the protocol version it had listed as supported',
                { details: { supported: [...supported] } },
              );
            }
            corrected = true;
            version = mutual;
            continue;
          }
          if (supported.some(isModernEra) || !fallback) {
            throw new UnsupportedProtocolVersionError(this.#options.protocolVersions, supported);
          }
          return { kind: 'legacy', restart: false };
        }
        if (error instanceof McpError) {
          if (error.code === ErrorCode.RequestTimeout) {
            if (stdio) return { kind: 'legacy', restart: false };
            throw error;
          }
          if (error.code === ErrorCode.ConnectionClosed) {
            // A legacy server that exits on an unknown request (older Python SDK servers do on
            // `server/discover`) gets one more start, for `initialize`. A command that was not
            // found (exit 126 or 127) fails the same way again, so it is not started twice.
            if (stdio && !this.#closed && !commandNotFound(this.#transport.failure)) {
              return { kind: 'legacy', restart: true };
            }
            throw error;
          }
          // Any other JSON-RPC error (method not found, invalid params, a legacy server's
          // "bad request"): the server does not speak the modern protocol.
          return { kind: 'legacy', restart: false };
        }
        // A 429 is a rate limit, not a legacy signal: it is reported (ServerRateLimitedError).
        if (error instanceof TransportHttpError && error.status < 500 && error.status !== 429) {
          return { kind: 'legacy', restart: false };
        }
        throw error;
      }
      const supported = versionList(result.supportedVersions);
      if (supported === undefined || !isRecord(result.capabilities)) {
        if (fallback) return { kind: 'legacy', restart: false };
        throw new VersionNegotiationError(
          'invalid-discover-result',
          'The MCP server answered server/discover without supportedVersions and capabilities',
        );
      }
      const mutual = modern.find((candidate) => supported.includes(candidate));
      if (mutual === undefined) {
        if (fallback && supported.some((entry) => !isModernEra(entry))) {
          return { kind: 'legacy', restart: false };
        }
        throw new UnsupportedProtocolVersionError(this.#options.protocolVersions, supported);
      }
      const meta = isRecord(result._meta) ? result._meta : {};
      const description: McpServerDescription = Object.freeze({
        protocolVersion: mutual,
        era: 'modern',
        supportedVersions: supported,
        serverInfo: implementation(result.serverInfo ?? meta[SERVER_INFO_KEY]),
        capabilities: Object.freeze({ ...result.capabilities }),
        instructions: typeof result.instructions === 'string' ? result.instructions : undefined,
      });
      this.#setEra('modern', mutual);
      return { kind: 'modern', description };
    }
  }

  async #restart(): Promise<void> {
    const old = this.#transport;
    this.#transport = this.#options.makeTransport();
    const peer = this.#makePeer();
    const previous = this.#peer;
    this.#peer = peer;
    await previous.close().catch(() => undefined);
    await old.close().catch(() => undefined);
    await peer.connect(this.#transport);
  }

  async #initialize(legacy: readonly string[]): Promise<McpServerDescription> {
    this.#setEra('legacy', undefined);
    const offered = legacy[0] as string;
    let result: Record<string, unknown>;
    try {
      result = await this.#peer.send(
        {
          method: 'initialize',
          params: {
            protocolVersion: offered,
            capabilities: this.#options.capabilities as Record<string, unknown>,
            clientInfo: this.#options.clientInfo,
          },
        },
        this.#options.openTimeoutMs,
        undefined,
      );
    } catch (error) {
      // A modern-only server refuses the handshake with the versions it speaks.
      if (error instanceof McpError && error.code === UNSUPPORTED_PROTOCOL_VERSION) {
        const data = isRecord(error.data) ? error.data : {};
        throw new UnsupportedProtocolVersionError(
          this.#options.protocolVersions,
          versionList(data.supported ?? data.supportedVersions) ?? [],
          { cause: error },
        );
      }
      throw error;
    }
    const version = result.protocolVersion;
    if (typeof version !== 'string' || !legacy.includes(version)) {
      throw new UnsupportedProtocolVersionError(
        this.#options.protocolVersions,
        isVersionShaped(version) ? [version] : [],
      );
    }
    const description: McpServerDescription = Object.freeze({
      protocolVersion: version,
      era: 'legacy',
      supportedVersions: Object.freeze([version]),
      serverInfo: implementation(result.serverInfo),
      capabilities: Object.freeze(isRecord(result.capabilities) ? { ...result.capabilities } : {}),
      instructions: typeof result.instructions === 'string' ? result.instructions : undefined,
    });
    this.#setEra('legacy', version);
    this.#registerLegacyHandlers();
    await this.#notifyWithin('notifications/initialized', this.#options.openTimeoutMs);
    return description;
  }

  /**
   * Sends a handshake notification, accepted (HTTP: answered; stdio: taken by the pipe) within
   * `timeoutMs`, or fails with {@link TransportTimeoutError}: a server that never finishes its
   * answer cannot hold the handshake open.
   */
  async #notifyWithin(method: string, timeoutMs: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new TransportTimeoutError(
              `The MCP server did not accept ${method} within openTimeoutMs`,
              { details: { method, openTimeoutMs: timeoutMs } },
            ),
          ),
        timeoutMs,
      );
    });
    try {
      await Promise.race([this.#peer.notification({ method }), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Legacy servers send their own requests; only the kinds the host answers get a handler. */
  #registerLegacyHandlers(): void {
    const { elicitation, sampling, roots } = this.#options.handlers;
    if (roots !== undefined) {
      this.#peer.setRequestHandler(
        'roots/list',
        ListRootsRequestSchema,
        async () => (await roots()) as Result,
      );
    }
    const peer = this.#peer;
    if (elicitation !== undefined) {
      peer.setRequestHandler(
        'elicitation/create',
        ElicitRequestSchema,
        async (request, related) => {
          this.#takePrompt(peer, related);
          return (await elicitation(request.params as Record<string, unknown>)) as Result;
        },
      );
    }
    if (sampling !== undefined) {
      peer.setRequestHandler(
        'sampling/createMessage',
        CreateMessageRequestSchema,
        async (request, related) => {
          this.#takePrompt(peer, related);
          return (await sampling(request.params as Record<string, unknown>)) as Result;
        },
      );
    }
  }

  /**
   * Takes one prompt for a legacy server's sampling or elicitation request before the host is
   * asked: from the call it came with (its `tools/call`'s answer stream), else from the session's
   * untied allowance. Used up: a JSON-RPC error answers the server and the host is not asked.
   */
  #takePrompt(peer: JsonRpcPeer, related: RequestId | undefined): void {
    const allowance =
      (related === undefined ? undefined : peer.promptsOf(related)) ?? this.#untiedPrompts;
    try {
      allowance.take(1);
    } catch (error) {
      if (!(error instanceof InputRequestError)) throw error;
      throw new McpError(
        ErrorCode.InvalidRequest,
        'The client asks its host no more for this call: maxInputPrompts is used up',
        { maxInputPrompts: this.#options.maxInputPrompts },
      );
    }
  }
}
