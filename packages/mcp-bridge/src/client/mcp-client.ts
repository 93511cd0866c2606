import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  type CallToolResult,
  ElicitRequestSchema,
  type ElicitResult,
  ErrorCode,
  ListRootsRequestSchema,
  McpError,
  type Root,
} from '@modelcontextprotocol/sdk/types.js';
import { type AllowNonPublic, checkUrl, createGuardedDispatcher } from '@toolfence/tools/net';
import type { Dispatcher } from 'undici';
import { z } from 'zod';
import { type OAuthConnectionOptions, OAuthTokenProvider } from '../oauth/token-provider.js';
import type { McpAuthProvider, McpTokenSource } from '../transport/auth-provider.js';
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
import { copyFixedHeaders } from '../transport/header-rules.js';
import type { McpBridgeLogger } from '../transport/logger.js';
import {
  positiveInteger,
  positiveNumber,
  resolveRecordLimits,
} from '../transport/record-limits.js';
import { StdioTransport } from '../transport/stdio-transport.js';
import { isAuthRefusal, StreamableHttpTransport } from '../transport/streamable-http-transport.js';
import { VERSION } from '../version.js';
import {
  AmbiguousDeliveryError,
  ClientConfigurationError,
  HandshakeError,
  RequestFailedError,
  ServerRpcError,
} from './errors.js';
import { Semaphore } from './semaphore.js';
import { listTools, type McpToolInfo, type McpToolListing } from './tool-listing.js';

/** Answers a server's elicitation request (form mode). */
export interface McpElicitationOptions {
  /** Declare `elicitation.form.applyDefaults`. Default false. */
  readonly applyDefaults?: boolean;
  /** Produces the answer; its `content` goes back to the server. */
  readonly handler: (params: Readonly<Record<string, unknown>>) => Promise<ElicitResult>;
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
  /** HTTP: fixed extra headers (copied; transport-owned names refused). */
  readonly headers?: Readonly<Record<string, string>>;
  /** HTTP: approves a non-public address (for example an internal host or loopback). Default: none. */
  readonly allowNonPublic?: AllowNonPublic;
  /** HTTP: send DELETE for the session on close. Default true. */
  readonly deleteSessionOnClose?: boolean;
  /** HTTP: open the optional GET stream for server-initiated requests after the handshake. Default true. */
  readonly standaloneStream?: boolean;
  /** HTTP: milliseconds a server's SSE `retry:` may ask for at most (longer is cut). Default 30,000. */
  readonly maxSseRetry?: number;
  /** HTTP: bytes of SSE comment lines allowed between two blank lines. Default 64 KiB. */
  readonly maxSseCommentBytes?: number;
  /** `clientInfo.name`. Default `toolfence-mcp-bridge`. */
  readonly clientName?: string;
  /** `clientInfo.version`. Default this package's version. */
  readonly clientVersion?: string;
  /** Seconds for the handshake. Default 15. */
  readonly openTimeout?: number;
  /** Seconds for a request's answer and for each record to complete. Default 120. */
  readonly readTimeout?: number;
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
  /** Requests in flight at once on this client. Default 1 (serialized). */
  readonly maxConcurrentRequests?: number;
  /** Roots offered to the server; only when given is the `roots` capability declared. */
  readonly roots?: readonly Root[];
  /** Declares the `elicitation` capability and answers elicitation requests. */
  readonly elicitation?: McpElicitationOptions;
  /** Stdio: seconds between SIGTERM and SIGKILL on close. Default 2. */
  readonly killGrace?: number;
  /** Diagnostics (stderr lines at debug, failures at warn). Nothing goes to the console. */
  readonly logger?: McpBridgeLogger;
}

/** Per-call options of {@link McpClient.callTool}. */
export interface McpCallOptions {
  /** Aborting rejects the call (ambiguous once sent) and sends `notifications/cancelled`. */
  readonly signal?: AbortSignal;
  /** Seconds for this call; default `readTimeout`. */
  readonly timeout?: number;
}

type BoundedTransport = StdioTransport | StreamableHttpTransport;

interface Session {
  readonly client: Client;
  readonly transport: BoundedTransport;
  alive: boolean;
}

const LooseResultSchema = z.object({}).passthrough();

const CallResultSchema = z
  .object({
    content: z.array(z.unknown()).optional(),
    structuredContent: z.record(z.string(), z.unknown()).optional(),
    isError: z.boolean().optional(),
  })
  .passthrough();

