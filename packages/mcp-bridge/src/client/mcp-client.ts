import {
  type CallToolResult,
  type CreateMessageResult,
  type ElicitResult,
  ErrorCode,
  McpError,
  type Root,
} from '@modelcontextprotocol/sdk/types.js';
import { checkOptionKeys, renamedOptionMessage } from '@toolfence/tools/core';
import type { AllowNonPublic } from '@toolfence/tools/net';
import type { Dispatcher } from 'undici';
import { type OAuthConnectionOptions, OAuthTokenProvider } from '../oauth/token-provider.js';
import { printableText } from '../printable-text.js';
import { linkSignal } from '../protocol/abort-link.js';
import { InputRequestError } from '../protocol/input-request-error.js';
import type { InputHandlers } from '../protocol/input-requests.js';
import {
  buildParamHeaders,
  type ParamHeaderDeclaration,
  scanParamHeaders,
} from '../protocol/mcp-headers.js';
import { ParameterHeaderError } from '../protocol/parameter-header-error.js';
import { DEFAULT_MAX_INPUT_PROMPTS, PromptAllowance } from '../protocol/prompt-allowance.js';
import { type McpServerDescription, ProtocolSession } from '../protocol/protocol-session.js';
import { TASKS_EXTENSION_ID } from '../protocol/tasks-extension.js';
import { UnsupportedProtocolVersionError } from '../protocol/unsupported-protocol-version-error.js';
import { VersionNegotiationError } from '../protocol/version-negotiation-error.js';
import { resolveProtocolVersions } from '../protocol/versions.js';
import type { McpAuthProvider, McpTokenSource } from '../transport/auth-provider.js';
import { isAuthRefusal } from '../transport/auth-refusal.js';
import { takeGivenProcess } from '../transport/early-stdio-process.js';
import {
  RequestNotSentError,
  ResponseTooComplexError,
  ResponseTooLargeError,
  SessionExpiredError,
  TransportError,
  TransportHttpError,
  TransportProtocolError,
  TransportTimeoutError,
  TransportUnauthorizedError,
} from '../transport/errors.js';
import { copyFixedHeaders, hasControlCharacter } from '../transport/header-rules.js';
import type { McpBridgeLogger } from '../transport/logger.js';
import { networkGuard } from '../transport/network-guard.js';
import {
  positiveInteger,
  positiveNumber,
  resolveRecordLimits,
} from '../transport/record-limits.js';
import { ServerOverloadedError } from '../transport/server-overloaded-error.js';
import { ServerRateLimitedError } from '../transport/server-rate-limited-error.js';
import { StdioTransport, withEarlyProcess } from '../transport/stdio-transport.js';
import { checkStreamableHttpOptions } from '../transport/streamable-http-options.js';
import type {
  StreamableHttpTransport,
  StreamableHttpTransportOptions,
} from '../transport/streamable-http-transport.js';
import { VERSION } from '../version.js';
import {
  AmbiguousDeliveryError,
  ClientConfigurationError,
  HandshakeError,
  RequestFailedError,
  ResourceNotFoundError,
  ServerRpcError,
} from './errors.js';
import { isSchemaError } from './schema-error.js';
import { Semaphore } from './semaphore.js';
import { TaskError } from './task-error.js';
import {
  awaitTask,
  isTaskResult,
  type McpTaskOptions,
  type PollOutcome,
  readTaskHandle,
  resolveTaskOptions,
  type TaskHandle,
  type TaskSettings,
} from './task-polling.js';
import { listTools, type McpToolInfo, type McpToolListing } from './tool-listing.js';

const MCP_CLIENT_OPTION_KEYS: readonly string[] = Object.freeze([
  'url',
  'command',
  'env',
  'inheritEnv',
  'cwd',
  'token',
  'authProvider',
  'oauth',
  'headers',
  'allowNonPublic',
  'deleteSessionOnClose',
  'standaloneStream',
  'maxSseRetryMs',
  'maxSseCommentBytes',
  'extensions',
  'clientName',
  'clientVersion',
  'openTimeoutMs',
  'readTimeoutMs',
  'maxToolPages',
  'maxTools',
  'maxRecordBytes',
  'maxRecordTokens',
  'maxRecordDepth',
  'maxNumberBytes',
  'maxConcurrentRequests',
  'roots',
  'elicitation',
  'sampling',
  'protocolVersions',
  'maxInputRounds',
  'maxInputPrompts',
  'maxListingTtlMs',
  'listenBackoffInitialMs',
  'listenBackoffMaxMs',
  'tasks',
  'killGraceMs',
  'maxServerMessageChars',
  'logger',
  'onToolsListChanged',
  'onListChanged',
]);

/**
 * The default of `maxConcurrentRequests`: requests one client has in flight at once (8). Enough
 * for the parallel tool calls of one model turn, while bounding what one client can load on a
 * server, the answers buffered at once over HTTP (8 x `maxRecordBytes`) and the calls a wire
 * failure leaves ambiguous. The same as the gateway's `maxConcurrentCalls`. A gateway or a
 * batch host that fires bursts of calls raises it.
 */
export const DEFAULT_MAX_CONCURRENT_REQUESTS = 8;

/** The options of a call made without any (frozen: nothing can be added to the shared default). */
const NO_CALL_OPTIONS: McpCallOptions = Object.freeze({});

const CALL_OPTION_KEYS: readonly string[] = Object.freeze([
  'signal',
  'timeoutMs',
  'meta',
  'onSend',
]);

/** The error for a bad per-call option (made once, not per call). */
const callOptionError = (message: string, option: string): Error =>
  new ClientConfigurationError(message, { details: { option } });

/** The `params._meta` keys {@link McpCallOptions.meta} may set: W3C trace context only. */
const CALL_META_KEYS: readonly string[] = Object.freeze(['traceparent', 'tracestate']);

/** Longest `tracestate` accepted in {@link McpCallOptions.meta}, in characters (W3C: 512). */
const MAX_TRACESTATE_LENGTH = 512;

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const PRINTABLE = /^[\x20-\x7e]*$/;

/** Checks {@link McpCallOptions.meta}: known keys only, W3C-shaped string values. */
function checkCallMeta(meta: unknown): Readonly<Record<string, string>> {
  const fail = (message: string): never => {
    throw new ClientConfigurationError(message, { details: { option: 'meta' } });
  };
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) {
    return fail('meta must be an object of strings, for example { traceparent }');
  }
  const copy: Record<string, string> = {};
  for (const [key, value] of Object.entries(meta)) {
    if (!CALL_META_KEYS.includes(key)) {
      fail(
        `meta accepts only ${CALL_META_KEYS.join(' and ')}; ${JSON.stringify(key.slice(0, 40))} is not one`,
      );
    }
    if (typeof value !== 'string') fail(`meta.${key} must be a string`);
    if (key === 'traceparent' && !TRACEPARENT.test(value)) {
      fail('meta.traceparent must be a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)');
    }
    if (value.length > MAX_TRACESTATE_LENGTH || !PRINTABLE.test(value)) {
      fail(`meta.${key} must be printable ASCII of at most ${MAX_TRACESTATE_LENGTH} characters`);
    }
    copy[key] = value;
  }
  return copy;
}

/** Time options that counted seconds before 0.x (now milliseconds, named `…Ms`). */
const MCP_CLIENT_RENAMED_KEYS: Readonly<Record<string, string>> = Object.freeze({
  openTimeout: 'openTimeoutMs',
  readTimeout: 'readTimeoutMs',
  maxListingTtl: 'maxListingTtlMs',
  killGrace: 'killGraceMs',
  maxSseRetry: 'maxSseRetryMs',
});

/** Refuses the per-call `timeout` (seconds), renamed to `timeoutMs` (milliseconds). */
function checkCallOptions(options: unknown, owner: string): void {
  if (typeof options === 'object' && options !== null && Object.hasOwn(options, 'timeout')) {
    throw new ClientConfigurationError(renamedOptionMessage(owner, 'timeout', 'timeoutMs'), {
      details: { option: 'timeout' },
    });
  }
}

const APPROVE_ALL: AllowNonPublic = () => true;

/** The network guard's form of `allowNonPublic`: `true` approves every non-public address. */
function netAllow(value: boolean | AllowNonPublic | undefined): {
  allowNonPublic?: AllowNonPublic;
} {
  if (value === true) return { allowNonPublic: APPROVE_ALL };
  return typeof value === 'function' ? { allowNonPublic: value } : {};
}

