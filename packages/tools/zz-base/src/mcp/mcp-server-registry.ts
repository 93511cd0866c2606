import { checkOptionKeys } from '../registry/option-keys.js';
import type {
  McpPromptDescriptor,
  McpResourceDescriptor,
  McpResourceTemplateDescriptor,
} from './descriptors.js';
import { McpConfigurationError, McpLifecycleError } from './errors.js';
import {
  type McpConnectionLease,
  type McpListing,
  McpServerConnection,
  type McpServerEvent,
} from './mcp-server-connection.js';
import { McpToolAdapter } from './mcp-tool-adapter.js';
import type { McpListingProblem } from './pagination.js';
import type { McpPromptResult, McpResourceReadResult } from './result-mapping.js';
import { assignMcpToolNames } from './tool-name.js';

/** Tools discovered from one server: adapters ready for a `ToolRegistry`, and skipped items. */
export interface McpToolDiscovery {
  /** Name of the server the tools came from. */
  readonly server: string;
  /** One adapter per valid tool, named `mcp__<namespace>__<tool>`, ready to register. */
  readonly tools: readonly McpToolAdapter[];
  /** Tools skipped as malformed. */
  readonly problems: readonly McpListingProblem[];
  /** Catalog generation the adapters belong to. */
  readonly generation: number;
}

/** Everything a server offers, listed under one lease (so all from the same session). */
export interface McpCatalog extends McpToolDiscovery {
  /** The server's resources (data, never tools); empty when it lacks `resources`. */
  readonly resources: readonly McpResourceDescriptor[];
  /** The server's resource templates; empty when it lacks `resources`. */
  readonly resourceTemplates: readonly McpResourceTemplateDescriptor[];
  /** The server's prompts (data for the host); empty when it lacks `prompts`. */
  readonly prompts: readonly McpPromptDescriptor[];
}

/** Options of {@link McpServerRegistry}. */
export interface McpServerRegistryOptions {
  /** Receives list-change, rediscovery and close events from every registered server. */
  readonly onEvent?: (event: McpServerEvent) => void;
}

interface Entry {
  readonly connection: McpServerConnection;
  readonly unsubscribe: () => void;
}

/**
 * The MCP servers an agent uses, by name. Each request takes a lease on the server's current
 * connection, so a replacement never changes what an in-flight request talks to; the old
 * session is closed (when the connection owns it) after its last lease ends.
 */
export class McpServerRegistry {
  readonly #entries = new Map<string, Entry>();
  /** Names reserved by a `register` or `replace` still initializing. */
  readonly #pending = new Set<string>();
  readonly #onEvent: ((event: McpServerEvent) => void) | undefined;
  #closed: Promise<void> | undefined;

  /** Creates an empty registry; throws {@link McpConfigurationError} for a bad `onEvent`. */
  constructor(options: McpServerRegistryOptions = {}) {
    checkOptionKeys(options, ['onEvent'], 'McpServerRegistry');
    if (options.onEvent !== undefined && typeof options.onEvent !== 'function') {
      throw new McpConfigurationError('McpServerRegistry onEvent must be a function');
    }
    this.#onEvent = options.onEvent;
  }