/** The raw `tools/call` result, as the server sent it (shape-checked, not mapped). */
export type McpCallToolResult = CallToolResult;

/** Each client's logger, for the bridge's reports (not part of the public API). */
const CLIENT_LOGGERS = new WeakMap<object, McpBridgeLogger>();

/** The logger a client was built with, if any (the bridge reports skipped tools to it). */
export function clientLoggerOf(client: object): McpBridgeLogger | undefined {
  return CLIENT_LOGGERS.get(client);
}

function isLoopbackHost(hostname: string): boolean {
  const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * A hardened MCP client over stdio or Streamable HTTP, built on the SDK's `Client` with bounded
 * transports. Requests are serialized by default. Nothing is retried except on an explicit
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
  #dispatcher: Dispatcher | undefined;
  #session: Session | undefined;
  #opening: Promise<Session> | undefined;
  #toolCache: McpToolListing | undefined;
  #generation = 0;

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
      (!Array.isArray(options.roots) ||
        !options.roots.every(
          (root) => typeof root?.uri === 'string' && root.uri.startsWith('file://'),
        ))
    ) {
      throw new ClientConfigurationError('roots must be an array of { uri: "file://..." }');
    }
    this.#openTimeoutMs = positiveNumber('openTimeout', options.openTimeout, 15) * 1000;
    this.#readTimeoutMs = positiveNumber('readTimeout', options.readTimeout, 120) * 1000;
    this.#maxToolPages = positiveInteger('maxToolPages', options.maxToolPages, 100);
    this.#maxTools = positiveInteger('maxTools', options.maxTools, 10_000);
    this.#semaphore = new Semaphore(options.maxConcurrentRequests ?? 1);
    resolveRecordLimits(options);
    if (hasUrl) {
      let url: URL;
      try {
        url = checkUrl(options.url as string | URL, {
          allowHttpLoopback: true,
          allowedPorts: 'any',
          ...(options.allowNonPublic === undefined
            ? {}
            : { allowNonPublic: options.allowNonPublic }),
        });
      } catch (error) {
        throw new ClientConfigurationError('url is refused by the network policy', {
          cause: error,
        });
      }
      if (
        url.protocol === 'http:' &&
        !isLoopbackHost(url.hostname) &&
        (options.token !== undefined ||
          options.authProvider !== undefined ||
          options.oauth !== undefined)
      ) {
        throw new ClientConfigurationError(
          'A bearer token is never sent over plain HTTP to a non-loopback host',
        );
      }
      this.#url = url;
    } else if (options.token !== undefined || options.authProvider !== undefined) {
      throw new ClientConfigurationError('token and authProvider apply to url connections only');
    }
    this.#authProvider = toAuthProvider(options);
    // Copy everything the sessions use later, so a caller's later mutation changes nothing.
    this.#options = Object.freeze({
      ...options,
      ...(options.headers === undefined ? {} : { headers: copyFixedHeaders(options.headers) }),
      ...(options.env === undefined ? {} : { env: Object.freeze({ ...options.env }) }),
      ...(Array.isArray(options.command) ? { command: Object.freeze([...options.command]) } : {}),
      ...(options.roots === undefined
        ? {}
        : { roots: Object.freeze(options.roots.map((root) => Object.freeze({ ...root }))) }),
    });
    // Construct a throwaway transport now so header and command errors surface at construction.
    this.#makeTransport(true);
    if (options.logger !== undefined) CLIENT_LOGGERS.set(this, options.logger);
  }

  /** The server's `serverInfo` from the last handshake. */
  get serverVersion():
    | {
        /** The server's implementation name, as it reported it (untrusted text). */
        readonly name: string;
        /** The server's implementation version, as it reported it (untrusted text). */
        readonly version: string;
      }
    | undefined {
    return this.#session?.client.getServerVersion();
  }

  /** The server's capabilities from the last handshake. */
  get serverCapabilities(): Readonly<Record<string, unknown>> | undefined {
    return this.#session?.client.getServerCapabilities();
  }

  /** The server's `instructions` from the last handshake (untrusted text). */
  get instructions(): string | undefined {
    return this.#session?.client.getInstructions();
  }

  /** Handshakes now if no session is open (every operation does this on demand). */
  async connect(): Promise<void> {
    await this.#semaphore.run(() => this.#ensureSession());
  }

  /**
   * Lists the server's tools: follows `tools/list` pagination once (page, item and repeated-cursor
   * limits), skips and reports malformed tools, and caches the result until `refresh`.
   */
  async tools(options: { readonly refresh?: boolean } = {}): Promise<readonly McpToolInfo[]> {
    return (await this.listing(options)).tools;
  }

  /** Like {@link tools}, with the skipped tools' problems. */
  async listing(options: { readonly refresh?: boolean } = {}): Promise<McpToolListing> {
    if (this.#toolCache !== undefined && options.refresh !== true) return this.#toolCache;
    const listing = await listTools({
      maxPages: this.#maxToolPages,
      maxItems: this.#maxTools,
      fetchPage: (cursor) =>
        this.#read((session) =>
          session.client.request(
            { method: 'tools/list', params: cursor === undefined ? {} : { cursor } },
            LooseResultSchema,
            { timeout: this.#readTimeoutMs },
          ),
        ),
    });
    for (const problem of listing.problems) {
      this.#options.logger?.warn?.('Skipped a malformed MCP tool', { ...problem });
    }
    this.#toolCache = listing;
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
    options: McpCallOptions = {},
  ): Promise<McpCallToolResult> {
    if (typeof name !== 'string' || name === '') {
      throw new ClientConfigurationError('The tool name must be a non-empty string');
    }
    const timeoutMs =
      options.timeout === undefined
        ? this.#readTimeoutMs
        : positiveNumber('timeout', options.timeout, 120) * 1000;
    return this.#semaphore.run(async () => {
      let reinitialized = false;
      for (;;) {
        options.signal?.throwIfAborted();
        const session = await this.#ensureSession();
        try {
          const result = await session.client.request(
            { method: 'tools/call', params: { name, arguments: { ...args } } },
            CallResultSchema,
            {
              timeout: timeoutMs,
              ...(options.signal === undefined ? {} : { signal: options.signal }),
            },
          );
          return { content: [], ...result } as McpCallToolResult;
        } catch (error) {
          if (this.#sessionExpired(session, error, session.transport.failure, reinitialized)) {
            reinitialized = true;
            continue;
          }
          if (options.signal?.aborted === true && !(error instanceof RequestNotSentError)) {
            throw new AmbiguousDeliveryError('aborted', { cause: error });
          }
          throw this.#callFailure(error, session);
        }
      }
    });
  }

  /** Ends the connection: stdio terminates the child, HTTP forgets the session. The tool cache stays. */
  async close(): Promise<void> {
    this.#generation++;
    const session = this.#session;
    this.#session = undefined;
    this.#opening = undefined;
    if (session !== undefined) {
      session.alive = false;
      await session.client.close().catch(() => undefined);
      await session.transport.close().catch(() => undefined);
    }
    const dispatcher = this.#dispatcher;
    this.#dispatcher = undefined;
    if (dispatcher !== undefined) await dispatcher.close().catch(() => undefined);
  }

  #callFailure(error: unknown, session: Session): Error {
    if (
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
      return new ServerRpcError(error.code, { cause: error });
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
    if (failure instanceof TransportProtocolError || error instanceof z.ZodError) {
      return new AmbiguousDeliveryError('invalid-response', { cause: failure });
    }
    if (failure instanceof RequestNotSentError) return failure;
    if (error instanceof McpError && session.transport.failure === undefined) {
      return new AmbiguousDeliveryError('closed', { cause: error });
    }
    return new AmbiguousDeliveryError('wire-failed', { cause: failure });
  }

  /** Runs a replayable read: one reconnect if the wire failed before any response began. */
  async #read<T>(operation: (session: Session) => Promise<T>): Promise<T> {
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
    });
  }

  #readFailure(error: unknown, failure: unknown, session: Session): Error {
    if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) {
      if (error.code === ErrorCode.RequestTimeout) {
        return new RequestFailedError('The MCP server did not answer within readTimeout', {
          cause: error,
        });
      }
      return new ServerRpcError(error.code, { cause: error });
    }
    if (error instanceof z.ZodError) {
      return new RequestFailedError('The MCP server sent a malformed answer', { cause: error });
    }
    if (isAuthRefusal(error) || error instanceof TransportUnauthorizedError) return error as Error;
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
    let lastError: unknown;
    for (let attempt = 0; attempt < 2; attempt++) {
      const transport = this.#makeTransport(false);
      const client = this.#makeClient();
      const session: Session = { client, transport, alive: true };
      client.onclose = () => {
        session.alive = false;
        if (this.#session === session) this.#session = undefined;
      };
      client.onerror = (error) => {
        this.#options.logger?.debug?.('MCP client error', { name: error.name });
      };
      try {
        await client.connect(transport, { timeout: this.#openTimeoutMs });
        this.#session = session;
        return session;
      } catch (error) {
        session.alive = false;
        await transport.close().catch(() => undefined);
        const failure = transport.failure ?? error;
        lastError = failure;
        const retryable =
          attempt === 0 &&
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
          failure instanceof TransportHttpError
        ) {
          throw failure;
        }
        throw new HandshakeError('The MCP handshake failed', { cause: failure });
      }
    }
    throw new HandshakeError('The MCP handshake failed', { cause: lastError });
  }

  #makeClient(): Client {
    const options = this.#options;
    const capabilities: Record<string, unknown> = {};
    if (options.roots !== undefined) capabilities.roots = { listChanged: false };
    if (options.elicitation !== undefined) {
      capabilities.elicitation = {
        form: options.elicitation.applyDefaults === true ? { applyDefaults: true } : {},
      };
    }
    const client = new Client(
      {
        name: options.clientName ?? 'toolfence-mcp-bridge',
        version: options.clientVersion ?? VERSION,
      },
      { capabilities },
    );
    if (options.roots !== undefined) {
      const roots = options.roots.map((root) => ({ ...root }));
      client.setRequestHandler(ListRootsRequestSchema, () => ({ roots }));
    }
    const elicitation = options.elicitation;
    if (elicitation !== undefined) {
      client.setRequestHandler(ElicitRequestSchema, (request) =>
        elicitation.handler(request.params as Record<string, unknown>),
      );
    }
    return client;
  }

  #makeTransport(probe: boolean): BoundedTransport {
    const options = this.#options;
    const limits = {
      ...(options.maxRecordBytes === undefined ? {} : { maxRecordBytes: options.maxRecordBytes }),
      ...(options.maxRecordTokens === undefined
        ? {}
        : { maxRecordTokens: options.maxRecordTokens }),
      ...(options.maxRecordDepth === undefined ? {} : { maxRecordDepth: options.maxRecordDepth }),
      ...(options.maxNumberBytes === undefined ? {} : { maxNumberBytes: options.maxNumberBytes }),
    };
    const common = {
      ...limits,
      readTimeout: this.#readTimeoutMs / 1000,
      ...(options.logger === undefined ? {} : { logger: options.logger }),
    };
    if (this.#url === undefined) {
      return new StdioTransport({
        ...common,
        command: options.command as readonly string[],
        ...(options.env === undefined ? {} : { env: options.env }),
        ...(options.inheritEnv === undefined ? {} : { inheritEnv: options.inheritEnv }),
        ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
        ...(options.killGrace === undefined ? {} : { killGrace: options.killGrace }),
      });
    }
    if (!probe && this.#dispatcher === undefined) {
      this.#dispatcher = createGuardedDispatcher({
        ...(options.allowNonPublic === undefined ? {} : { allowNonPublic: options.allowNonPublic }),
        connectTimeoutMs: Math.min(this.#openTimeoutMs, 10_000),
      });
    }
    return new StreamableHttpTransport({
      ...common,
      url: this.#url,
      dispatcher: (this.#dispatcher ?? PROBE_DISPATCHER) as Dispatcher,
      ...(this.#authProvider === undefined ? {} : { authProvider: this.#authProvider }),
      ...(options.headers === undefined ? {} : { headers: options.headers }),
      ...(options.deleteSessionOnClose === undefined
        ? {}
        : { deleteSessionOnClose: options.deleteSessionOnClose }),
      ...(options.standaloneStream === undefined
        ? {}
        : { standaloneStream: options.standaloneStream }),
      ...(options.maxSseRetry === undefined ? {} : { maxSseRetry: options.maxSseRetry }),
      ...(options.maxSseCommentBytes === undefined
        ? {}
        : { maxSseCommentBytes: options.maxSseCommentBytes }),
    });
  }
}

// Used only to validate transport options at construction; never dispatches.
const PROBE_DISPATCHER = {} as Dispatcher;

function toAuthProvider(options: McpClientOptions): McpAuthProvider | undefined {
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