/** Answers a server's elicitation request (form mode). */
export interface McpElicitationOptions {
  /** Declare `elicitation.form.applyDefaults`. Default false. */
  readonly applyDefaults?: boolean;
  /** Produces the answer; its `content` goes back to the server. */
  readonly handler: (params: Readonly<Record<string, unknown>>) => Promise<ElicitResult>;
}

/** Answers a server's sampling request (`sampling/createMessage`). */
export interface McpSamplingOptions {
  /** Produces the model's answer; it goes back to the server. */
  readonly handler: (params: Readonly<Record<string, unknown>>) => Promise<CreateMessageResult>;
}

/** Options of {@link McpClient}: exactly one of `url` and `command`. */
export interface McpClientOptions {
  /** Streamable HTTP endpoint. */
  readonly url?: string | URL;
  /** Stdio server argv `[executable, ...args]` (never a shell string). */
  readonly command?: readonly string[];
  /** Stdio: variables set for the child, on top of `inheritEnv`. Default `{}`. */
  readonly env?: Readonly<Record<string, string>>;
  /**
   * Stdio: names of this process's variables the child inherits. Default `HOME`, `LOGNAME`,
   * `PATH`, `SHELL`, `TERM`, `USER` (`DEFAULT_INHERITED_ENV`); `[]` gives the child only `env`.
   */
  readonly inheritEnv?: readonly string[];
  /** Stdio: working directory. Default: this process's. */
  readonly cwd?: string;
  /** HTTP: bearer token, fixed or resolved per request; owns `Authorization`. */
  readonly token?: McpTokenSource;
  /** HTTP: an auth implementation (for example OAuth) instead of `token`. */
  readonly authProvider?: McpAuthProvider;
  /**
   * HTTP: OAuth from a connection store instead of `token`/`authProvider` (an
   * `OAuthTokenProvider`; `allowNonPublic` applies to its OAuth requests too). When the user
   * must authorize, requests fail with an `AuthorizationRequiredError` in their `cause` chain
   * (`findAuthorizationRequired`).
   */
  readonly oauth?: Omit<OAuthConnectionOptions, 'url'>;
  /**
   * HTTP: fixed extra headers (copied; transport-owned names refused). A fixed `Authorization`
   * (any case) is accepted when no `token`, `authProvider` or `oauth` is given, and refused with
   * one of them.
   */
  readonly headers?: Readonly<Record<string, string>>;
  /**
   * HTTP: approves non-public addresses (loopback, private, internal hosts): `true` for every one,
   * or a function that approves an address. Default: none (public https:// only).
   */
  readonly allowNonPublic?: boolean | AllowNonPublic;
  /** HTTP: send DELETE for the session on close. Default true. */
  readonly deleteSessionOnClose?: boolean;
  /**
   * Open the long-lived stream for server notifications: in legacy mode (HTTP) the optional GET
   * stream after the handshake; in modern mode `subscriptions/listen` for tool list changes, over
   * HTTP and stdio, when the server declares `tools.listChanged`. `false` opens neither. Default
   * true.
   */
  readonly standaloneStream?: boolean;
  /**
   * HTTP, modern mode: milliseconds before `subscriptions/listen` is reopened the first time
   * after its stream ended or was cut; each further attempt doubles it. Default 1,000.
   */
  readonly listenBackoffInitialMs?: number;
  /**
   * HTTP, modern mode: the longest wait before `subscriptions/listen` is reopened (the doubling
   * stops here; it starts over only after a stream stayed open this long). Default 30,000.
   */
  readonly listenBackoffMaxMs?: number;
  /**
   * Opts in to the Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`) in modern mode:
   * when the server declares it too, requests declare it and a long `tools/call` may answer with
   * a task handle, which `callTool` polls to its result (never repeating the call). Default: off
   * (the extension is not declared). Unknown keys are refused.
   */
  readonly tasks?: McpTaskOptions;
  /** HTTP: milliseconds a server's SSE `retry:` may ask for at most (longer is cut). Default 30,000. */
  readonly maxSseRetryMs?: number;
  /** HTTP: bytes of SSE comment lines allowed between two blank lines. Default 64 KiB. */
  readonly maxSseCommentBytes?: number;
  /**
   * Extensions the client declares under `capabilities.extensions` (SEP-2133), by identifier
   * (`vendor/name`, such as `io.modelcontextprotocol/skills`) to their settings object (copied).
   * Default: none. `McpSkillSource` declares the skills extension through this option.
   */
  readonly extensions?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** `clientInfo.name`. Default `toolfence-mcp-bridge`. */
  readonly clientName?: string;
  /** `clientInfo.version`. Default this package's version. */
  readonly clientVersion?: string;
  /** Milliseconds for the handshake. Default 15,000. */
  readonly openTimeoutMs?: number;
  /** Milliseconds for a request's answer and for each record to complete. Default 120,000. */
  readonly readTimeoutMs?: number;
  /** Pages `tools()` follows at most. Default 100. */
  readonly maxToolPages?: number;
  /** Tools `tools()` accepts at most over all pages. Default 10,000. */
  readonly maxTools?: number;
  /** Bytes per record. Default 8 MiB. */
  readonly maxRecordBytes?: number;
  /** Tokens per record. Default 20,001. */
  readonly maxRecordTokens?: number;
  /** Nesting depth per record. Default 64. */
  readonly maxRecordDepth?: number;
  /** Bytes per numeric token. Default 65,536. */
  readonly maxNumberBytes?: number;
  /**
   * Requests in flight at once on this client; the rest wait their turn in arrival order. Default
   * {@link DEFAULT_MAX_CONCURRENT_REQUESTS} (8); `1` serializes them.
   */
  readonly maxConcurrentRequests?: number;
  /**
   * Roots offered to the server; only when given is the `roots` capability declared. A function
   * is asked at each `roots/list` (the capability then declares `listChanged`, and
   * {@link McpClient.notifyRootsChanged} tells the server).
   */
  readonly roots?: readonly Root[] | (() => readonly Root[] | Promise<readonly Root[]>);
  /**
   * Called when the server sends `notifications/prompts/list_changed` (`prompts`) or
   * `notifications/resources/list_changed` (`resources`): a legacy server, or a modern one over
   * stdio (they are then asked for in the `subscriptions/listen` filter; over HTTP they are not).
   */
  readonly onListChanged?: (list: 'prompts' | 'resources') => void;
  /**
   * Declares the `elicitation` capability and answers elicitation requests: a legacy server's
   * `elicitation/create` and a modern `input_required` result's elicitation alike.
   */
  readonly elicitation?: McpElicitationOptions;
  /** Declares the `sampling` capability and answers sampling requests (both eras). */
  readonly sampling?: McpSamplingOptions;
  /**
   * MCP revisions offered, newest preference first. Default: every published revision,
   * `['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05', '2024-10-07']`
   * (`SUPPORTED_PROTOCOL_VERSIONS`). One entry pins that version. With `2026-07-28` on offer the
   * client probes with `server/discover` and falls back to `initialize` only on a legacy signal.
   */
  readonly protocolVersions?: readonly string[];
  /** `input_required` results one request may answer before it fails (modern mode). Default 8. */
  readonly maxInputRounds?: number;
  /**
   * Input requests that ask someone (elicitation and sampling; roots is not counted) one call may
   * put to the host in total, over its `input_required` rounds and its task's input. Default 32.
   * A server that asks for more is refused before the host is asked again:
   * {@link InputRequestError} with reason `too-many-prompts`; the request is not repeated (a task
   * is cancelled).
   */
  readonly maxInputPrompts?: number;
  /**
   * Milliseconds a listing is reused at most when a modern server gives it a TTL (`ttlMs`,
   * SEP-2549); `0` relists every time. Default 300,000. Listings without a TTL are kept until
   * `refresh`.
   */
  readonly maxListingTtlMs?: number;
  /** Stdio: milliseconds between SIGTERM and SIGKILL on close. Default 2,000. */
  readonly killGraceMs?: number;
  /**
   * Characters of a server's JSON-RPC error message kept in `ServerRpcError.serverMessage`
   * (control and invisible characters escaped; longer text is cut with a note). Default 2,048;
   * `0` keeps none.
   */
  readonly maxServerMessageChars?: number;
  /** Diagnostics (stderr lines at debug, failures at warn). Nothing goes to the console. */
  readonly logger?: McpBridgeLogger;
  /**
   * Called when the server says its tool list changed (`notifications/tools/list_changed`), after
   * the cached listing is marked stale: the next `tools()` lists again. Must not throw.
   */
  readonly onToolsListChanged?: () => void;
}

