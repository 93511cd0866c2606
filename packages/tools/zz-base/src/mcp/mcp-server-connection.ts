import { createHash } from 'node:crypto';
import { checkOptionKeys } from '../registry/option-keys.js';
import type { JsonObject, ToolResult } from '../registry/tool.js';
import { ToolsError } from '../tools-error.js';
import {
  type McpPromptDescriptor,
  type McpResourceDescriptor,
  type McpResourceTemplateDescriptor,
  type McpToolDescriptor,
  parsePrompt,
  parseResource,
  parseResourceTemplate,
  parseTool,
} from './descriptors.js';
import {
  McpCapabilityError,
  McpCatalogStaleError,
  McpConfigurationError,
  McpLifecycleError,
  McpTimeoutError,
  McpTransportError,
} from './errors.js';
import type { McpLimits } from './mcp-limits.js';
import { McpServerConfig, type McpServerConfigInit } from './mcp-server-config.js';
import type { McpInitializeResult, McpRequestOptions, McpSession } from './mcp-session.js';
import { collectPages, type McpListingProblem } from './pagination.js';
import {
  type McpPromptResult,
  type McpResourceReadResult,
  type McpResultMapper,
  mapCallToolResult,
  mapGetPromptResult,
  mapReadResourceResult,
} from './result-mapping.js';

/** Extra listings when `list_changed` arrives while the tools are listed. */
const LISTING_RETRIES = 2;

/** A capability a request needs. */
export type McpCapability = 'tools' | 'resources' | 'prompts';

/** Lifecycle state of a connection. */
export type McpConnectionState = 'new' | 'ready' | 'retired' | 'closed';

/** Why a connection stopped taking requests. */
export type McpRetireReason = 'replaced' | 'unregistered' | 'closed';

/** Events a connection reports (through `McpServerRegistry`'s `onEvent`). */
export type McpServerEvent =
  | {
      /** The server sent `notifications/tools/list_changed`; the catalog is now stale. */
      readonly type: 'tools_list_changed';
      /** Name of the server that sent it. */
      readonly server: string;
    }
  | {
      /** The tools were listed again after a change notification. */
      readonly type: 'tools_rediscovered';
      /** Name of the server whose tools were listed. */
      readonly server: string;
      /** True when the tool list differs from before (a new catalog generation began). */
      readonly changed: boolean;
      /** Number of well-formed tools in the new listing. */
      readonly toolCount: number;
      /** Tools skipped as malformed in that listing. */
      readonly problems: readonly McpListingProblem[];
    }
  | {
      /** Listing the tools after a change notification failed; the catalog stays stale. */
      readonly type: 'rediscovery_failed';
      /** Name of the server that failed. */
      readonly server: string;
      /** Error code of the failure. */
      readonly code: string;
    }
  | {
      /** Closing the session of a retired connection failed. */
      readonly type: 'close_failed';
      /** Name of the server whose session failed to close. */
      readonly server: string;
      /** Error code of the failure. */
      readonly code: string;
    };

/** A listing with the items that were skipped as malformed. */
export interface McpListing<T> {
  /** The well-formed items of all pages, in server order. */
  readonly items: readonly T[];
  /** One entry per item skipped as malformed. */
  readonly problems: readonly McpListingProblem[];
}

/** What {@link McpServerConnection} accepts. */
export interface McpServerConnectionInit {
  /** The host's connected session to the server; it must have every required method. */
  readonly session: McpSession;
  /** The server's configuration; a plain init object is validated into an McpServerConfig. */
  readonly config: McpServerConfig | McpServerConfigInit;
  /** Maps raw `tools/call` results; default {@link mapCallToolResult}. */
  readonly mapper?: McpResultMapper;
}

/** A held lease: the connection stays open until every lease is released. */
export interface McpConnectionLease {
  /** The connection the lease keeps open. */
  readonly connection: McpServerConnection;
  /** Ends the lease; the last release lets a retired connection close. Extra calls do nothing. */
  release(): void;
}

interface CatalogState {
  generation: number;
  fingerprint: string | undefined;
  stale: boolean;
}

/**
 * One MCP server behind a host-injected {@link McpSession}: its configuration, capabilities,
 * request time limits, leases and tool catalog generation. Usually driven by
 * `McpServerRegistry`; its methods can also be used directly.
 */
