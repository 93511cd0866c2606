import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  LATEST_PROTOCOL_VERSION,
  ListToolsRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS,
} from '@modelcontextprotocol/sdk/types.js';
import {
  type ApprovalRequest,
  type AuthorizationRequest,
  type Authorizer,
  createToolContext,
  type JsonObject,
  type PermissionDecision,
  type Tool,
  type ToolContext,
  ToolRegistry,
  type ToolResult,
  ToolsError,
} from '@toolfence/tools';
import { type BridgedTool, bridgeTools } from '../bridge/bridge-tools.js';
import { McpClient, type McpClientOptions } from '../client/mcp-client.js';
import type { McpBridgeLogger } from '../transport/logger.js';
import { VERSION } from '../version.js';
import type { AuditEntry, AuditLog } from './audit-log.js';
import { canonicalJson, digestOf } from './canonical-json.js';
import {
  DEFAULT_APPROVAL_TIMEOUT_MS,
  DEFAULT_MAX_CONCURRENT_CALLS,
  type GatewayConfig,
  type GatewayServerConfig,
} from './gateway-config.js';
import { type GatewaySpan, GatewayTracer } from './gateway-tracing.js';
import { escapeInvisible, type PinReason, type PinStore } from './pin-store.js';

/** Options of {@link McpGateway}. */
export interface McpGatewayOptions {
  /** The checked config (see `parseGatewayConfig`). */
  readonly config: GatewayConfig;
  /** Decides every call: allow, deny or ask (for example a `RiskPolicy`). */
  readonly authorizer: Authorizer;
  /** The pin lock file. */
  readonly pins: PinStore;
  /** Where each call is recorded. */
  readonly audit: AuditLog;
  /** Enforce nothing; log what each decision would have been. Default the config's `observe`. */
  readonly observe?: boolean;
  /** Extra client options per upstream (for example `allowNonPublic` for loopback servers). */
  readonly clientOptions?: (name: string, server: GatewayServerConfig) => Partial<McpClientOptions>;
  /**
   * OpenTelemetry spans (`tools/call <tool>`, MCP semantic conventions) when `@opentelemetry/api`
   * is installed; nothing is emitted without it. Default true.
   */
  readonly tracing?: boolean;
  /** Diagnostics (upstream failures, hidden tools). Never receives arguments or results. */
  readonly logger?: McpBridgeLogger;
}

/** What the gateway knows about one upstream after start. */
export interface GatewayUpstreamStatus {
  /** The server's name in the config. */
  readonly name: string;
  /** `ready`, or `failed` (its tools are absent; the others work). */
  readonly state: 'ready' | 'failed';
  /** Offered tool names. */
  readonly tools: readonly string[];
  /** Remote names hidden until `toolfence-mcp pin --accept`, with the reasons. */
  readonly hidden: Readonly<Record<string, readonly PinReason[]>>;
  /** For a failed upstream: the error code. */
  readonly error?: string;
}

/** What {@link McpGateway.reload} applies. */
export interface GatewayReload {
  /** The new checked config. */
  readonly config: GatewayConfig;
  /** The pin store read again (after `toolfence-mcp pin --accept`). Default: the current one. */
  readonly pins?: PinStore;
  /** A new authorizer (the policy file read again). Default: the current one. */
  readonly authorizer?: Authorizer;
}

interface Downstream {
  readonly server: Server;
  protocolVersion: string | undefined;
}

interface Upstream {
  readonly name: string;
  readonly server: GatewayServerConfig;
  readonly concurrency: number;
  readonly client: McpClient;
  live: number;
  retired: boolean;
}

interface Offered {
  readonly server: string;
  readonly tool: BridgedTool;
  readonly pin: string;
  readonly flagged: readonly string[];
}

const APPROVAL_SCHEMA = {
  type: 'object',
  properties: {
    approve: { type: 'boolean', title: 'Run this call?', description: 'Approve this one call' },
  },
  required: ['approve'],
} as const;

/** Identity of an upstream as pinned: its command line or its URL. */
export function serverIdentity(server: GatewayServerConfig): string {
  return server.url !== undefined
    ? `url:${server.url}`
    : `command:${JSON.stringify([server.command, ...(server.args ?? [])])}`;
}