/** Per-call options of {@link McpClient.callTool}. Unknown keys are refused. */
export interface McpCallOptions {
  /** Aborting rejects the call (ambiguous once sent) and sends `notifications/cancelled`. */
  readonly signal?: AbortSignal;
  /** Milliseconds for this call; default `readTimeoutMs`. */
  readonly timeoutMs?: number;
  /**
   * Entries added to this call's `params._meta`: W3C trace context only (`traceparent`, exactly
   * the W3C format, and `tracestate`, printable ASCII of at most 512 characters). Any other key
   * or value is refused with {@link ClientConfigurationError} before anything is sent; the
   * protocol's own `_meta` keys are set by the client and cannot be overridden here.
   */
  readonly meta?: Readonly<Record<string, string>>;
  /**
   * Called each time the `tools/call` request is handed to the connection (at most twice: a
   * retry after an expired session). A call that ended before any call of it certainly did not
   * leave this process; from the first call on, it may have reached the server.
   */
  readonly onSend?: () => void;
}

type BoundedTransport = StdioTransport | StreamableHttpTransport;

interface Session {
  readonly protocol: ProtocolSession;
  readonly transport: BoundedTransport;
  alive: boolean;
}

/**
 * SEP-2164: `-32602` whose data is exactly `{ uri }`, or the older `-32002` with a `uri`; the
 * read failure arrives as a ServerRpcError whose cause is the JSON-RPC error.
 */
function isResourceNotFound(error: unknown): boolean {
  const rpc = ServerRpcError.isInstance(error) ? error.cause : undefined;
  if (!(rpc instanceof McpError)) return false;
  const data = rpc.data;
  if (
    typeof data !== 'object' ||
    data === null ||
    typeof (data as { uri?: unknown }).uri !== 'string'
  ) {
    return false;
  }
  return rpc.code === -32002 || (rpc.code === -32602 && Object.keys(data).length === 1);
}

/**
 * Checks the shape of a `tools/call` result (one pass, no copy beyond the JSON-RPC layer's): a
 * malformed one means the answer cannot be trusted, so the call is reported as ambiguous.
 */
function checkCallResult(result: Record<string, unknown>): Record<string, unknown> {
  const { content, structuredContent, isError } = result;
  if (
    (content !== undefined && !Array.isArray(content)) ||
    (structuredContent !== undefined &&
      (typeof structuredContent !== 'object' ||
        structuredContent === null ||
        Array.isArray(structuredContent))) ||
    (isError !== undefined && typeof isError !== 'boolean')
  ) {
    throw new TransportProtocolError('The MCP server sent a malformed tools/call result');
  }
  return result;
}

/**
 * The handle of a `tools/call` answered with a task: only a modern session that negotiated the
 * Tasks extension may get one. Otherwise, or when it is malformed, the server took the work in a
 * way the client cannot follow, so the call's outcome is unknown (an invalid response).
 */
function taskHandleOf(session: Session, result: Readonly<Record<string, unknown>>): TaskHandle {
  const handle = session.protocol.tasksNegotiated ? readTaskHandle(result) : undefined;
  if (handle === undefined) {
    throw new TransportProtocolError(
      session.protocol.tasksNegotiated
        ? 'The MCP server sent a malformed task handle'
        : 'The MCP server answered with a task handle although the Tasks extension was not negotiated',
    );
  }
  return handle;
}

/** A `tools/call` answered with a task handle (SEP-2663): the call is polled, never repeated. */
class TaskAnswer {
  readonly task: TaskHandle;
  constructor(task: TaskHandle) {
    this.task = task;
  }
}

/**
 * The checked result of a `tools/call`, with `content: []` when the server sent none. The
 * result is the JSON-RPC layer's own copy of the server's object, so it is returned as it is
 * when it has `content` (no second copy per call).
 */
function callResultOf(raw: Record<string, unknown>): McpCallToolResult {
  const checked = checkCallResult(raw);
  return (
    checked.content === undefined ? { content: [], ...checked } : checked
  ) as McpCallToolResult;
}

/** The raw `tools/call` result, as the server sent it (shape-checked, not mapped). */
export type McpCallToolResult = CallToolResult;

/** Each client's logger, for the bridge's reports (not part of the public API). */
const CLIENT_LOGGERS = new WeakMap<object, McpBridgeLogger>();

/** The logger a client was built with, if any (the bridge reports skipped tools to it). */
export function clientLoggerOf(client: object): McpBridgeLogger | undefined {
  return CLIENT_LOGGERS.get(client);
}

/** What an MCP endpoint URL may be, for messages that refuse one. */
const ACCEPTED_URL =
  'an absolute https:// URL (http:// only to an approved loopback address), with an optional query, no user:password@ and no #fragment';

/**
 * Refuses the parts of an endpoint URL that are never sent as written (mistri's URL rules): a
 * fragment (`#x`, even an empty `#`), which no request carries, and credentials (`user:pass@`),
 * which belong in `token`, `authProvider` or `oauth`. Text that does not parse is left to
 * `checkUrl`.
 */