export class McpServerConnection {
  /** The host-injected session requests go through. */
  readonly session: McpSession;
  /** The validated configuration (name, namespace, limits, lifecycle options). */
  readonly config: McpServerConfig;
  /** Maps raw `tools/call` results into tool results; default {@link mapCallToolResult}. */
  readonly mapper: McpResultMapper;
  #state: McpConnectionState = 'new';
  #retireReason: McpRetireReason | undefined;
  #capabilities: Readonly<Record<string, unknown>> | undefined;
  #initializing: Promise<McpInitializeResult> | undefined;
  #leases = 0;
  #retired: Promise<void> | undefined;
  #drained: (() => void) | undefined;
  #unsubscribe: (() => void) | undefined;
  #catalog: CatalogState = { generation: 0, fingerprint: undefined, stale: false };
  #listeners = new Set<(event: McpServerEvent) => void>();
  #rediscoverTimer: ReturnType<typeof setTimeout> | undefined;
  #lastRediscovery = Number.NEGATIVE_INFINITY;
  #rediscovering = false;
  #listChanges = 0;
  #rediscoverAgain = false;

  /** Checks the session and config; throws {@link McpConfigurationError} if either is unusable. */
  constructor(init: McpServerConnectionInit) {
    checkOptionKeys(init, ['session', 'config', 'mapper'], 'McpServerConnection');
    if (typeof init !== 'object' || init === null || typeof init.session !== 'object') {
      throw new McpConfigurationError('McpServerConnection needs a session and a config');
    }
    for (const method of [
      'initialize',
      'listTools',
      'listResources',
      'listResourceTemplates',
      'listPrompts',
      'callTool',
      'readResource',
      'getPrompt',
      'close',
    ] as const) {
      if (typeof init.session[method] !== 'function') {
        throw new McpConfigurationError('MCP session lacks a required method', {
          details: { method },
        });
      }
    }
    if (init.mapper !== undefined && typeof init.mapper !== 'function') {
      throw new McpConfigurationError('MCP result mapper must be a function');
    }
    this.session = init.session;
    this.config =
      init.config instanceof McpServerConfig ? init.config : new McpServerConfig(init.config);
    this.mapper = init.mapper ?? mapCallToolResult;
  }

  /** Server name. */
  get name(): string {
    return this.config.name;
  }

  /** The connection's limits (`config.limits`): pages, items, content and request time. */
  get limits(): McpLimits {
    return this.config.limits;
  }

  /** Lifecycle state: `new` until initialized, then `ready`, then `retired` and `closed`. */
  get state(): McpConnectionState {
    return this.#state;
  }

  /** Capabilities from `initialize`; `undefined` until then (unknown capabilities are tried). */
  get capabilities(): Readonly<Record<string, unknown>> | undefined {
    return this.#capabilities;
  }

  /** True when `notifications/tools/list_changed` arrived since the last discovery. */
  get catalogStale(): boolean {
    return this.#catalog.stale;
  }

  /** Generation of the current tool catalog; adapters from another generation are stale. */
  get catalogGeneration(): number {
    return this.#catalog.generation;
  }

  /** Calls `initialize` once (with `initializeTimeoutMs`) and records the capabilities. */
  async initialize(): Promise<McpInitializeResult> {
    this.#assertUsable();
    this.#initializing ??= this.#run(
      'initialize',
      this.limits.initializeTimeoutMs,
      (options) => this.session.initialize(options),
      undefined,
    ).then(
      (result) => {
        const capabilities =
          typeof result === 'object' && result !== null ? result.capabilities : undefined;
        this.#capabilities =
          typeof capabilities === 'object' && capabilities !== null
            ? Object.freeze({ ...capabilities })
            : undefined;
        if (this.#state === 'new') this.#state = 'ready';
        return result;
      },
      (error: unknown) => {
        this.#initializing = undefined;
        throw error;
      },
    );
    return this.#initializing;
  }

  /** Subscribes to list changes (once); the registry calls this when it activates the connection. */
  activate(): void {
    this.#assertUsable();
    if (this.#unsubscribe !== undefined || typeof this.session.onToolsListChanged !== 'function') {
      return;
    }
    this.#unsubscribe = this.session.onToolsListChanged(() => this.#onToolsListChanged());
  }

