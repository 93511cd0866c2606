import type { AsyncLocalStorage } from 'node:async_hooks';
import { type McpCallOptions, McpClient, type McpClientOptions } from '../client/mcp-client.js';

/** A McpClient that adds the gateway's trace context to each upstream `tools/call`. */
export class TracedClient extends McpClient {
  readonly #meta: AsyncLocalStorage<Record<string, string>>;

  constructor(options: McpClientOptions, meta: AsyncLocalStorage<Record<string, string>>) {
    super(options);
    this.#meta = meta;
  }

  override callTool(
    name: string,
    args?: Readonly<Record<string, unknown>>,
    options: McpCallOptions = {},
  ): ReturnType<McpClient['callTool']> {
    const meta = this.#meta.getStore();
    return super.callTool(
      name,
      args,
      meta === undefined || Object.keys(meta).length === 0 ? options : { ...options, meta },
    );
  }
}