function refuseUrlParts(value: string | URL): void {
  let url: URL;
  try {
    url = value instanceof URL ? value : new URL(value);
  } catch {
    return;
  }
  // `href` keeps an empty `#` that `hash` reports as ''; a '#' elsewhere is always escaped.
  if (url.href.includes('#')) {
    throw new ClientConfigurationError(
      `url must not have a fragment (#...): it is never sent to the server. Accepted: ${ACCEPTED_URL}`,
      { details: { option: 'url', reason: 'fragment' } },
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new ClientConfigurationError(
      `url must not carry credentials (user:password@): pass token, authProvider or oauth. Accepted: ${ACCEPTED_URL}`,
      { details: { option: 'url', reason: 'credentials' } },
    );
  }
}

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * A hardened MCP client over stdio or Streamable HTTP, built on the SDK's `Client` with bounded
 * transports. At most `maxConcurrentRequests` requests are in flight (default 8). Nothing is retried except on an explicit
 * server answer (401 with a token function, 404 for an expired session), and a `tools/call`
 * whose outcome is unknown raises {@link AmbiguousDeliveryError} instead of being replayed.
 */
export class McpClient {
  readonly #options: McpClientOptions;
  readonly #openTimeoutMs: number;
  readonly #readTimeoutMs: number;
  readonly #maxToolPages: number;
  readonly #maxTools: number;
  readonly #semaphore: Semaphore;
  readonly #authProvider: McpAuthProvider | undefined;
  readonly #url: URL | undefined;
  readonly #protocolVersions: readonly string[];
  readonly #maxInputRounds: number;
  readonly #maxServerMessageChars: number;
  readonly #maxInputPrompts: number;
  /** `x-mcp-header` declarations of the listed tools (modern mode). */
  #paramHeaders: ReadonlyMap<string, readonly ParamHeaderDeclaration[]> = new Map();
  #dispatcher: Dispatcher | undefined;
  #session: Session | undefined;
  #opening: Promise<Session> | undefined;
  #toolCache: McpToolListing | undefined;
  /** When the cached listing goes stale (a modern server's `ttlMs`); undefined: at `refresh`. */
  #toolCacheExpires: number | undefined;
  readonly #maxListingTtlMs: number;
  #generation = 0;
  /** Bumped by every tool list change: a listing that started before one is stale on arrival. */
  #listChanges = 0;
  readonly #tasks: TaskSettings | undefined;
  /** The waits of tasks being polled: `close()` ends them. */
  readonly #taskWaits = new Set<AbortController>();
  readonly #listenBackoff: { readonly initialMs: number; readonly maxMs: number };
  readonly #extensions: Readonly<Record<string, Readonly<Record<string, unknown>>>> | undefined;

  /**
   * Validates `options` and builds a throwaway transport so bad headers or commands fail now; does
   * not connect (the first request opens the session).
   * @throws {ClientConfigurationError} for missing, conflicting or invalid options, or a URL the
   *   network policy refuses.
   * @throws {TransportConfigurationError} when the transport rejects its options.
   */
  constructor(options: McpClientOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new ClientConfigurationError('McpClient options must be an object');
    }
    checkOptionKeys(
      options,
      MCP_CLIENT_OPTION_KEYS,
      'McpClient',
      (message, option) => new ClientConfigurationError(message, { details: { option } }),
      MCP_CLIENT_RENAMED_KEYS,
    );
    if (
      options.onToolsListChanged !== undefined &&
      typeof options.onToolsListChanged !== 'function'
    ) {
      throw new ClientConfigurationError('onToolsListChanged must be a function () => void', {
        details: { option: 'onToolsListChanged' },
      });
    }
    if (
      options.allowNonPublic !== undefined &&
      typeof options.allowNonPublic !== 'function' &&
      typeof options.allowNonPublic !== 'boolean'
    ) {
      throw new ClientConfigurationError(
        'allowNonPublic must be true, false, or a function (target, address) => boolean',
        { details: { option: 'allowNonPublic' } },
      );
    }
    const hasUrl = options.url !== undefined;
    const hasCommand = options.command !== undefined;
    if (hasUrl === hasCommand) {
      throw new ClientConfigurationError('Give exactly one of url and command');
    }
    if (options.token !== undefined && options.authProvider !== undefined) {
      throw new ClientConfigurationError('Give at most one of token and authProvider');
    }
    if (
      options.oauth !== undefined &&
      (options.token !== undefined || options.authProvider !== undefined)
    ) {
      throw new ClientConfigurationError('Give at most one of token, authProvider and oauth');
    }
    const fixedAuthorization = takeFixedAuthorization(options);
    if (options.oauth !== undefined && !hasUrl) {
      throw new ClientConfigurationError('oauth applies to url connections only');
    }
    if (
      options.token !== undefined &&
      !(typeof options.token === 'string' && options.token !== '') &&
      typeof options.token !== 'function'
    ) {
      throw new ClientConfigurationError('token must be a non-empty string or a function');
    }
    if (
      options.maxConcurrentRequests !== undefined &&
      (typeof options.maxConcurrentRequests !== 'number' ||
        !Number.isSafeInteger(options.maxConcurrentRequests) ||
        options.maxConcurrentRequests < 1)
    ) {
      throw new ClientConfigurationError('maxConcurrentRequests must be a positive integer');
    }
    if (
      options.roots !== undefined &&
      typeof options.roots !== 'function' &&
      (!Array.isArray(options.roots) ||
        !options.roots.every(
          (root) => typeof root?.uri === 'string' && root.uri.startsWith('file://'),
        ))
    ) {
      throw new ClientConfigurationError(
        'roots must be an array of { uri: "file://..." } or a function returning one',
      );
    }
    if (options.onListChanged !== undefined && typeof options.onListChanged !== 'function') {
      throw new ClientConfigurationError('onListChanged must be a function (list) => void', {
        details: { option: 'onListChanged' },
      });
    }
    this.#extensions = checkExtensions(options.extensions);
    this.#tasks = resolveTaskOptions(options.tasks);
    this.#listenBackoff = Object.freeze({
      initialMs: positiveInteger('listenBackoffInitialMs', options.listenBackoffInitialMs, 1000),
      maxMs: positiveInteger('listenBackoffMaxMs', options.listenBackoffMaxMs, 30_000),
    });
    if (this.#listenBackoff.initialMs > this.#listenBackoff.maxMs) {
      throw new ClientConfigurationError(
        'listenBackoffInitialMs must not exceed listenBackoffMaxMs',
        { details: { option: 'listenBackoffInitialMs' } },
      );
    }
    this.#openTimeoutMs = positiveNumber('openTimeoutMs', options.openTimeoutMs, 15_000);
    this.#readTimeoutMs = positiveNumber('readTimeoutMs', options.readTimeoutMs, 120_000);
    this.#maxToolPages = positiveInteger('maxToolPages', options.maxToolPages, 100);
    this.#maxTools = positiveInteger('maxTools', options.maxTools, 10_000);
    this.#maxInputRounds = positiveInteger('maxInputRounds', options.maxInputRounds, 8);
    this.#maxServerMessageChars =
      options.maxServerMessageChars === 0
        ? 0
        : positiveInteger('maxServerMessageChars', options.maxServerMessageChars, 2_048);
    this.#maxInputPrompts = positiveInteger(
      'maxInputPrompts',
      options.maxInputPrompts,
      DEFAULT_MAX_INPUT_PROMPTS,
    );
    this.#maxListingTtlMs =
      options.maxListingTtlMs === 0
        ? 0
        : positiveNumber('maxListingTtlMs', options.maxListingTtlMs, 300_000);
    this.#protocolVersions = resolveProtocolVersions(
      options.protocolVersions,
      (message) => new ClientConfigurationError(message),
    );
    if (
      options.sampling !== undefined &&
      (typeof options.sampling !== 'object' ||
        options.sampling === null ||
        typeof options.sampling.handler !== 'function')
    ) {
      throw new ClientConfigurationError('sampling must be { handler: function }');
    }
    if (
      options.elicitation !== undefined &&
      (typeof options.elicitation !== 'object' ||
        options.elicitation === null ||
        typeof options.elicitation.handler !== 'function')
    ) {
      throw new ClientConfigurationError('elicitation must be { handler: function }');
    }
    this.#semaphore = new Semaphore(
      options.maxConcurrentRequests ?? DEFAULT_MAX_CONCURRENT_REQUESTS,
    );
    resolveRecordLimits(options);
    if (hasUrl) {
      refuseUrlParts(options.url as string | URL);
      let url: URL;
      try {
        url = networkGuard().checkUrl(options.url as string | URL, {
          allowHttpLoopback: true,
          allowedPorts: 'any',
          ...netAllow(options.allowNonPublic),
        });
      } catch (error) {
        throw new ClientConfigurationError(
          netAllow(options.allowNonPublic).allowNonPublic === undefined
            ? 'url is refused by the network policy: only public https:// addresses are reached by default; for a loopback, private or internal server pass allowNonPublic (true, or a function that approves the address)'
            : 'url is refused by the network policy (allowNonPublic did not approve it, or the scheme or port is not allowed)',
          { cause: error, details: { option: 'allowNonPublic' } },
        );
      }
      if (
        url.protocol === 'http:' &&
        !isLoopbackHost(url.hostname) &&
        (options.token !== undefined ||
          options.authProvider !== undefined ||
          options.oauth !== undefined ||
          fixedAuthorization !== undefined)
      ) {
        throw new ClientConfigurationError(
          'A bearer token is never sent over plain HTTP to a non-loopback host',
        );
      }
      this.#url = url;
    } else if (options.token !== undefined || options.authProvider !== undefined) {
      throw new ClientConfigurationError('token and authProvider apply to url connections only');
    }
    this.#authProvider = toAuthProvider(options, fixedAuthorization?.value);
    // Copy everything the sessions use later, so a caller's later mutation changes nothing.
    this.#options = Object.freeze({
      ...options,
      ...(options.headers === undefined
        ? {}
        : { headers: copyFixedHeaders(fixedAuthorization?.rest ?? options.headers) }),
      ...(options.env === undefined ? {} : { env: Object.freeze({ ...options.env }) }),
      ...(Array.isArray(options.command) ? { command: Object.freeze([...options.command]) } : {}),
      ...(options.roots === undefined || typeof options.roots === 'function'
        ? {}
        : { roots: Object.freeze(options.roots.map((root) => Object.freeze({ ...root }))) }),
    });
    // Check the transport's options now so header and command errors surface at construction:
    // a throwaway stdio transport, or the HTTP transport's own check (its module loads with the
    // first connection, so a stdio-only process never loads it).
    if (this.#url === undefined) this.#makeTransport(true);
    else checkStreamableHttpOptions(this.#httpOptions(PROBE_DISPATCHER));
    if (options.logger !== undefined) CLIENT_LOGGERS.set(this, options.logger);
  }

  /** The server's `serverInfo` from the last `server/discover` or handshake. */
  get serverVersion():
    | {
        /** The server's implementation name, as it reported it (untrusted text). */
        readonly name: string;
        /** The server's implementation version, as it reported it (untrusted text). */
        readonly version: string;
      }
    | undefined {
    return this.#session?.protocol.description?.serverInfo;
  }

  /** The extensions this client declares (the `extensions` option, copied), if any. */
  get extensions(): Readonly<Record<string, Readonly<Record<string, unknown>>>> | undefined {
    return this.#extensions;
  }

  /** The server's capabilities from the last `server/discover` or handshake. */
  get serverCapabilities(): Readonly<Record<string, unknown>> | undefined {
    return this.#session?.protocol.description?.capabilities;
  }

  /** The server's `instructions` from the last `server/discover` or handshake (untrusted text). */
  get instructions(): string | undefined {
    return this.#session?.protocol.description?.instructions;
  }

  /** The negotiated MCP revision of the open connection (`2026-07-28` is modern). */
  get protocolVersion(): string | undefined {
    return this.#session?.protocol.description?.protocolVersion;
  }

  /**
   * What the server said about itself on the open connection: era, version, supported versions,
   * server info, capabilities and instructions (from `server/discover`, or `initialize` in
   * legacy mode).
   */
  get serverDescription(): McpServerDescription | undefined {
    return this.#session?.protocol.description;
  }

  /** Handshakes now if no session is open (every operation does this on demand). */
  async connect(): Promise<void> {
    await this.#semaphore.run(() => this.#ensureSession());
  }

  /**
   * Reads one resource (`resources/read`): a replayable read (one reconnect if the wire failed
   * before any response began), bounded like every record. Returns the server's `contents`
   * entries as sent (untrusted).
   * @throws {ResourceNotFoundError} when the server has no such resource (SEP-2164).
   */
  async readResource(
    uri: string,
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<readonly Readonly<Record<string, unknown>>[]> {
    if (typeof uri !== 'string' || uri === '') {
      throw new ClientConfigurationError('The resource URI must be a non-empty string');
    }
    const link = linkSignal(options.signal);
    try {
      const result = await this.#read(
        (session) =>
          session.protocol.request(
            'resources/read',
            { uri },
            {
              timeoutMs: this.#readTimeoutMs,
              ...(link === undefined ? {} : { signal: link.signal }),
            },
          ),
        link?.signal,
      );
      const contents = result.contents;
      if (
        !Array.isArray(contents) ||
        !contents.every((entry) => typeof entry === 'object' && entry !== null)
      ) {
        throw new RequestFailedError('The MCP server sent a malformed resources/read answer');
      }
      return contents as Readonly<Record<string, unknown>>[];
    } catch (error) {
      if (isResourceNotFound(error)) throw new ResourceNotFoundError(uri, { cause: error });
      throw error;
    } finally {
      link?.release();
    }
  }

  /**
   * Lists the server's tools: follows `tools/list` pagination once (page, item and repeated-cursor
   * limits), skips and reports malformed tools, and caches the result until `refresh`, or, when a
   * modern server gave the listing a TTL, for that TTL capped by `maxListingTtlMs`.
   */
  async tools(options: { readonly refresh?: boolean } = {}): Promise<readonly McpToolInfo[]> {
    return (await this.listing(options)).tools;
  }

  /** Like {@link tools}, with the skipped tools' problems. */
  async listing(options: { readonly refresh?: boolean } = {}): Promise<McpToolListing> {
    if (
      this.#toolCache !== undefined &&
      options.refresh !== true &&
      (this.#toolCacheExpires === undefined || Date.now() < this.#toolCacheExpires)
    ) {
      return this.#toolCache;
    }
    let ttlMs: number | undefined;
    const changesBefore = this.#listChanges;
    const paramHeaders = new Map<string, readonly ParamHeaderDeclaration[]>();
    let modern = false;
    const listing = await listTools({
      maxPages: this.#maxToolPages,
      maxItems: this.#maxTools,
      fetchPage: (cursor) =>
        this.#read((session) => {
          modern = session.protocol.description?.era === 'modern';
          return session.protocol
            .request('tools/list', cursor === undefined ? {} : { cursor }, {
              timeoutMs: this.#readTimeoutMs,
            })
            .then((page) => {
              // SEP-2549: the first page's ttlMs says how long the listing stays valid.
              if (cursor === undefined && modern && typeof page.ttlMs === 'number') {
                ttlMs = Number.isFinite(page.ttlMs) ? Math.max(0, page.ttlMs) : undefined;
              }
              return page;
            });
        }),
      // Over modern Streamable HTTP, a tool whose x-mcp-header annotations break the rules is
      // skipped like any malformed tool; the others stay callable. (Headers are an HTTP matter:
      // stdio and legacy listings keep such tools.)
      checkTool: (tool) => {
        if (!modern || this.#url === undefined) return undefined;
        const scan = scanParamHeaders(tool.inputSchema);
        if (!scan.ok) return scan.reason;
        if (scan.declarations.length > 0) paramHeaders.set(tool.name, scan.declarations);
        return undefined;
      },
    });
    this.#paramHeaders = paramHeaders;
    for (const problem of listing.problems) {
      this.#options.logger?.warn?.('Skipped a malformed MCP tool', { ...problem });
    }
    this.#toolCache = listing;
    this.#toolCacheExpires =
      ttlMs === undefined ? undefined : Date.now() + Math.min(ttlMs, this.#maxListingTtlMs);
    // The list changed while this listing was taken: use it once, list again next time.
    if (this.#listChanges !== changesBefore) this.#toolCacheExpires = 0;
    return listing;
  }

  /**
   * Calls a tool once. Never replays: if the wire fails after the request may have reached the
   * server, raises {@link AmbiguousDeliveryError}; a request that provably never left raises
   * {@link RequestNotSentError}. Only a 404 for an expired session (the server did not run it)
   * leads to one new handshake and one retry.
   */
  async callTool(
    name: string,
    args: Readonly<Record<string, unknown>> = {},
    options: McpCallOptions = NO_CALL_OPTIONS,
  ): Promise<McpCallToolResult> {
    if (typeof name !== 'string' || name === '') {
      throw new ClientConfigurationError('The tool name must be a non-empty string');
    }
    // The caller's options are checked; the default (no options given) has nothing to check.
    if (options !== NO_CALL_OPTIONS) {
      checkCallOptions(options, 'callTool');
      checkOptionKeys(options, CALL_OPTION_KEYS, 'callTool', callOptionError);
    }
    const meta = options.meta === undefined ? undefined : checkCallMeta(options.meta);
    const onSend = options.onSend;
    if (onSend !== undefined && typeof onSend !== 'function') {
      throw new ClientConfigurationError('onSend must be a function', {
        details: { option: 'onSend' },
      });
    }
    const timeoutMs =
      options.timeoutMs === undefined
        ? this.#readTimeoutMs
        : positiveNumber('timeoutMs', options.timeoutMs, 120_000);
    // The caller's signal as it is: the slot's wait and the request each remove their `abort`
    // listener when they end (the session's peer watches it through one shared listener, see
    // abort-link.ts).
    const signal = options.signal;
    // One prompt allowance for the whole call: its input_required rounds and its task's input.
    const prompts = new PromptAllowance(this.#maxInputPrompts);
    // The slot is taken by hand and the request awaited right here (not in a task handed to
    // `run`), so the answer reaches the caller in as few promise jobs as the SDK client's.
    let answer: McpCallToolResult | TaskAnswer;
    // Waiting for a slot: an abort rejects here, before anything was sent. A call that waits is
    // linked to the caller's signal (one listener for all the calls waiting on it).
    if (!this.#semaphore.tryAcquire()) await this.#turn(signal);
    try {
      let reinitialized = false;
      for (;;) {
        signal?.throwIfAborted();
        // An open session is used as it is (no extra promise per call); otherwise one is opened.
        const current = this.#session;
        const session = current?.alive === true ? current : await this.#ensureSession();
        this.#checkParamHeaders(session, name, args);
        // From here on the request may reach the server.
        onSend?.();
        try {
          const raw = await session.protocol.request(
            'tools/call',
            meta === undefined
              ? { name, arguments: { ...args } }
              : { name, arguments: { ...args }, _meta: { ...meta } },
            signal === undefined ? { timeoutMs, prompts } : { timeoutMs, signal, prompts },
          );
          // SEP-2663: a task handle is a confirmed answer; from here on the call is polled.
          answer = isTaskResult(raw)
            ? new TaskAnswer(taskHandleOf(session, raw))
            : callResultOf(raw);
          break;
        } catch (error) {
          if (this.#sessionExpired(session, error, session.transport.failure, reinitialized)) {
            reinitialized = true;
            continue;
          }
          if (signal?.aborted === true && !(error instanceof RequestNotSentError)) {
            throw new AmbiguousDeliveryError('aborted', { cause: error });
          }
          throw this.#callFailure(error, session);
        }
      }
    } finally {
      this.#semaphore.release();
    }
    return answer instanceof TaskAnswer ? this.#taskResult(answer.task, prompts, signal) : answer;
  }

  /** Waits for a slot of the semaphore (all slots taken): rejects when `signal` aborts first. */
  async #turn(signal: AbortSignal | undefined): Promise<void> {
    const link = linkSignal(signal);
    try {
      await this.#semaphore.acquire(link?.signal);
    } finally {
      link?.release();
    }
  }

  /**
   * Polls a task a `tools/call` was answered with to its result (its own method, so the frame of
   * every plain call does not carry the polling's state).
   */
  async #taskResult(
    handle: TaskHandle,
    prompts: PromptAllowance,
    signal: AbortSignal | undefined,
  ): Promise<McpCallToolResult> {
    const closer = new AbortController();
    this.#taskWaits.add(closer);
    let result: Record<string, unknown>;
    try {
      result = await awaitTask(handle, {
        settings: this.#tasks as TaskSettings,
        port: this.#taskPort(),
        handlers: this.#inputHandlers(),
        maxInputRounds: this.#maxInputRounds,
        prompts,
        requestTimeoutMs: this.#readTimeoutMs,
        closeSignal: closer.signal,
        ...(signal === undefined ? {} : { signal }),
      });
    } finally {
      this.#taskWaits.delete(closer);
    }
    try {
      return callResultOf(result);
    } catch (error) {
      throw new TaskError('invalid', handle.taskId, false, { cause: error });
    }
  }

  /**
   * The task requests, each a replayable read or an idempotent write under the semaphore (so
   * other requests run between polls) on the current session; a wire failure drops the session
   * and the next poll opens a new one. `tools/call` is never part of it.
   */
  #taskPort() {
    const send = async (
      method: string,
      params: Record<string, unknown>,
      timeoutMs: number,
      signal?: AbortSignal,
    ): Promise<PollOutcome> =>
      this.#semaphore.run(async () => {
        // Aborted (or closed) while waiting for its turn: nothing is sent, no session is opened.
        if (signal?.aborted === true) return { ok: false, error: signal.reason };
        let session: Session | undefined;
        try {
          session = await this.#ensureSession();
          const task = await session.protocol.request(method, params, {
            timeoutMs,
            ...(signal === undefined ? {} : { signal }),
          });
          return { ok: true, task };
        } catch (error) {
          if (
            error instanceof McpError &&
            error.code !== ErrorCode.ConnectionClosed &&
            error.code !== ErrorCode.RequestTimeout
          ) {
            throw error;
          }
          if (session !== undefined && session.transport.failure !== undefined) {
            this.#dropSession(session);
          }
          return { ok: false, error };
        }
      });
    return {
      get: (taskId: string, timeoutMs: number, signal: AbortSignal) =>
        send('tasks/get', { taskId }, timeoutMs, signal),
      update: async (
        taskId: string,
        inputResponses: Readonly<Record<string, unknown>>,
        timeoutMs: number,
        signal: AbortSignal,
      ) => (await send('tasks/update', { taskId, inputResponses }, timeoutMs, signal)).ok,
      cancel: async (taskId: string) => {
        try {
          return (await send('tasks/cancel', { taskId }, this.#readTimeoutMs)).ok;
        } catch {
          return false;
        }
      },
    };
  }

  /**
   * Sends one read-only request by method name (such as `skills/list` or `resources/read`) and
   * returns its result object, unchecked: the caller validates it. Runs as a replayable read
   * (one reconnect if the wire failed before any answer began), so never use it for a request
   * with side effects. The server's error text is not kept ({@link ServerRpcError}).
   */
  async request(
    method: string,
    params: Readonly<Record<string, unknown>> = {},
    options: {
      /** Milliseconds for this request; default `readTimeoutMs`. */
      readonly timeoutMs?: number;
    } = {},
  ): Promise<Readonly<Record<string, unknown>>> {
    if (typeof method !== 'string' || !/^[A-Za-z0-9_./-]{1,128}$/.test(method)) {
      throw new ClientConfigurationError('The method must be 1-128 of [A-Za-z0-9_./-]');
    }
    if (method === 'tools/call' || method === 'initialize' || method.startsWith('notifications/')) {
      throw new ClientConfigurationError('request() sends reads only; use callTool for tools/call');
    }
    checkCallOptions(options, 'request');
    const timeoutMs =
      options.timeoutMs === undefined
        ? this.#readTimeoutMs
        : positiveNumber('timeoutMs', options.timeoutMs, 120_000);
    return this.#read((session) =>
      session.protocol.request(method, { ...params }, { timeoutMs }),
    ) as Promise<Readonly<Record<string, unknown>>>;
  }

  /**
   * Tells the server its roots changed (`notifications/roots/list_changed`) when the `roots`
   * option is a function and a legacy session is open; otherwise does nothing. Never throws.
   */
  async notifyRootsChanged(): Promise<void> {
    const session = this.#session;
    if (typeof this.#options.roots !== 'function' || session === undefined || !session.alive)
      return;
    await session.protocol.notify('notifications/roots/list_changed').catch(() => undefined);
  }

  /** Ends the connection: stdio terminates the child, HTTP forgets the session. The tool cache stays. */
  async close(): Promise<void> {
    this.#generation++;
    for (const wait of this.#taskWaits) wait.abort();
    const session = this.#session;
    this.#session = undefined;
    this.#opening = undefined;
    if (session !== undefined) {
      session.alive = false;
      await session.protocol.close();
    }
    const dispatcher = this.#dispatcher;
    this.#dispatcher = undefined;
    if (dispatcher !== undefined) await dispatcher.close().catch(() => undefined);
  }

  /** Refuses a call whose `Mcp-Param-*` values cannot be encoded, before anything is sent. */
  #checkParamHeaders(session: Session, name: string, args: unknown): void {
    if (session.protocol.description?.era !== 'modern' || this.#url === undefined) return;
    const declarations = this.#paramHeaders.get(name);
    if (declarations === undefined) return;
    const { problems } = buildParamHeaders(declarations, args);
    if (problems.length > 0) {
      throw new ParameterHeaderError(problems.map((problem) => problem.name));
    }
  }

  #callFailure(error: unknown, session: Session): Error {
    if (
      error instanceof InputRequestError ||
      error instanceof RequestNotSentError ||
      error instanceof TransportUnauthorizedError ||
      error instanceof ClientConfigurationError ||
      isAuthRefusal(error)
    ) {
      return error as Error;
    }
    if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
      if (error.code === ErrorCode.RequestTimeout) {
        // The SDK sent notifications/cancelled; a late answer is ignored. The session stays.
        return new AmbiguousDeliveryError('timeout', { cause: error });
      }
      return this.#rpcError(error);
    }
    // Refused under load (429, 529): reported as refused, with the server's Retry-After; the
    // session stays, and nothing is retried.
    if (error instanceof ServerRateLimitedError || error instanceof ServerOverloadedError) {
      return error;
    }
    if (error instanceof TransportHttpError) {
      if (error.status < 500) return error;
      return new AmbiguousDeliveryError('server-error-status', { cause: error });
    }
    const failure = session.transport.failure ?? error;
    this.#dropSession(session);
    if (failure instanceof ResponseTooLargeError) {
      return new AmbiguousDeliveryError('response-too-large', { cause: failure });
    }
    if (failure instanceof ResponseTooComplexError) {
      return new AmbiguousDeliveryError('response-too-complex', { cause: failure });
    }
    if (failure instanceof TransportTimeoutError) {
      return new AmbiguousDeliveryError('timeout', { cause: failure });
    }
    if (failure instanceof TransportProtocolError || isSchemaError(error)) {
      return new AmbiguousDeliveryError('invalid-response', { cause: failure });
    }
    if (failure instanceof RequestNotSentError) return failure;
    if (error instanceof McpError && session.transport.failure === undefined) {
      return new AmbiguousDeliveryError('closed', { cause: error });
    }
    return new AmbiguousDeliveryError('wire-failed', { cause: failure });
  }

  /** Runs a replayable read: one reconnect if the wire failed before any response began. */
  async #read<T>(operation: (session: Session) => Promise<T>, signal?: AbortSignal): Promise<T> {
    return this.#semaphore.run(async () => {
      let reinitialized = false;
      let reconnected = false;
      for (;;) {
        const session = await this.#ensureSession();
        session.transport.responseStarted = false;
        try {
          return await operation(session);
        } catch (error) {
          const failure = session.transport.failure ?? error;
          if (this.#sessionExpired(session, error, failure, reinitialized)) {
            reinitialized = true;
            continue;
          }
          if (
            !reconnected &&
            !session.transport.responseStarted &&
            (failure instanceof RequestNotSentError ||
              (failure instanceof TransportError && !(failure instanceof TransportTimeoutError)))
          ) {
            this.#dropSession(session);
            reconnected = true;
            continue;
          }
          throw this.#readFailure(error, failure, session);
        }
      }
    }, signal);
  }

  // The server's own words ride along, bounded and printable; the SDK prefixes its message with
  // `MCP error <code>: `, which is ours, not the server's.
  #rpcError(error: McpError): ServerRpcError {
    const prefix = `MCP error ${error.code}: `;
    const words = error.message.startsWith(prefix)
      ? error.message.slice(prefix.length)
      : error.message;
    return new ServerRpcError(error.code, {
      cause: error,
      ...(words === '' || this.#maxServerMessageChars === 0
        ? {}
        : { serverMessage: printableText(words, this.#maxServerMessageChars) }),
    });
  }

  #readFailure(error: unknown, failure: unknown, session: Session): Error {
    if (error instanceof InputRequestError) return error;
    if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
      if (error.code === ErrorCode.RequestTimeout) {
        return new RequestFailedError('The MCP server did not answer within readTimeoutMs', {
          cause: error,
        });
      }
      return this.#rpcError(error);
    }
    if (isSchemaError(error)) {
      return new RequestFailedError('The MCP server sent a malformed answer', { cause: error });
    }
    if (
      isAuthRefusal(error) ||
      error instanceof TransportUnauthorizedError ||
      error instanceof ServerRateLimitedError ||
      error instanceof ServerOverloadedError
    ) {
      return error as Error;
    }
    this.#dropSession(session);
    if (failure instanceof Error) return failure;
    return new TransportError('The MCP connection failed', { cause: error });
  }

  /**
   * True when the server answered 404 for an expired session (it ran nothing): the session is
   * dropped so the caller handshakes again. A second expiry in a row raises instead.
   */
  #sessionExpired(
    session: Session,
    error: unknown,
    failure: unknown,
    alreadyReinitialized: boolean,
  ): boolean {
    if (!(error instanceof SessionExpiredError || failure instanceof SessionExpiredError)) {
      return false;
    }
    this.#dropSession(session);
    if (alreadyReinitialized) {
      throw new SessionExpiredError('The MCP session expired twice in a row', { cause: error });
    }
    return true;
  }

  #dropSession(session: Session): void {
    session.alive = false;
    if (this.#session === session) this.#session = undefined;
    void session.transport.close().catch(() => undefined);
  }

  async #ensureSession(): Promise<Session> {
    const current = this.#session;
    if (current?.alive === true) return current;
    if (this.#opening !== undefined) return this.#opening;
    const generation = this.#generation;
    const opening = this.#open().finally(() => {
      if (this.#opening === opening) this.#opening = undefined;
    });
    this.#opening = opening;
    const session = await opening;
    if (generation !== this.#generation) {
      session.alive = false;
      await session.transport.close().catch(() => undefined);
      throw new RequestNotSentError('The client was closed while connecting; nothing was sent');
    }
    return session;
  }

  async #open(): Promise<Session> {
    if (this.#url !== undefined) await this.#loadHttpTransport();
    let lastError: unknown;
    for (let attempt = 0; attempt < 2; attempt++) {
      const holder: { session?: Session } = {};
      const protocol = new ProtocolSession({
        makeTransport: () => this.#makeTransport(false),
        protocolVersions: this.#protocolVersions,
        clientInfo: {
          name: this.#options.clientName ?? 'toolfence-mcp-bridge',
          version: this.#options.clientVersion ?? VERSION,
        },
        capabilities: this.#capabilities(),
        handlers: this.#inputHandlers(),
        maxInputRounds: this.#maxInputRounds,
        maxInputPrompts: this.#maxInputPrompts,
        openTimeoutMs: this.#openTimeoutMs,
        maxServerRequests: this.#options.maxConcurrentRequests ?? DEFAULT_MAX_CONCURRENT_REQUESTS,
        paramHeaders: (toolName, args) => {
          const declarations = this.#paramHeaders.get(toolName);
          return declarations === undefined
            ? undefined
            : buildParamHeaders(declarations, args).headers;
        },
        onClose: () => {
          const session = holder.session;
          if (session === undefined) return;
          session.alive = false;
          if (this.#session === session) this.#session = undefined;
        },
        onError: (error) => {
          this.#options.logger?.debug?.('MCP client error', { name: error.name });
        },
        // The server's tool list changed: the next tools() lists again.
        onToolsListChanged: () => {
          this.#listChanges++;
          if (this.#toolCache !== undefined) this.#toolCacheExpires = 0;
          try {
            this.#options.onToolsListChanged?.();
          } catch {
            // The callback's failure is its own; the listing is already marked stale.
          }
        },
        ...(this.#options.onListChanged === undefined
          ? {}
          : {
              onListChanged: (list: 'prompts' | 'resources') => {
                try {
                  this.#options.onListChanged?.(list);
                } catch {
                  // The callback's failure is its own.
                }
              },
            }),
        // A listen stream was acknowledged or lost: a change may have been missed. The listing
        // is taken again; the host's callback is for changes the server announced.
        onToolsListStale: () => {
          this.#listChanges++;
          if (this.#toolCache !== undefined) this.#toolCacheExpires = 0;
        },
        ...(this.#options.standaloneStream === false ? {} : { listen: this.#listenBackoff }),
        tasks: this.#tasks !== undefined,
        ...(this.#options.logger === undefined ? {} : { logger: this.#options.logger }),
      });
      const session: Session = {
        protocol,
        get transport() {
          return protocol.transport;
        },
        alive: true,
      };
      holder.session = session;
      try {
        await protocol.open();
        this.#session = session;
        return session;
      } catch (error) {
        session.alive = false;
        const transport = protocol.transport;
        await protocol.close();
        const failure = transport.failure ?? error;
        lastError = failure;
        // Only an HTTP open is tried twice (a connection reset before any answer). A stdio
        // server that exits during the handshake is started once: starting it again repeats its
        // start-up (and its side effects) and fails the same way.
        const retryable =
          attempt === 0 &&
          this.#url !== undefined &&
          !transport.responseStarted &&
          (failure instanceof RequestNotSentError ||
            (failure instanceof TransportError && !(failure instanceof TransportTimeoutError)));
        if (retryable) continue;
        if (
          isAuthRefusal(failure) ||
          failure instanceof TransportUnauthorizedError ||
          failure instanceof SessionExpiredError ||
          failure instanceof RequestNotSentError ||
          failure instanceof ResponseTooLargeError ||
          failure instanceof ResponseTooComplexError ||
          failure instanceof TransportHttpError ||
          failure instanceof UnsupportedProtocolVersionError ||
          failure instanceof VersionNegotiationError
        ) {
          throw failure;
        }
        throw new HandshakeError('The MCP handshake failed', { cause: failure });
      }
    }
    throw new HandshakeError('The MCP handshake failed', { cause: lastError });
  }

  /** Capabilities are declared only for the callbacks the host gave. */
  #capabilities(): Record<string, unknown> {
    const options = this.#options;
    const capabilities: Record<string, unknown> = {};
    if (this.#extensions !== undefined) capabilities.extensions = this.#extensions;
    if (options.roots !== undefined) {
      capabilities.roots = { listChanged: typeof options.roots === 'function' };
    }
    if (options.sampling !== undefined) capabilities.sampling = {};
    if (options.elicitation !== undefined) {
      capabilities.elicitation = {
        form: options.elicitation.applyDefaults === true ? { applyDefaults: true } : {},
      };
    }
    return capabilities;
  }

  #inputHandlers(): InputHandlers {
    const { roots, elicitation, sampling } = this.#options;
    return {
      ...(roots === undefined
        ? {}
        : {
            roots: async () => ({
              roots: (typeof roots === 'function' ? await roots() : roots).map((root) => ({
                ...root,
              })),
            }),
          }),
      ...(elicitation === undefined
        ? {}
        : {
            elicitation: async (params: Readonly<Record<string, unknown>>) =>
              (await loadElicitation()).answerElicitation(
                params,
                elicitation.handler,
                elicitation.applyDefaults === true,
              ),
          }),
      ...(sampling === undefined
        ? {}
        : { sampling: (params: Readonly<Record<string, unknown>>) => sampling.handler(params) }),
    };
  }

  #makeTransport(probe: boolean): BoundedTransport {
    const options = this.#options;
    const common = this.#commonTransportOptions();
    if (this.#url === undefined) {
      return withEarlyProcess(
        new StdioTransport({
          ...common,
          command: options.command as readonly string[],
          ...(options.env === undefined ? {} : { env: options.env }),
          ...(options.inheritEnv === undefined ? {} : { inheritEnv: options.inheritEnv }),
          ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
          ...(options.killGraceMs === undefined ? {} : { killGraceMs: options.killGraceMs }),
        }),
        // The first transport takes a process the gateway spawned early, if it was given one.
        probe ? undefined : takeGivenProcess(this),
      );
    }
    if (this.#dispatcher === undefined) {
      this.#dispatcher = networkGuard().createGuardedDispatcher({
        ...netAllow(options.allowNonPublic),
        connectTimeoutMs: Math.min(this.#openTimeoutMs, 10_000),
      });
    }
    const Transport = this.#httpTransportClass;
    if (Transport === undefined) {
      // #open loads it before it makes a transport; reaching here is a defect, not a config.
      throw new TransportError('The HTTP transport was used before it loaded');
    }
    return new Transport(this.#httpOptions(this.#dispatcher as Dispatcher));
  }

  /** The HTTP transport class, set by #loadHttpTransport (the first connection loads it). */
  #httpTransportClass: typeof StreamableHttpTransport | undefined;

  async #loadHttpTransport(): Promise<void> {
    this.#httpTransportClass ??= (await loadHttpTransportModule()).StreamableHttpTransport;
  }

  /** The record limits, read timeout and logger, the same for both transports. */
  #commonTransportOptions() {
    const options = this.#options;
    return {
      ...(options.maxRecordBytes === undefined ? {} : { maxRecordBytes: options.maxRecordBytes }),
      ...(options.maxRecordTokens === undefined
        ? {}
        : { maxRecordTokens: options.maxRecordTokens }),
      ...(options.maxRecordDepth === undefined ? {} : { maxRecordDepth: options.maxRecordDepth }),
      ...(options.maxNumberBytes === undefined ? {} : { maxNumberBytes: options.maxNumberBytes }),
      readTimeoutMs: this.#readTimeoutMs,
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    };
  }

  /** The HTTP transport's options (the dispatcher given: the probe's, or the guarded one). */
  #httpOptions(dispatcher: Dispatcher): StreamableHttpTransportOptions {
    const options = this.#options;
    return {
      ...this.#commonTransportOptions(),
      url: this.#url as URL,
      dispatcher,
      ...(this.#authProvider === undefined ? {} : { authProvider: this.#authProvider }),
      ...(options.headers === undefined ? {} : { headers: options.headers }),
      ...(options.deleteSessionOnClose === undefined
        ? {}
        : { deleteSessionOnClose: options.deleteSessionOnClose }),
      ...(options.standaloneStream === undefined
        ? {}
        : { standaloneStream: options.standaloneStream }),
      ...(options.maxSseRetryMs === undefined ? {} : { maxSseRetryMs: options.maxSseRetryMs }),
      ...(options.maxSseCommentBytes === undefined
        ? {}
        : { maxSseCommentBytes: options.maxSseCommentBytes }),
    };
  }
}