function preview(value: unknown, limit = 2_000): string {
  const text = escapeInvisible(JSON.stringify(value, null, 2) ?? 'null');
  return text.length > limit
    ? `${text.slice(0, limit)}… (${text.length - limit} more characters)`
    : text;
}

/**
 * The policy-enforcing MCP gateway behind `toolfence-mcp serve`: one downstream MCP server (for
 * the user's client) in front of the configured upstream servers. Every upstream is reached
 * through `McpClient` and `bridgeTools`; every offered tool is pinned; every call passes one
 * `ToolRegistry` (validation, the authorizer, approval asked of the downstream user, audit).
 */
export class McpGateway {
  readonly #observe: boolean;
  #options: McpGatewayOptions;
  #authorizer: Authorizer;
  #pins: PinStore;
  #upstreams = new Map<string, Upstream>();
  readonly #open = new Set<Upstream>();
  #offered = new Map<string, Offered>();
  #status: readonly GatewayUpstreamStatus[] = [];
  #reloading: Promise<void> = Promise.resolve();
  #closed = false;
  #tracer: GatewayTracer = GatewayTracer.disabled();
  readonly #spans = new WeakMap<object, GatewaySpan>();
  readonly #decisions = new WeakMap<object, PermissionDecision>();
  readonly #approvedBy = new WeakMap<object, 'user'>();
  readonly #registry: ToolRegistry;
  readonly #downstreams = new Set<Downstream>();
  readonly #callers = new WeakMap<object, Downstream>();

