import { z } from 'zod';
import { ToolsError } from '../tools-error.js';
import {
  McpConfigurationError,
  McpProtocolError,
  McpRemoteError,
  McpTimeoutError,
  McpTransportError,
} from './errors.js';
import type {
  McpCallToolParams,
  McpGetPromptParams,
  McpInitializeResult,
  McpRequestOptions,
  McpSession,
} from './mcp-session.js';

/**
 * The part of the SDK's `Client` the adapter uses: `@modelcontextprotocol/sdk/client/index.js`
 * (1.x) or `@modelcontextprotocol/client` (2.x, either protocol era). Typed structurally, so this
 * module imports nothing from either SDK: it works with whatever copy the host connected with.
 * `setNotificationHandler` takes a schema in 1.x and a method name in 2.x; the adapter tries
 * both.
 */
export interface McpSdkClient {
  request(
    request: { method: string; params?: Record<string, unknown> },
    resultSchema: unknown,
    options?: { signal?: AbortSignal; timeout?: number },
  ): Promise<unknown>;
  getServerCapabilities(): object | undefined;
  getServerVersion(): { name: string; version: string } | undefined;
  setNotificationHandler(
    schemaOrMethod: unknown,
    handler: (notification: unknown) => void | Promise<void>,
  ): void;
}

/** Any JSON-RPC result object; toolfence checks and maps the payload itself. */
const LOOSE_RESULT = z.looseObject({});

const TOOLS_LIST_CHANGED = z.looseObject({
  method: z.literal('notifications/tools/list_changed'),
  params: z.optional(z.looseObject({})),
});

/** JSON-RPC codes the SDK 1.x uses for its own failures. */
const REQUEST_TIMEOUT = -32001;
const CONNECTION_CLOSED = -32000;
/** The string codes SDK 2.x's `SdkError` uses for the same failures. */
const SDK_REQUEST_TIMEOUT = 'REQUEST_TIMEOUT';
const SDK_CONNECTION_CLOSED = 'CONNECTION_CLOSED';
const SDK_NOT_CONNECTED = 'NOT_CONNECTED';

/** Options of {@link McpSdkSessionAdapter}. */
export interface McpSdkSessionAdapterOptions {
  /**
   * Runs when the session is closed. By default the host's client is **not** closed: pass
   * `onClose: () => client.close()` to hand its ownership over.
   */
  readonly onClose?: () => void | Promise<void>;
}

/**
 * An {@link McpSession} over an already connected SDK `Client`: `@modelcontextprotocol/sdk` 1.x
 * or `@modelcontextprotocol/client` 2.x (legacy or 2026-07-28 connection).
 * Import it from `@toolfence/tools/mcp-sdk`. The SDK is an optional peer dependency: this module
 * types the client structurally and imports nothing from it, so it works with the host's copy.
 *
 * Requests go through `client.request` with the SDK's loose result schema, so raw payloads
 * reach toolfence's own limit checks and per-item parsing (the SDK's `listTools` would reject a
 * whole page for one malformed tool). A JSON-RPC error becomes `McpRemoteError` with only its
 * numeric code; the SDK's timeout code becomes `McpTimeoutError`.
 */
export class McpSdkSessionAdapter implements McpSession {
  readonly #client: McpSdkClient;
  readonly #onClose: (() => void | Promise<void>) | undefined;
  readonly #listeners = new Set<() => void>();
  #handlerInstalled = false;
  #closed = false;

  constructor(client: McpSdkClient, options: McpSdkSessionAdapterOptions = {}) {
    if (typeof client !== 'object' || client === null || typeof client.request !== 'function') {
      throw new McpConfigurationError('McpSdkSessionAdapter needs a connected SDK Client');
    }
    if (options.onClose !== undefined && typeof options.onClose !== 'function') {
      throw new McpConfigurationError('McpSdkSessionAdapter onClose must be a function');
    }
    this.#client = client;
    this.#onClose = options.onClose;
  }

  async initialize(): Promise<McpInitializeResult> {
    const capabilities = this.#client.getServerCapabilities();
    const version = this.#client.getServerVersion();
    if (capabilities === undefined) {
      throw new McpTransportError('SDK client is not connected', {
        details: { operation: 'initialize' },
      });
    }
    return {
      capabilities: { ...(capabilities as Record<string, unknown>) },
      ...(version === undefined
        ? {}
        : { serverInfo: { name: version.name, version: version.version } }),
    };
  }

