/** Per-request options a session honours. */
export interface McpRequestOptions {
  /** Aborted when the caller gives up or the request's time limit passes. */
  readonly signal?: AbortSignal;
  /** The time limit the caller enforces, passed on so a session can tell its peer. */
  readonly timeoutMs?: number;
}

/** What `initialize` reports about the server. */
export interface McpInitializeResult {
  /** The server's declared capabilities; `undefined` when unknown. */
  readonly capabilities?: Readonly<Record<string, unknown>>;
  /** The server's self-description from `initialize` (untrusted, for display and logs). */
  readonly serverInfo?: {
    /** The server's implementation name. */
    readonly name?: string;
    /** The server's implementation version. */
    readonly version?: string;
  };
  /** The MCP protocol version the session negotiated, for example `2025-06-18`. */
  readonly protocolVersion?: string;
}

/** Parameters of `tools/call`. */
export interface McpCallToolParams {
  /** The server's name for the tool (not the namespaced registry name). */
  readonly name: string;
  /** The validated argument object sent to the server. */
  readonly arguments: Readonly<Record<string, unknown>>;
}

/** Parameters of `prompts/get`. */
export interface McpGetPromptParams {
  /** The server's name for the prompt. */
  readonly name: string;
  /** Values of the prompt's arguments, by argument name (MCP prompt arguments are strings). */
  readonly arguments?: Readonly<Record<string, string>>;
}

/**
 * The minimal MCP session the adapter needs. The host creates and connects it (transport,
 * credentials and process environment belong to the host); `@toolfence/mcp-bridge` supplies
 * hardened sessions through the same interface.
 *
 * Every `list*`, `callTool`, `readResource` and `getPrompt` returns the server's **raw** result
 * object, unparsed: limits are checked on it before anything is mapped, and a malformed item
 * is reported and skipped rather than failing a whole page.
 *
 * Errors: a session should throw {@link McpRemoteError} for a JSON-RPC error answer,
 * {@link McpTimeoutError} for a timeout and {@link McpTransportError} for anything below the
 * protocol. Any other thrown value is reported as a transport error, without its text.
 */
export interface McpSession {
  /** Returns the server's capabilities (an already connected session just reports them). */
  initialize(options?: McpRequestOptions): Promise<McpInitializeResult>;
  /** Sends `tools/list` for the page at `cursor` (first page if none); resolves the raw result. */
  listTools(cursor: string | undefined, options?: McpRequestOptions): Promise<unknown>;
  /** Sends `resources/list` for the page at `cursor`; resolves with the raw result. */
  listResources(cursor: string | undefined, options?: McpRequestOptions): Promise<unknown>;
  /** Sends `resources/templates/list` for the page at `cursor`; resolves with the raw result. */
  listResourceTemplates(cursor: string | undefined, options?: McpRequestOptions): Promise<unknown>;
  /** Sends `prompts/list` for the page at `cursor`; resolves with the raw result. */
  listPrompts(cursor: string | undefined, options?: McpRequestOptions): Promise<unknown>;
  /** Sends `tools/call`; resolves with the raw result (an `isError` result is not a throw). */
  callTool(params: McpCallToolParams, options?: McpRequestOptions): Promise<unknown>;
  /** Sends `resources/read` for `params.uri`; resolves with the raw result. */
  readResource(params: { readonly uri: string }, options?: McpRequestOptions): Promise<unknown>;
  /** Sends `prompts/get`; resolves with the raw result. */
  getPrompt(params: McpGetPromptParams, options?: McpRequestOptions): Promise<unknown>;
  /** Releases the session. Called only when the connection owns it (`ownsSession`). */
  close(): Promise<void>;
  /**
   * Subscribes to `notifications/tools/list_changed`; returns an unsubscribe function.
   * Optional: without it, list changes are not noticed.
   */
  onToolsListChanged?(listener: () => void): () => void;
}