  /** Adds an event listener; returns a function that removes it. */
  onEvent(listener: (event: McpServerEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Takes a lease; the connection is not closed while a lease is held. */
  acquire(): McpConnectionLease {
    this.#assertUsable();
    this.#leases += 1;
    let released = false;
    return {
      connection: this,
      release: () => {
        if (released) return;
        released = true;
        this.#leases -= 1;
        if (this.#leases === 0 && this.#state === 'retired') this.#drained?.();
      },
    };
  }

  /** Takes a lease for an adapter of catalog `generation`; raises if that catalog is stale. */
  acquireForCatalog(generation: number): McpConnectionLease {
    if (this.#state === 'retired' || this.#state === 'closed') {
      if (this.#retireReason === 'replaced') {
        throw new McpCatalogStaleError('MCP server connection was replaced: rediscover its tools', {
          details: { server: this.name, reason: 'replaced' },
        });
      }
      throw new McpLifecycleError('MCP server connection is no longer registered', {
        details: { server: this.name, reason: this.#retireReason ?? 'closed' },
      });
    }
    if (generation !== this.#catalog.generation || this.#catalog.stale) {
      throw new McpCatalogStaleError('MCP tool catalog changed: rediscover its tools', {
        details: { server: this.name, reason: 'catalog_changed' },
      });
    }
    return this.acquire();
  }

  /**
   * Stops new requests. The session is closed (when `ownsSession`) after the last lease is
   * released; the returned promise settles then. Repeated calls share one close.
   */
  retire(reason: McpRetireReason): Promise<void> {
    if (this.#retired === undefined) {
      this.#state = 'retired';
      this.#retireReason = reason;
      this.#unsubscribe?.();
      this.#unsubscribe = undefined;
      if (this.#rediscoverTimer !== undefined) clearTimeout(this.#rediscoverTimer);
      this.#rediscoverTimer = undefined;
      let drained!: () => void;
      const whenDrained = new Promise<void>((resolve) => {
        drained = resolve;
      });
      this.#drained = drained;
      this.#retired = whenDrained.then(() => this.#finishRetire());
      if (this.#leases === 0) drained();
    }
    return this.#retired;
  }

  // ---------------------------------------------------------------- listings

  /** Lists every tool (all pages), skipping malformed ones. */
  async listTools(): Promise<McpListing<McpToolDescriptor>> {
    this.#requireCapability('tools');
    return this.#list(
      'tools',
      (cursor, options) => this.session.listTools(cursor, options),
      parseTool,
    );
  }

  /**
   * Lists every resource (all pages), skipping malformed ones. Throws
   * {@link McpCapabilityError} when the server lacks `resources`.
   */
  async listResources(): Promise<McpListing<McpResourceDescriptor>> {
    this.#requireCapability('resources');
    return this.#list(
      'resources',
      (cursor, options) => this.session.listResources(cursor, options),
      parseResource,
    );
  }

  /**
   * Lists every resource template (all pages), skipping malformed ones. Throws
   * {@link McpCapabilityError} when the server lacks `resources`.
   */
  async listResourceTemplates(): Promise<McpListing<McpResourceTemplateDescriptor>> {
    this.#requireCapability('resources');
    return this.#list(
      'resourceTemplates',
      (cursor, options) => this.session.listResourceTemplates(cursor, options),
      parseResourceTemplate,
    );
  }

  /**
   * Lists every prompt (all pages), skipping malformed ones. Throws {@link McpCapabilityError}
   * when the server lacks `prompts`.
   */
  async listPrompts(): Promise<McpListing<McpPromptDescriptor>> {
    this.#requireCapability('prompts');
    return this.#list(
      'prompts',
      (cursor, options) => this.session.listPrompts(cursor, options),
      parsePrompt,
    );
  }

  /** True when the server's capabilities explicitly lack `capability`. */
  lacks(capability: McpCapability): boolean {
    const capabilities = this.#capabilities;
    if (capabilities === undefined) return false;
    const value = capabilities[capability];
    return value === undefined || value === null;
  }

  /**
   * Lists the tools and records the catalog: same tools as before keeps the generation (and
   * clears a stale mark); different tools start a new generation, making older adapters stale.
   */
  async discoverToolDescriptors(): Promise<{
    /** The well-formed tools, in server order. */
    readonly tools: readonly McpToolDescriptor[];
    /** Tools skipped as malformed. */
    readonly problems: readonly McpListingProblem[];
    /** Catalog generation after this discovery. */
    readonly generation: number;
    /** True when the tools differ from the previous discovery (the generation was bumped). */
    readonly changed: boolean;
  }> {
    let changesBefore = this.#listChanges;
    let listing = await this.listTools();
    // A list_changed during the listing may or may not be reflected in it: list again (a
    // bounded number of times) so a server that announces changes at startup settles.
    for (
      let retry = 0;
      retry < LISTING_RETRIES && this.#listChanges !== changesBefore;
      retry += 1
    ) {
      changesBefore = this.#listChanges;
      listing = await this.listTools();
    }
    const fingerprint = createHash('sha256').update(JSON.stringify(listing.items)).digest('hex');
    const changed = fingerprint !== this.#catalog.fingerprint;
    // A list_changed that arrived while listing keeps the new catalog stale.
    const stale = this.#listChanges !== changesBefore;
    if (changed) {
      this.#catalog = { generation: this.#catalog.generation + 1, fingerprint, stale };
    } else {
      this.#catalog.stale = stale;
    }
    return { ...listing, tools: listing.items, generation: this.#catalog.generation, changed };
  }

  // ---------------------------------------------------------------- requests

  /** Calls a tool by its server-side name and maps the result with this connection's mapper. */
  async callTool(
    name: string,
    args: Readonly<Record<string, unknown>>,
    signal?: AbortSignal,
  ): Promise<ToolResult> {
    this.#requireCapability('tools');
    const raw = await this.#run(
      'tools/call',
      this.limits.requestTimeoutMs,
      (options) => this.session.callTool({ name, arguments: args }, options),
      signal,
    );
    return this.mapper(raw, { server: this.name, tool: name, limits: this.limits });
  }

  /**
   * Reads the resource at `uri` (within `requestTimeoutMs`) and maps its contents, bounded and
   * marked untrusted. Throws {@link McpConfigurationError} for an empty URI.
   */
  async readResource(uri: string, signal?: AbortSignal): Promise<McpResourceReadResult> {
    if (typeof uri !== 'string' || uri.length === 0) {
      throw new McpConfigurationError('MCP resource URI must be a non-empty string');
    }
    this.#requireCapability('resources');
    const raw = await this.#run(
      'resources/read',
      this.limits.requestTimeoutMs,
      (options) => this.session.readResource({ uri }, options),
      signal,
    );
    return mapReadResourceResult(raw, { server: this.name, uri, limits: this.limits });
  }

  /**
   * Fetches prompt `name` with string `args` (within `requestTimeoutMs`) and maps its messages,
   * bounded and marked untrusted. Throws {@link McpConfigurationError} for a bad name or args.
   */
  async getPrompt(
    name: string,
    args?: Readonly<Record<string, string>>,
    signal?: AbortSignal,
  ): Promise<McpPromptResult> {
    if (typeof name !== 'string' || name.length === 0) {
      throw new McpConfigurationError('MCP prompt name must be a non-empty string');
    }
    if (args !== undefined) {
      if (typeof args !== 'object' || args === null || Array.isArray(args)) {
        throw new McpConfigurationError('MCP prompt arguments must be an object of strings');
      }
      for (const value of Object.values(args)) {
        if (typeof value !== 'string') {
          throw new McpConfigurationError('MCP prompt arguments must be an object of strings');
        }
      }
    }
    this.#requireCapability('prompts');
    const raw = await this.#run(
      'prompts/get',
      this.limits.requestTimeoutMs,
      (options) =>
        this.session.getPrompt(args === undefined ? { name } : { name, arguments: args }, options),
      signal,
    );
    return mapGetPromptResult(raw, { server: this.name, prompt: name, limits: this.limits });
  }