// Used only to validate transport options at construction; never dispatches.
const PROBE_DISPATCHER = {} as Dispatcher;

let httpTransportModule:
  | Promise<typeof import('../transport/streamable-http-transport.js')>
  | undefined;

let elicitationModule: Promise<typeof import('../protocol/elicitation.js')> | undefined;

/** Loads the elicitation answer once, with the first `elicitation/create` a server sends. */
function loadElicitation(): Promise<typeof import('../protocol/elicitation.js')> {
  elicitationModule ??= import('../protocol/elicitation.js');
  return elicitationModule;
}

/** Loads the HTTP transport once, for the first client that connects to an HTTP server. */
function loadHttpTransportModule(): Promise<
  typeof import('../transport/streamable-http-transport.js')
> {
  httpTransportModule ??= import('../transport/streamable-http-transport.js');
  return httpTransportModule;
}

/**
 * Takes a fixed `Authorization` out of `headers` (mistri's rule: a fixed header is allowed when
 * nothing else owns authorization). Refused next to `token`, `authProvider` or `oauth`, which own
 * the header, so one of two credentials is never dropped silently.
 */
function takeFixedAuthorization(
  options: McpClientOptions,
): { readonly value: string; readonly rest: Readonly<Record<string, string>> } | undefined {
  const headers = options.headers;
  if (typeof headers !== 'object' || headers === null || Array.isArray(headers)) return undefined;
  const names = Object.keys(headers).filter((name) => name.toLowerCase() === 'authorization');
  if (names.length === 0) return undefined;
  if (options.url === undefined) {
    throw new ClientConfigurationError('headers apply to url connections only', {
      details: { option: 'headers' },
    });
  }
  if (
    options.token !== undefined ||
    options.authProvider !== undefined ||
    options.oauth !== undefined
  ) {
    throw new ClientConfigurationError(
      'headers.Authorization cannot be combined with token, authProvider or oauth, which set the Authorization header themselves; give a fixed Authorization header only when none of them is given',
      { details: { option: 'headers' } },
    );
  }
  if (names.length > 1) {
    throw new ClientConfigurationError('headers names Authorization more than once', {
      details: { option: 'headers' },
    });
  }
  const value = headers[names[0] as string];
  if (typeof value !== 'string' || value.trim() === '' || hasControlCharacter(value)) {
    throw new ClientConfigurationError(
      'headers.Authorization must be a non-empty string without control characters',
      { details: { option: 'headers' } },
    );
  }
  const rest: Record<string, string> = {};
  for (const [name, entry] of Object.entries(headers)) {
    if (name.toLowerCase() !== 'authorization') rest[name] = entry;
  }
  return { value, rest };
}