  listTools(cursor: string | undefined, options?: McpRequestOptions): Promise<unknown> {
    return this.#request('tools/list', cursor === undefined ? {} : { cursor }, options);
  }

  listResources(cursor: string | undefined, options?: McpRequestOptions): Promise<unknown> {
    return this.#request('resources/list', cursor === undefined ? {} : { cursor }, options);
  }

  listResourceTemplates(cursor: string | undefined, options?: McpRequestOptions): Promise<unknown> {
    return this.#request(
      'resources/templates/list',
      cursor === undefined ? {} : { cursor },
      options,
    );
  }

  listPrompts(cursor: string | undefined, options?: McpRequestOptions): Promise<unknown> {
    return this.#request('prompts/list', cursor === undefined ? {} : { cursor }, options);
  }

  callTool(params: McpCallToolParams, options?: McpRequestOptions): Promise<unknown> {
    return this.#request(
      'tools/call',
      { name: params.name, arguments: { ...params.arguments } },
      options,
    );
  }

  readResource(params: { readonly uri: string }, options?: McpRequestOptions): Promise<unknown> {
    return this.#request('resources/read', { uri: params.uri }, options);
  }

  getPrompt(params: McpGetPromptParams, options?: McpRequestOptions): Promise<unknown> {
    return this.#request(
      'prompts/get',
      params.arguments === undefined
        ? { name: params.name }
        : { name: params.name, arguments: { ...params.arguments } },
      options,
    );
  }

  /**
   * Installs a handler for `notifications/tools/list_changed` on the client (the first time a
   * listener subscribes). It replaces any handler the host set for that one notification.
   */
  onToolsListChanged(listener: () => void): () => void {
    this.#listeners.add(listener);
    if (!this.#handlerInstalled) {
      this.#handlerInstalled = true;
      const notify = (): void => {
        for (const current of [...this.#listeners]) current();
      };
      try {
        // SDK 1.x: a zod schema with the method literal.
        this.#client.setNotificationHandler(TOOLS_LIST_CHANGED, notify);
      } catch {
        // SDK 2.x: the spec method name (it refuses a schema object there).
        this.#client.setNotificationHandler('notifications/tools/list_changed', notify);
      }
    }
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** Runs `onClose` once; without it the host's client stays open. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    await this.#onClose?.();
  }

  async #request(
    method: string,
    params: Record<string, unknown>,
    options: McpRequestOptions | undefined,
  ): Promise<unknown> {
    try {
      return await this.#client.request({ method, params }, LOOSE_RESULT, {
        ...(options?.signal === undefined ? {} : { signal: options.signal }),
        ...(options?.timeoutMs === undefined ? {} : { timeout: options.timeoutMs }),
      });
    } catch (error) {
      throw toSessionError(error, method);
    }
  }
}

function toSessionError(error: unknown, method: string): ToolsError {
  if (ToolsError.isInstance(error)) return error;
  const details = { operation: method };
  // The SDK's McpError (any copy of it): an Error with an integer JSON-RPC code.
  const code = error instanceof Error ? (error as { code?: unknown }).code : undefined;
  // SDK 2.x: SdkError carries a string code for the SDK's own failures.
  if (code === SDK_REQUEST_TIMEOUT)
    return new McpTimeoutError('MCP request timed out', { details });
  if (code === SDK_CONNECTION_CLOSED || code === SDK_NOT_CONNECTED) {
    return new McpTransportError('MCP connection closed', { details });
  }
  if (typeof code === 'number' && Number.isSafeInteger(code)) {
    if (code === REQUEST_TIMEOUT) return new McpTimeoutError('MCP request timed out', { details });
    if (code === CONNECTION_CLOSED) {
      return new McpTransportError('MCP connection closed', { details });
    }
    return new McpRemoteError('MCP server answered with an error', { remoteCode: code, details });
  }
  if (error instanceof Error && error.name === 'ZodError') {
    return new McpProtocolError('MCP server answered with a malformed result', { details });
  }
  return new McpTransportError('MCP session request failed', {
    details: {
      ...details,
      errorName:
        error instanceof Error && /^[A-Za-z0-9_]{1,64}$/.test(error.name) ? error.name : 'unknown',
    },
  });
}
