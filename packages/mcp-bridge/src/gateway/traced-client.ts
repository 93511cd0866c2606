import type { AsyncLocalStorage } from 'node:async_hooks';
import { type McpCallOptions, McpClient, type McpClientOptions } from '../client/mcp-client.js';

/** Where an upstream `tools/call` goes instead of `owner`: the caller's own connection. */
export interface CallRoute {
  readonly owner: McpClient;
  readonly client: McpClient;
}

/**
 * A McpClient that adds the gateway's trace context to each upstream `tools/call`. With
 * `credentials`, the call is sent on the caller's own connection (`route`) instead.
 */
export class TracedClient extends McpClient {
  readonly #meta: AsyncLocalStorage<Record<string, string>>;
  readonly #route: AsyncLocalStorage<CallRoute> | undefined;

  constructor(
    options: McpClientOptions,
    meta: AsyncLocalStorage<Record<string, string>>,
    route?: AsyncLocalStorage<CallRoute>,
  ) {
    super(options);
    this.#meta = meta;
    this.#route = route;
  }

  override callTool(
    name: string,
    args?: Readonly<Record<string, unknown>>,
    options: McpCallOptions = {},
  ): ReturnType<McpClient['callTool']> {
    const route = this.#route?.getStore();
    if (route !== undefined && route.owner === this) {
      return route.client.callTool(name, args, options);
    }
    const meta = this.#meta.getStore();
    return super.callTool(
      name,
      args,
      meta === undefined || Object.keys(meta).length === 0 ? options : { ...options, meta },
    );
  }
}