  /** Registered server names, sorted. */
  names(): string[] {
    return [...this.#entries.keys()].sort();
  }

  /** The current connection of `name`. */
  get(name: string): McpServerConnection {
    return this.#entry(name).connection;
  }

  /**
   * Adds a server. With `initializeOnStart` (the default), `initialize` runs first; if it
   * fails, nothing is registered (and an owned session is closed).
   */
  async register(connection: McpServerConnection): Promise<void> {
    this.#assertOpen();
    this.#assertConnection(connection);
    const { name } = connection.config;
    if (this.#entries.has(name) || this.#pending.has(name)) {
      throw new McpLifecycleError('MCP server name is already registered', {
        details: { server: name },
      });
    }
    this.#assertNamespaceFree(connection, undefined);
    this.#pending.add(name);
    try {
      await this.#start(connection);
      this.#assertOpen();
      this.#install(connection);
    } catch (error) {
      await connection.retire('closed').catch(() => undefined);
      throw error;
    } finally {
      this.#pending.delete(name);
    }
  }

  /**
   * Replaces the connection of `name` (hot replacement). The new connection is initialized
   * first; if that fails, it is closed and the old one stays. Otherwise the swap is atomic:
   * adapters discovered from the old connection raise `McpCatalogStaleError` on their next
   * call, requests already holding the old lease finish on the old session, which is closed
   * (when owned) after the last of them. Resolves when the old connection has retired; a close
   * error reaches the caller after the swap is committed (inspect state, do not blindly retry).
   */
  async replace(name: string, connection: McpServerConnection): Promise<void> {
    this.#assertOpen();
    this.#assertConnection(connection);
    if (connection.config.name !== name) {
      throw new McpConfigurationError('Replacement connection must have the same server name', {
        details: { server: name },
      });
    }
    this.#entry(name);
    if (this.#pending.has(name)) {
      throw new McpLifecycleError('MCP server is already being replaced', {
        details: { server: name },
      });
    }
    this.#assertNamespaceFree(connection, name);
    this.#pending.add(name);
    let old: Entry;
    try {
      await this.#start(connection);
      this.#assertOpen();
      old = this.#entry(name);
    } catch (error) {
      await connection.retire('closed').catch(() => undefined);
      throw error;
    } finally {
      this.#pending.delete(name);
    }
    this.#install(connection);
    try {
      await old.connection.retire('replaced');
    } finally {
      old.unsubscribe();
    }
  }

  /** Removes a server; its adapters raise a lifecycle error afterwards. Resolves once retired. */
  async unregister(name: string): Promise<void> {
    const entry = this.#entry(name);
    this.#entries.delete(name);
    try {
      await entry.connection.retire('unregistered');
    } finally {
      entry.unsubscribe();
    }
  }

  /**
   * Lists the server's tools and returns one {@link McpToolAdapter} per valid tool, named
   * `mcp__<namespace>__<tool>`. Malformed tools are skipped and reported in `problems`.
   * Raises `McpToolNameCollisionError` when two tools map to one name.
   */
  async discoverTools(name: string): Promise<McpToolDiscovery> {
    return this.#withLease(name, (lease) => discover(lease.connection));
  }

  /**
   * Tools, resources, resource templates and prompts in one lease. A capability the server
   * explicitly lacks gives an empty list here (the single-listing methods raise instead).
   */
  async catalog(name: string): Promise<McpCatalog> {
    return this.#withLease(name, async ({ connection }) => {
      const tools = connection.lacks('tools')
        ? { server: name, tools: [], problems: [], generation: connection.catalogGeneration }
        : await discover(connection);
      const empty = { items: [], problems: [] };
      const resources = connection.lacks('resources') ? empty : await connection.listResources();
      const templates = connection.lacks('resources')
        ? empty
        : await connection.listResourceTemplates();
      const prompts = connection.lacks('prompts') ? empty : await connection.listPrompts();
      return {
        ...tools,
        resources: resources.items,
        resourceTemplates: templates.items,
        prompts: prompts.items,
        problems: [
          ...tools.problems,
          ...resources.problems,
          ...templates.problems,
          ...prompts.problems,
        ],
      };
    });
  }

  /**
   * Lists the resources of server `name` (all pages) under one lease. Throws
   * {@link McpLifecycleError} for an unregistered server, {@link McpCapabilityError} when the
   * server lacks the capability.
   */
  async listResources(name: string): Promise<McpListing<McpResourceDescriptor>> {
    return this.#withLease(name, ({ connection }) => connection.listResources());
  }

  /**
   * Lists the resource templates of server `name` (all pages) under one lease. Throws
   * {@link McpLifecycleError} for an unregistered server, {@link McpCapabilityError} when the
   * server lacks the capability.
   */
  async listResourceTemplates(name: string): Promise<McpListing<McpResourceTemplateDescriptor>> {
    return this.#withLease(name, ({ connection }) => connection.listResourceTemplates());
  }

  /** Reads a resource (bounded); resources are data and never become tools. */
  async readResource(
    name: string,
    uri: string,
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<McpResourceReadResult> {
    return this.#withLease(name, ({ connection }) => connection.readResource(uri, options.signal));
  }

  /**
   * Lists the prompts of server `name` (all pages) under one lease. Throws
   * {@link McpLifecycleError} for an unregistered server, {@link McpCapabilityError} when the
   * server lacks the capability.
   */
  async listPrompts(name: string): Promise<McpListing<McpPromptDescriptor>> {
    return this.#withLease(name, ({ connection }) => connection.listPrompts());
  }

  /** Fetches a prompt (bounded, marked untrusted); it is never turned into instructions. */
  async getPrompt(
    name: string,
    prompt: string,
    args?: Readonly<Record<string, string>>,
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<McpPromptResult> {
    return this.#withLease(name, ({ connection }) =>
      connection.getPrompt(prompt, args, options.signal),
    );
  }

  /**
   * Stops new requests at once, waits for in-flight ones, and retires every connection exactly
   * once. Repeated calls share one close; the first close error (if any) is raised.
   */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      const entries = [...this.#entries.values()];
      this.#entries.clear();
      const results = await Promise.allSettled(
        entries.map((entry) => entry.connection.retire('closed')),
      );
      for (const entry of entries) entry.unsubscribe();
      const failure = results.find((result) => result.status === 'rejected');
      if (failure !== undefined) throw (failure as PromiseRejectedResult).reason;
    })();
    return this.#closed;
  }

  // ---------------------------------------------------------------- internals

  #assertOpen(): void {
    if (this.#closed !== undefined) {
      throw new McpLifecycleError('McpServerRegistry is closed');
    }
  }

  #assertConnection(connection: McpServerConnection): void {
    if (!(connection instanceof McpServerConnection)) {
      throw new McpConfigurationError('Expected an McpServerConnection');
    }
    if (connection.state !== 'new' && connection.state !== 'ready') {
      throw new McpLifecycleError('MCP server connection is no longer usable', {
        details: { server: connection.name },
      });
    }
    for (const entry of this.#entries.values()) {
      if (entry.connection === connection) {
        throw new McpLifecycleError('MCP server connection is already registered', {
          details: { server: connection.name },
        });
      }
    }
  }

  #assertNamespaceFree(connection: McpServerConnection, replacing: string | undefined): void {
    for (const [name, entry] of this.#entries) {
      if (name === replacing) continue;
      if (entry.connection.config.toolNamespace === connection.config.toolNamespace) {
        throw new McpConfigurationError('MCP tool namespace is already used by another server', {
          details: { server: connection.name, namespace: connection.config.toolNamespace },
        });
      }
    }
  }

  async #start(connection: McpServerConnection): Promise<void> {
    if (connection.config.initializeOnStart) await connection.initialize();
  }

  #install(connection: McpServerConnection): void {
    const unsubscribe = connection.onEvent((event) => {
      try {
        this.#onEvent?.(event);
      } catch {
        // The host's listener must not break the connection.
      }
    });
    this.#entries.set(connection.name, { connection, unsubscribe });
    connection.activate();
  }

  #entry(name: string): Entry {
    if (typeof name !== 'string') {
      throw new McpConfigurationError('MCP server name must be a string');
    }
    const entry = this.#entries.get(name);
    if (entry === undefined) {
      throw new McpLifecycleError('MCP server is not registered', {
        details: { reason: this.#closed === undefined ? 'unknown_server' : 'registry_closed' },
      });
    }
    return entry;
  }

  async #withLease<T>(name: string, run: (lease: McpConnectionLease) => Promise<T>): Promise<T> {
    this.#assertOpen();
    const lease = this.#entry(name).connection.acquire();
    try {
      return await run(lease);
    } finally {
      lease.release();
    }
  }
}

async function discover(connection: McpServerConnection): Promise<McpToolDiscovery> {
  const { tools, problems, generation } = await connection.discoverToolDescriptors();
  const names = assignMcpToolNames(
    connection.config.toolNamespace,
    tools.map((tool) => tool.name),
  );
  return {
    server: connection.name,
    tools: tools.map(
      (tool) => new McpToolAdapter(connection, tool, names.get(tool.name) as string, generation),
    ),
    problems,
    generation,
  };
}