  /** Builds the gateway; nothing connects until {@link McpGateway.start}. */
  constructor(options: McpGatewayOptions) {
    this.#options = options;
    this.#authorizer = options.authorizer;
    this.#pins = options.pins;
    this.#observe = options.observe ?? options.config.gateway.observe ?? false;
    const decisions = this.#decisions;
    const observe = this.#observe;
    const current = (): Authorizer => this.#authorizer;
    const recording: Authorizer = {
      async authorize(request: AuthorizationRequest): Promise<PermissionDecision> {
        const decision = await current().authorize(request);
        decisions.set(request.context, decision);
        return observe ? { verdict: 'allow', reason: 'observe' } : decision;
      },
    };
    this.#registry = new ToolRegistry({
      authorizer: recording,
      approval: (request) => this.#ask(request),
      approvalTimeoutMs: options.config.gateway.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS,
    });
  }

  // One SDK server per downstream connection (stdio has one; each HTTP session has its own).
  #newServer(): Downstream {
    const server = new Server(
      { name: 'toolfence-gateway', version: VERSION },
      {
        capabilities: { tools: { listChanged: true } },
        instructions:
          'Tools from several MCP servers, named <server>__<tool>. Every call is checked by policy; some ask the user first.',
      },
    );
    const downstream: Downstream = { server, protocolVersion: undefined };
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.#listed() }));
    server.setRequestHandler(CallToolRequestSchema, (request) =>
      this.#call(
        downstream,
        request.params.name,
        request.params.arguments ?? {},
        request.params._meta,
      ),
    );
    return downstream;
  }

  /** The upstreams after the last start or reload: ready or failed, offered and hidden tools. */
  get upstreams(): readonly GatewayUpstreamStatus[] {
    return this.#status;
  }

  /** Names offered downstream, sorted. */
  toolNames(): string[] {
    return [...this.#offered.keys()].sort();
  }

  /** Upstream clients still open, retired ones waiting for their last call included. */
  get openUpstreams(): number {
    return this.#open.size;
  }

  /**
   * Connects every upstream, lists and pins its tools, and registers the visible ones. An upstream
   * that fails is reported (`upstreams`, the logger) and its tools are absent.
   */
  async start(): Promise<void> {
    this.#tracer = await GatewayTracer.load(this.#options.tracing ?? true, VERSION);
    await this.reload({ config: this.#options.config, pins: this.#options.pins });
  }

  /**
   * Applies a new config (and pin store, and authorizer) without dropping calls in flight: an
   * unchanged upstream keeps its connection and is listed again; a new or changed one is started;
   * the pins are checked; then the registry swaps the tools in one step (`registerAll` with
   * `replace`, `unregister` for the ones gone). Calls in flight finish on the tool instance they
   * started on, and a retired upstream is closed only after its last call ends. The downstream
   * client is sent `notifications/tools/list_changed` after the swap. Reloads run one at a time.
   */
  reload(next: GatewayReload): Promise<void> {
    const run = this.#reloading.then(() => this.#reload(next));
    this.#reloading = run.catch(() => undefined);
    return run;
  }

  async #reload(next: GatewayReload): Promise<void> {
    if (this.#closed) return;
    const pins = next.pins ?? this.#pins;
    this.#pins = pins;
    if (next.authorizer !== undefined) this.#authorizer = next.authorizer;
    let pinsChanged = false;
    const tools: Tool[] = [];
    const offeredNext = new Map<string, Offered>();
    const status: GatewayUpstreamStatus[] = [];
    const upstreamsNext = new Map<string, Upstream>();
    for (const [name, server] of Object.entries(next.config.mcpServers)) {
      const previous = this.#upstreams.get(name);
      const concurrency = next.config.gateway.maxConcurrentCalls ?? DEFAULT_MAX_CONCURRENT_CALLS;
      const reused =
        previous !== undefined &&
        previous.concurrency === concurrency &&
        canonicalJson(previous.server) === canonicalJson(server);
      const upstream = reused ? previous : this.#newUpstream(name, server, concurrency);
      try {
        const listing = await upstream.client.tools({ refresh: reused });
        const review = pins.review(name, serverIdentity(server), listing);
        pinsChanged ||= review.changed;
        const bridged = await bridgeTools(upstream.client, {
          prefix: server.namespace as string,
          ...(server.allow === undefined ? {} : { allow: server.allow }),
          deny: [...(server.deny ?? []), ...review.hidden.keys()],
        });
        const offered: string[] = [];
        for (const tool of bridged) {
          if (!review.visible.has(tool.remoteName)) continue;
          const pin = pins.pinOf(name, tool.remoteName);
          const wrapped = this.#tracked(tool, upstream);
          offeredNext.set(tool.spec.name, {
            server: name,
            tool: wrapped,
            pin: pin?.sha256 ?? 'unpinned',
            flagged: pin?.flagged ?? [],
          });
          tools.push(wrapped);
          offered.push(tool.spec.name);
        }
        for (const [remote, reasons] of review.hidden) {
          this.#options.logger?.warn?.('A tool is hidden until it is accepted again', {
            server: name,
            tool: remote,
            reasons,
          });
        }
        upstreamsNext.set(name, upstream);
        status.push({
          name,
          state: 'ready',
          tools: offered.sort(),
          hidden: Object.fromEntries(review.hidden),
        });
      } catch (error) {
        const code = ToolsError.isInstance(error)
          ? error.code
          : ((error as { code?: unknown }).code as string | undefined);
        this.#options.logger?.error?.(
          'An upstream MCP server failed to start; its tools are absent',
          { server: name, code: typeof code === 'string' ? code : 'unknown' },
        );
        status.push({
          name,
          state: 'failed',
          tools: [],
          hidden: {},
          error: typeof code === 'string' ? code : 'unknown',
        });
        if (!reused) this.#retire(upstream);
      }
    }
    if (pinsChanged) await pins.save();
    const before = this.#registry.names();
    await this.#registry.registerAll(tools, { replace: true });
    this.#offered = offeredNext;
    for (const name of before) {
      if (!offeredNext.has(name)) await this.#registry.unregister(name).catch(() => undefined);
    }
    for (const [name, upstream] of this.#upstreams) {
      if (upstreamsNext.get(name) !== upstream) this.#retire(upstream);
    }
    this.#upstreams = upstreamsNext;
    this.#status = status;
    this.#options = { ...this.#options, config: next.config };
    await Promise.all(
      [...this.#downstreams].map((downstream) =>
        downstream.server.sendToolListChanged().catch(() => undefined),
      ),
    );
  }

  #newUpstream(name: string, server: GatewayServerConfig, concurrency: number): Upstream {
    const client = new McpClient({
      ...(server.url !== undefined
        ? {
            url: server.url,
            ...(server.headers === undefined ? {} : { headers: server.headers }),
          }
        : {
            command: [server.command as string, ...(server.args ?? [])],
            ...(server.env === undefined ? {} : { env: server.env }),
          }),
      maxConcurrentRequests: concurrency,
      ...(this.#options.logger === undefined ? {} : { logger: this.#options.logger }),
      ...this.#options.clientOptions?.(name, server),
    });
    const upstream: Upstream = { name, server, concurrency, client, live: 0, retired: false };
    this.#open.add(upstream);
    return upstream;
  }

  // Counts the registered instances of an upstream's tools: the registry closes a replaced or
  // removed instance when its last call ends, and a retired upstream closes when none is left.
  #tracked(tool: BridgedTool, upstream: Upstream): BridgedTool {
    upstream.live += 1;
    let closed = false;
    return Object.freeze({
      spec: tool.spec,
      remoteName: tool.remoteName,
      needsApproval: tool.needsApproval,
      invoke: async (args: JsonObject, context: ToolContext) => {
        const span = this.#tracer.upstreamCall(tool.remoteName, this.#spans.get(context), {
          'toolfence.upstream': upstream.name,
        });
        try {
          const result = await tool.invoke(args, context);
          span.end(result.isError === true ? 'tool_error' : undefined);
          return result;
        } catch (error) {
          span.end(ToolsError.isInstance(error) ? error.code : 'GATEWAY_CALL_FAILED');
          throw error;
        }
      },
      close: async () => {
        if (closed) return;
        closed = true;
        upstream.live -= 1;
        if (upstream.retired && upstream.live === 0) await this.#closeUpstream(upstream);
      },
    });
  }

  #retire(upstream: Upstream): void {
    upstream.retired = true;
    if (upstream.live === 0) void this.#closeUpstream(upstream);
  }

  async #closeUpstream(upstream: Upstream): Promise<void> {
    if (!this.#open.delete(upstream)) return;
    await upstream.client.close().catch(() => undefined);
  }

  /**
   * Serves one downstream client on `transport` (stdio for `toolfence-mcp serve`, one Streamable
   * HTTP session each with `--http`); several may be connected at once.
   */
  async connect(transport: Transport): Promise<void> {
    const downstream = this.#newServer();
    await downstream.server.connect(transport);
    this.#downstreams.add(downstream);
    const closed = downstream.server.onclose;
    downstream.server.onclose = () => {
      this.#downstreams.delete(downstream);
      closed?.();
    };
    // The negotiated revision, for `mcp.protocol.version` (the SDK answers the client's requested
    // version when it supports it, else its latest).
    const deliver = transport.onmessage;
    transport.onmessage = (message, extra) => {
      const request = message as { method?: unknown; params?: { protocolVersion?: unknown } };
      if (request.method === 'initialize') {
        const requested = request.params?.protocolVersion;
        downstream.protocolVersion =
          typeof requested === 'string' && SUPPORTED_PROTOCOL_VERSIONS.includes(requested)
            ? requested
            : LATEST_PROTOCOL_VERSION;
      }
      deliver?.(message, extra);
    };
  }

  /** Closes the downstream server, the registry and every upstream client. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#reloading;
    await Promise.all(
      [...this.#downstreams].map((downstream) => downstream.server.close().catch(() => undefined)),
    );
    await this.#registry.close().catch(() => undefined);
    await Promise.all([...this.#open].map((upstream) => this.#closeUpstream(upstream)));
    await this.#options.audit.close();
  }

  #listed(): Record<string, unknown>[] {
    return this.toolNames().map((name) => {
      const { tool, flagged } = this.#offered.get(name) as Offered;
      const spec = tool.spec;
      const warning =
        flagged.length > 0
          ? ` [toolfence: this definition holds invisible Unicode in ${flagged.join(', ')}; shown escaped]`
          : '';
      return {
        name,
        description: `${escapeInvisible(spec.description)}${warning}`,
        inputSchema: spec.inputSchema,
        ...(spec.outputSchema === undefined ? {} : { outputSchema: spec.outputSchema }),
        ...(spec.annotations === undefined ? {} : { annotations: spec.annotations }),
      };
    });
  }

  async #ask(request: ApprovalRequest): Promise<boolean> {
    const offered = this.#offered.get(request.toolName);
    const server = this.#callers.get(request.context)?.server;
    const capabilities = server?.getClientCapabilities();
    if (server === undefined || capabilities?.elicitation === undefined) return false;
    const message = [
      `Allow this call to ${request.toolName} (server ${offered?.server ?? 'unknown'})?`,
      `Why asked: ${request.reason ?? 'the policy asks for this tool'}.`,
      `Tool description: ${escapeInvisible(request.spec.description).slice(0, 500)}`,
      `Arguments (this approval covers exactly these, once):\n${preview(request.args)}`,
    ].join('\n');
    try {
      const answer = await server.elicitInput(
        { message, requestedSchema: APPROVAL_SCHEMA as never },
        { signal: request.signal },
      );
      const approved = answer.action === 'accept' && answer.content?.approve === true;
      if (approved) this.#approvedBy.set(request.context, 'user');
      return approved;
    } catch {
      return false;
    }
  }

  async #call(
    downstream: Downstream,
    name: string,
    args: Record<string, unknown>,
    meta: unknown,
  ): Promise<CallToolResult> {
    const offered = this.#offered.get(name);
    const context = createToolContext({ runId: `gateway-${randomUUID()}` });
    this.#callers.set(context, downstream);
    this.#callers.set(context, downstream);
    const span = this.#tracer.serverCall(name, meta, {
      ...(downstream.protocolVersion === undefined
        ? {}
        : { 'mcp.protocol.version': downstream.protocolVersion }),
      ...(offered === undefined ? {} : { 'toolfence.upstream': offered.server }),
    });
    this.#spans.set(context, span);
    const base = {
      time: new Date().toISOString(),
      tool: name,
      pin: offered?.pin ?? 'unknown',
      argumentsDigest: digestOf(args),
    };
    try {
      const result = await this.#registry.invoke(name, args, context);
      const decision = this.#decisions.get(context)?.verdict ?? 'allow';
      const ambiguous = result.metadata?.ambiguous === true;
      const outcome =
        this.#observe && decision !== 'allow'
          ? 'observed'
          : ambiguous
            ? 'ambiguous'
            : result.isError === true
              ? 'tool-error'
              : 'ok';
      await this.#audit({
        ...base,
        decision,
        ...(this.#approvedBy.has(context) ? { approvedBy: 'user' as const } : {}),
        outcome,
        resultDigest: digestOf(result),
        ...(this.#observe ? { observed: true } : {}),
      });
      span.set('toolfence.decision', decision);
      span.set('toolfence.outcome', outcome);
      span.end(result.isError === true ? 'tool_error' : undefined);
      return toCallResult(result);
    } catch (error) {
      const decision = this.#decisions.get(context)?.verdict;
      const code = ToolsError.isInstance(error) ? error.code : 'GATEWAY_CALL_FAILED';
      const denied = code === 'POLICY_PERMISSION_DENIED' || code === 'APPROVAL_REQUIRED';
      const outcome = denied ? (decision === 'ask' ? 'declined' : 'denied') : 'failed';
      await this.#audit({ ...base, decision: decision ?? 'deny', outcome });
      span.set('toolfence.decision', decision ?? 'deny');
      span.set('toolfence.outcome', outcome);
      span.end(code);
      const reason = denied
        ? decision === 'ask'
          ? `The call to ${name} was not approved by the user, so it did not run.`
          : `The call to ${name} is denied by the gateway's policy, so it did not run.`
        : `The call to ${name} failed before it reached the server (${code}).`;
      return { content: [{ type: 'text', text: reason }], isError: true };
    }
  }

  async #audit(entry: AuditEntry): Promise<void> {
    try {
      await this.#options.audit.append(entry);
    } catch (error) {
      this.#options.logger?.error?.('The audit log could not be written', {
        code: (error as { code?: unknown }).code,
      });
    }
  }
}

/** A registry result in MCP's shape: `json` blocks become text, annotations are kept. */
function toCallResult(result: ToolResult): CallToolResult {
  const content = result.content.map((block) =>
    block.type === 'json' ? { type: 'text', text: JSON.stringify(block.json) } : block,
  );
  return {
    content: content as CallToolResult['content'],
    ...(result.structuredContent === undefined
      ? {}
      : { structuredContent: result.structuredContent }),
    ...(result.isError === true ? { isError: true } : {}),
  };
}
