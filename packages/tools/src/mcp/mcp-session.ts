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
  readonly serverInfo?: { readonly name?: string; readonly version?: string };
  readonly protocolVersion?: string;
}

/** Parameters of `tools/call`. */
export interface McpCallToolParams {
  readonly name: string;
  readonly arguments: Readonly<Record<string, unknown>>;
}

/** Parameters of `prompts/get`. */
export interface McpGetPromptParams {
  readonly name: string;
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
  listTools(cursor: string | undefined, options?: McpRequestOptions): Promise<unknown>;
  listResources(cursor: string | undefined, options?: McpRequestOptions): Promise<unknown>;
  listResourceTemplates(cursor: string | undefined, options?: McpRequestOptions): Promise<unknown>;
  listPrompts(cursor: string | undefined, options?: McpRequestOptions): Promise<unknown>;
  callTool(params: McpCallToolParams, options?: McpRequestOptions): Promise<unknown>;
  readResource(params: { readonly uri: string }, options?: McpRequestOptions): Promise<unknown>;
  getPrompt(params: McpGetPromptParams, options?: McpRequestOptions): Promise<unknown>;
  /** Releases the session. Called only when the connection owns it (`ownsSession`). */
  close(): Promise<void>;
  /**
   * Subscribes to `notifications/tools/list_changed`; returns an unsubscribe function.
   * Optional: without it, list changes are not noticed.
   */
  onToolsListChanged?(listener: () => void): () => void;
}