  // ---------------------------------------------------------------- internals

  #emit(event: McpServerEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A listener's failure must not break the connection.
      }
    }
  }

  #assertUsable(): void {
    if (this.#state === 'retired' || this.#state === 'closed') {
      throw new McpLifecycleError('MCP server connection is no longer usable', {
        details: { server: this.name, reason: this.#retireReason ?? 'closed' },
      });
    }
  }

  #requireCapability(capability: McpCapability): void {
    if (this.lacks(capability)) {
      throw new McpCapabilityError('MCP server does not offer this capability', {
        details: { server: this.name, capability },
      });
    }
  }

  async #list<T>(
    itemsKey: string,
    fetch: (cursor: string | undefined, options: McpRequestOptions) => Promise<unknown>,
    parseItem: (raw: unknown) => { ok: true; value: T } | { ok: false; reason: string },
  ): Promise<McpListing<T>> {
    const result = await collectPages({
      itemsKey,
      maxPages: this.limits.maxPages,
      maxItems: this.limits.maxItems,
      parseItem,
      fetchPage: (cursor) =>
        this.#run(
          `${itemsKey}/list`,
          this.limits.requestTimeoutMs,
          (options) => fetch(cursor, options),
          undefined,
        ),
    });
    return { items: result.items, problems: result.problems };
  }

  /** Runs one session request under a time limit and the caller's signal; classifies errors. */
  #run<T>(
    operation: string,
    timeoutMs: number,
    request: (options: McpRequestOptions) => Promise<T>,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    const controller = new AbortController();
    const details = { server: this.name, operation };
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      const finish = (action: () => void): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        action();
      };
      const timer = setTimeout(() => {
        controller.abort();
        finish(() =>
          reject(
            new McpTimeoutError('MCP request timed out', { details: { ...details, timeoutMs } }),
          ),
        );
      }, timeoutMs);
      const onAbort = (): void => {
        controller.abort();
        finish(() =>
          reject(
            new McpLifecycleError('MCP request was aborted by the caller', {
              details: { ...details, reason: 'aborted' },
            }),
          ),
        );
      };
      if (signal?.aborted) {
        onAbort();
        return;
      }
      signal?.addEventListener('abort', onAbort, { once: true });
      let pending: Promise<T>;
      try {
        pending = request({ signal: controller.signal, timeoutMs });
      } catch (error) {
        pending = Promise.reject(error);
      }
      pending.then(
        (value) => finish(() => resolve(value)),
        (error: unknown) => finish(() => reject(classifySessionError(error, details))),
      );
    });
  }

  #onToolsListChanged(): void {
    if (this.#state === 'retired' || this.#state === 'closed') return;
    this.#catalog.stale = true;
    this.#listChanges += 1;
    this.#emit({ type: 'tools_list_changed', server: this.name });
    if (!this.config.listChanged.rediscover) return;
    if (this.#rediscovering) {
      this.#rediscoverAgain = true;
      return;
    }
    this.#scheduleRediscovery();
  }

  #scheduleRediscovery(): void {
    const { debounceMs, minIntervalMs } = this.config.listChanged;
    if (this.#rediscoverTimer !== undefined) {
      // Debounce: a notification inside the quiet window restarts it, but never earlier than
      // the rate limit allows.
      clearTimeout(this.#rediscoverTimer);
    }
    const now = Date.now();
    const at = Math.max(now + debounceMs, this.#lastRediscovery + minIntervalMs);
    this.#rediscoverTimer = setTimeout(() => {
      this.#rediscoverTimer = undefined;
      void this.#rediscover();
    }, at - now);
    this.#rediscoverTimer.unref?.();
  }

  async #rediscover(): Promise<void> {
    if (this.#state === 'retired' || this.#state === 'closed') return;
    this.#rediscovering = true;
    this.#rediscoverAgain = false;
    this.#lastRediscovery = Date.now();
    let lease: McpConnectionLease | undefined;
    try {
      lease = this.acquire();
      const result = await this.discoverToolDescriptors();
      this.#emit({
        type: 'tools_rediscovered',
        server: this.name,
        changed: result.changed,
        toolCount: result.tools.length,
        problems: result.problems,
      });
    } catch (error) {
      this.#emit({
        type: 'rediscovery_failed',
        server: this.name,
        code: ToolsError.isInstance(error) ? error.code : 'MCP_TRANSPORT',
      });
    } finally {
      lease?.release();
      this.#rediscovering = false;
      this.#lastRediscovery = Date.now();
    }
    if (this.#rediscoverAgain && this.#retired === undefined) {
      this.#scheduleRediscovery();
    }
  }

  async #finishRetire(): Promise<void> {
    try {
      if (this.config.ownsSession) await this.#closeSession();
    } finally {
      this.#state = 'closed';
    }
  }

  async #closeSession(): Promise<void> {
    const timeoutMs = this.limits.closeTimeoutMs;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      await Promise.race([
        Promise.resolve()
          .then(() => this.session.close())
          .catch((error: unknown) => {
            throw classifySessionError(error, { server: this.name, operation: 'close' });
          }),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new McpTimeoutError('MCP session close timed out', {
                  details: { server: this.name, operation: 'close', timeoutMs },
                }),
              ),
            timeoutMs,
          );
        }),
      ]);
    } catch (error) {
      this.#emit({
        type: 'close_failed',
        server: this.name,
        code: ToolsError.isInstance(error) ? error.code : 'MCP_TRANSPORT',
      });
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * Keeps the session's own typed errors; anything else becomes a transport error that carries
 * only the thrown value's class name (its text may be remote and is never copied).
 */
function classifySessionError(error: unknown, details: JsonObject): ToolsError {
  if (ToolsError.isInstance(error)) return error;
  const errorName =
    error instanceof Error && /^[A-Za-z0-9_]{1,64}$/.test(error.name) ? error.name : 'unknown';
  return new McpTransportError('MCP session request failed', {
    details: { ...details, errorName },
  });
}