function toAuthProvider(
  options: McpClientOptions,
  fixedAuthorization: string | undefined,
): McpAuthProvider | undefined {
  if (fixedAuthorization !== undefined) {
    // Sent as given on every request; a 401 is the caller's to act on (no retry).
    return {
      token: () => undefined,
      headers: () => ({ authorization: fixedAuthorization }),
      maxChallengesPerRequest: 0,
    };
  }
  if (options.authProvider !== undefined) return options.authProvider;
  if (options.oauth !== undefined) {
    return new OAuthTokenProvider({
      ...(options.allowNonPublic === undefined ? {} : { allowNonPublic: options.allowNonPublic }),
      ...options.oauth,
      url: options.url instanceof URL ? options.url.href : String(options.url),
    });
  }
  const token = options.token;
  if (token === undefined) return undefined;
  if (typeof token === 'string') return { token: () => token, maxChallengesPerRequest: 0 };
  return {
    token,
    // A 401 means the server refused the credential without running the request: resolve the
    // token function once more and retry once. A 403 is not retried.
    onChallenge: (challenge) => challenge.status === 401 && challenge.attempt === 1,
    maxChallengesPerRequest: 1,
  };
}

const EXTENSION_ID = /^[A-Za-z0-9][A-Za-z0-9.-]{0,127}\/[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Checks and copies the `extensions` option: `vendor/name` keys, plain JSON object settings. */
function checkExtensions(
  value: unknown,
): Readonly<Record<string, Readonly<Record<string, unknown>>>> | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ClientConfigurationError('extensions must be an object of identifier to settings');
  }
  const copy: Record<string, Readonly<Record<string, unknown>>> = {};
  for (const [id, settings] of Object.entries(value)) {
    if (!EXTENSION_ID.test(id)) {
      throw new ClientConfigurationError('An extension identifier must look like vendor/name');
    }
    if (id === TASKS_EXTENSION_ID) {
      throw new ClientConfigurationError(
        'Declare the Tasks extension with the tasks option (it makes callTool poll task handles), not through extensions',
        { details: { option: 'extensions' } },
      );
    }
    if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) {
      throw new ClientConfigurationError("An extension's settings must be an object");
    }
    let json: string | undefined;
    try {
      json = JSON.stringify(settings);
    } catch {
      json = undefined;
    }
    if (json === undefined || json.length > 65_536) {
      throw new ClientConfigurationError("An extension's settings must be JSON of at most 64 KiB");
    }
    copy[id] = Object.freeze(JSON.parse(json) as Record<string, unknown>);
  }
  return Object.freeze(copy);
}
