import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import {
  type CallToolResult,
  inputRequired,
  Server,
  type ServerContext,
  type Transport,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import {
  type ApprovalRequest,
  type AuthorizationRequest,
  type Authorizer,
  type BudgetReserver,
  checkOptionKeys,
  createToolContext,
  isPermissionDecision,
  type JsonObject,
  type PermissionDecision,
  type Tool,
  type ToolContext,
  ToolRegistry,
  type ToolResult,
  ToolsError,
} from '@toolfence/tools';
import { type BridgedTool, bridgeTools } from '../bridge/bridge-tools.js';
import { type McpCallOptions, McpClient, type McpClientOptions } from '../client/mcp-client.js';
import { isRecord } from '../is-record.js';
import type { McpBridgeLogger } from '../transport/logger.js';
import { VERSION } from '../version.js';
import {
  ApprovalGrants,
  type ApprovalRefusal,
  DEFAULT_MAX_PENDING_APPROVALS,
} from './approval-grants.js';
import type { AuditEntry, AuditLog } from './audit-log.js';
import { canonicalJson, digestOf } from './canonical-json.js';
import { GatewayConfigError } from './errors.js';
import {
  DEFAULT_APPROVAL_TIMEOUT_MS,
  DEFAULT_MAX_CONCURRENT_CALLS,
  type GatewayConfig,
  type GatewayServerConfig,
} from './gateway-config.js';
import {
  GatewayPassthrough,
  type GatewayPassthroughOptions,
  PASSTHROUGH_CAPABILITIES,
  type PassthroughUpstream,
  passthroughLimits,
} from './gateway-passthrough.js';
import { type GatewaySpan, GatewayTracer, NO_SPAN } from './gateway-tracing.js';
import { isoTime } from './iso-time.js';
import { escapeInvisible, type GatewayPinStore, type PinReason } from './pin-store.js';

/** Options of {@link McpGateway}. */
export interface McpGatewayOptions {
  /** The checked config (see `parseGatewayConfig`). */
  readonly config: GatewayConfig;
  /** Decides every call: allow, deny or ask (for example a `RiskPolicy`). */
  readonly authorizer: Authorizer;
  /** The pins: the lock file (`PinStore`) or a table shared by replicas (`PostgresPinStore`). */
  readonly pins: GatewayPinStore;
  /**
   * Call budgets, reserved after the policy and before the upstream call (`CallBudget` in
   * memory, or `RedisCallBudget` shared by replicas; see `gatewayBudget`). A call over budget
   * answers a tool error saying which limit. Default none. Not replaced by a reload.
   */
  readonly budget?: BudgetReserver;
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
  /**
   * Milliseconds the user has to answer an `ask` (an elicitation, or an `input_required` result
   * and its retry); past it the approval is refused. Default: the config's approval timeout.
   */
  readonly approvalTimeoutMs?: number;
  /**
   * Approvals asked through `input_required` and not answered yet, held at most; beyond it the
   * oldest is dropped and fails closed (its user is asked again). Default 1000.
   */
  readonly maxPendingApprovals?: number;
  /** Limits of prompts, resources and `instructions` passed through (see `GatewayPassthroughOptions`). */
  readonly passthrough?: GatewayPassthroughOptions;
}

const GATEWAY_OPTION_KEYS: readonly string[] = Object.freeze([
  'config',
  'authorizer',
  'pins',
  'budget',
  'audit',
  'observe',
  'clientOptions',
  'tracing',
  'logger',
  'approvalTimeoutMs',
  'maxPendingApprovals',
  'passthrough',
]);

/** A positive whole number of at most `max`, or the error naming the option. */
function positiveInteger(name: string, value: unknown, max: number): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1 || value > max) {
    throw new GatewayConfigError(
      `McpGateway option ${name} must be a whole number from 1 to ${max}`,
      {
        details: { option: name },
      },
    );
  }
  return value;
}

/** The era a downstream connection speaks: `modern` (2026-07-28, stateless) or `legacy`. */
export type GatewayEra = 'legacy' | 'modern';

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
  readonly pins?: GatewayPinStore;
  /** A new authorizer (the policy file read again). Default: the current one. */
  readonly authorizer?: Authorizer;
}

interface Downstream {
  readonly server: Server;
  readonly era: GatewayEra;
}

/** One downstream `tools/call` while the registry runs it. */
interface CallState {
  readonly downstream: Downstream;
  readonly request: ServerContext['mcpReq'];
  /** The client declared form elicitation (legacy: at initialize; modern: on this request). */
  readonly canAsk: boolean;
  /** Modern retry: the user's answer to the approval this call's `requestState` names. */
  readonly answer: 'approved' | 'declined' | undefined;
  /** Modern: the prompt to send back as an `input_required` result. */
  prompt?: string;
  approvedBy?: 'user';
  decision?: PermissionDecision;
  span?: GatewaySpan;
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
  readonly listed: Readonly<Record<string, unknown>>;
}

const APPROVAL_KEY = 'approval';
const APPROVAL_SCHEMA = {
  type: 'object',
  properties: {
    approve: { type: 'boolean', title: 'Run this call?', description: 'Approve this one call' },
  },
  required: ['approve'],
} as const;

const REFUSALS: Readonly<Record<ApprovalRefusal, string>> = {
  unknown: 'it is unknown or was already used (an approval covers one call, once)',
  expired: 'it expired before the call was retried',
  mismatch: 'it was given for other arguments, another tool or another definition',
};

/** A McpClient that adds the gateway's trace context to each upstream `tools/call`. */
class TracedClient extends McpClient {
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

/** What the authorizer is told in observe mode, whatever the policy decided. */
const OBSERVED: PermissionDecision = Object.freeze({ verdict: 'allow', reason: 'observe' });

/** What a malformed authorizer answer is recorded as: the denial the registry enforces. */
const MALFORMED: PermissionDecision = Object.freeze({
  verdict: 'deny',
  reason: 'invalid-decision',
});

function isThenable(value: unknown): value is PromiseLike<PermissionDecision> {
  return typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** True when a client's capabilities include form-mode elicitation. */
function supportsFormElicitation(capabilities: unknown): boolean {
  if (!isRecord(capabilities)) return false;
  const elicitation = capabilities.elicitation;
  if (!isRecord(elicitation)) return false;
  // An empty `elicitation: {}` is form mode (the rule before modes existed).
  return Object.keys(elicitation).length === 0 || elicitation.form !== undefined;
}

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
 *
 * Downstream it speaks both eras on the SDK v2 server (`@modelcontextprotocol/server`): MCP
 * 2026-07-28 (stateless: `server/discover`, the per-request `_meta` envelope, an `ask` answered
 * through an `input_required` result) and 2025-11-25 (an `initialize` session, an `ask` answered
 * through elicitation).
 */
export class McpGateway {
  readonly #observe: boolean;
  #options: McpGatewayOptions;
  #authorizer: Authorizer;
  #pins: GatewayPinStore;
  #upstreams = new Map<string, Upstream>();
  readonly #open = new Set<Upstream>();
  #offered = new Map<string, Offered>();
  #listing: readonly Readonly<Record<string, unknown>>[] = [];
  #listingKey = '[]';
  #status: readonly GatewayUpstreamStatus[] = [];
  #reloading: Promise<void> = Promise.resolve();
  #relistQueued = false;
  #closed = false;
  #tracer: GatewayTracer = GatewayTracer.disabled();
  readonly #traceMeta = new AsyncLocalStorage<Record<string, string>>();
  readonly #calls = new WeakMap<object, CallState>();
  readonly #registry: ToolRegistry;
  readonly #grants: ApprovalGrants;
  readonly #downstreams = new Set<Downstream>();
  readonly #stdio = new Set<{ close(): Promise<void> }>();
  readonly #changeListeners = new Set<() => void>();
  /** Prompts, resources, completions and instructions of the upstreams (gateway-passthrough.ts). */
  readonly #passthrough: GatewayPassthrough;

  /** Builds the gateway; nothing connects until {@link McpGateway.start}. */
  constructor(options: McpGatewayOptions) {
    checkOptionKeys(
      options,
      GATEWAY_OPTION_KEYS,
      'McpGateway',
      (message, option) => new GatewayConfigError(message, { details: { option } }),
    );
    this.#options = options;
    this.#authorizer = options.authorizer;
    this.#pins = options.pins;
    this.#observe = options.observe ?? options.config.gateway.observe ?? false;
    const approvalTimeoutMs =
      options.approvalTimeoutMs ??
      options.config.gateway.approvalTimeoutMs ??
      DEFAULT_APPROVAL_TIMEOUT_MS;
    // At most the timer limit: a longer timeout would fire at once.
    positiveInteger('approvalTimeoutMs', approvalTimeoutMs, 2_147_483_647);
    this.#grants = new ApprovalGrants(
      approvalTimeoutMs,
      positiveInteger(
        'maxPendingApprovals',
        options.maxPendingApprovals ?? DEFAULT_MAX_PENDING_APPROVALS,
        1_000_000,
      ),
    );
    const calls = this.#calls;
    const observe = this.#observe;
    const current = (): Authorizer => this.#authorizer;
    const record = (request: AuthorizationRequest, decision: PermissionDecision) => {
      const call = calls.get(request.context);
      // What the registry enforces: a malformed answer is a denial (and audited as one).
      if (call !== undefined) call.decision = isPermissionDecision(decision) ? decision : MALFORMED;
      return observe ? OBSERVED : decision;
    };
    // Answers in the authorizer's own time: a synchronous policy (RiskPolicy, RuleBasedPolicy)
    // stays synchronous, so the registry decides the call without a promise; an asynchronous one
    // is awaited. A throw or a rejection reaches the registry as it is (it counts as deny).
    const recording: Authorizer = {
      authorize(request: AuthorizationRequest) {
        const answer = current().authorize(request);
        return isThenable(answer)
          ? Promise.resolve(answer).then((decision) => record(request, decision))
          : record(request, answer);
      },
    };
    this.#passthrough = new GatewayPassthrough({
      authorizer: current,
      audit: (entry) => this.#audit(entry),
      observe,
      canAsk: (server) => supportsFormElicitation(server.getClientCapabilities()),
      logger: options.logger,
      limits: passthroughLimits(options.passthrough),
    });
    this.#registry = new ToolRegistry({
      authorizer: recording,
      approval: (request) => this.#ask(request),
      approvalTimeoutMs,
      ...(options.budget === undefined ? {} : { budget: options.budget }),
    });
  }

  /**
   * A new downstream server (SDK v2 `Server`) for one connection of `era`, for serving the
   * gateway on a transport of your own: a legacy session (it is sent `list_changed` until it
   * closes) or one modern HTTP request. {@link McpGateway.connect} and `serveGatewayHttp` use it.
   */
  downstreamServer(era: GatewayEra): Server {
    return this.#newDownstream(era, era === 'legacy').server;
  }

  #newDownstream(era: GatewayEra, track: boolean): Downstream {
    const server = new Server(
      { name: 'toolfence-gateway', version: VERSION },
      {
        capabilities: { tools: { listChanged: true }, ...PASSTHROUGH_CAPABILITIES },
        instructions: this.#passthrough.instructions(),
      },
    );
    const downstream: Downstream = { server, era };
    this.#passthrough.attach(server, era);
    server.setRequestHandler('tools/list', () => ({ tools: this.#listing }) as never);
    server.setRequestHandler(
      'tools/call',
      (request, context) =>
        this.#call(downstream, request.params, context.mcpReq) as Promise<CallToolResult>,
    );
    if (track) {
      this.#downstreams.add(downstream);
      server.onclose = () => {
        this.#downstreams.delete(downstream);
        this.#passthrough.detach(server);
      };
    }
    return downstream;
  }

  /**
   * Calls `listener` after the offered tools changed (a reload, or an upstream's `list_changed`
   * once its pins are checked); `serveGatewayHttp` relays it to modern `subscriptions/listen`
   * streams. Returns the unsubscribe function.
   */
  onToolsChanged(listener: () => void): () => void {
    this.#changeListeners.add(listener);
    return () => {
      this.#changeListeners.delete(listener);
    };
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

  /** Approvals asked through `input_required` that are not answered or expired yet. */
  get pendingApprovals(): number {
    return this.#grants.size;
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
   * clients are sent `notifications/tools/list_changed` after the swap when the offered tools
   * changed. Reloads run one at a time.
   */
  reload(next: GatewayReload): Promise<void> {
    const run = this.#reloading.then(() => this.#reload(next, true));
    this.#reloading = run.catch(() => undefined);
    return run;
  }

  // An upstream said its tools changed (its client marked its cached listing stale): list again
  // what is stale, with the config current when the relist runs, check the pins, and only then
  // tell the downstream clients. The other upstreams answer from their cached listing, so a
  // server that keeps announcing changes costs only its own listing. Changes that arrive while a
  // relist waits are folded into it.
  #relist(): void {
    if (this.#relistQueued || this.#closed) return;
    this.#relistQueued = true;
    const run = this.#reloading.then(() => {
      this.#relistQueued = false;
      return this.#reload({ config: this.#options.config }, false);
    });
    this.#reloading = run.catch((error: unknown) => {
      this.#options.logger?.error?.('Listing the upstream tools again failed', {
        code: (error as { code?: unknown }).code,
      });
    });
  }

  async #reload(next: GatewayReload, refresh: boolean): Promise<void> {
    if (this.#closed) return;
    const pins = next.pins ?? this.#pins;
    this.#pins = pins;
    if (next.authorizer !== undefined) this.#authorizer = next.authorizer;
    let pinsChanged = false;
    const tools: Tool[] = [];
    const offeredNext = new Map<string, Offered>();
    const status: GatewayUpstreamStatus[] = [];
    const upstreamsNext = new Map<string, Upstream>();
    const passedNext = new Map<string, PassthroughUpstream>();
    for (const [name, server] of Object.entries(next.config.mcpServers)) {
      const previous = this.#upstreams.get(name);
      // A relist starts nothing: an upstream that failed stays failed until a reload.
      const failed = this.#status.find((entry) => entry.name === name && entry.state === 'failed');
      if (!refresh && previous === undefined && failed !== undefined) {
        status.push(failed);
        continue;
      }
      const concurrency = next.config.gateway.maxConcurrentCalls ?? DEFAULT_MAX_CONCURRENT_CALLS;
      const reused =
        previous !== undefined &&
        previous.concurrency === concurrency &&
        canonicalJson(previous.server) === canonicalJson(server);
      const upstream = reused ? previous : this.#newUpstream(name, server, concurrency);
      try {
        const listing = await upstream.client.tools({ refresh: reused && refresh });
        const review = await pins.review(name, serverIdentity(server), listing);
        pinsChanged ||= review.changed;
        // Prompts and resource templates: listed and pinned beside the tools.
        const passed = await this.#passthrough.load({
          server: name,
          namespace: server.namespace as string,
          identity: serverIdentity(server),
          client: upstream.client,
          pins,
          tools: listing,
        });
        pinsChanged ||= passed.pinsChanged;
        passedNext.set(name, passed.upstream);
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
          const flagged = pin?.flagged ?? [];
          offeredNext.set(tool.spec.name, {
            server: name,
            tool: wrapped,
            pin: pin?.sha256 ?? 'unpinned',
            flagged,
            listed: listedDefinition(wrapped, flagged),
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
    // The pins are on disk before any client can see the new listing.
    if (pinsChanged) await pins.save();
    const before = this.#registry.names();
    await this.#registry.registerAll(tools, { replace: true });
    this.#offered = offeredNext;
    this.#listing = [...offeredNext.keys()]
      .sort()
      .map((name) => (offeredNext.get(name) as Offered).listed);
    for (const name of before) {
      if (!offeredNext.has(name)) await this.#registry.unregister(name).catch(() => undefined);
    }
    for (const [name, upstream] of this.#upstreams) {
      if (upstreamsNext.get(name) !== upstream) this.#retire(upstream);
    }
    this.#upstreams = upstreamsNext;
    await this.#passthrough.commit(
      passedNext,
      [...this.#downstreams].map((downstream) => downstream.server),
    );
    this.#status = status;
    this.#options = { ...this.#options, config: next.config };
    const listingKey = canonicalJson(this.#listing);
    if (listingKey === this.#listingKey) return;
    this.#listingKey = listingKey;
    for (const listener of this.#changeListeners) {
      try {
        listener();
      } catch {
        // A listener's failure is its own; the others still hear of the change.
      }
    }
    await Promise.all(
      [...this.#downstreams].map((downstream) =>
        downstream.server.sendToolListChanged().catch(() => undefined),
      ),
    );
  }

  #newUpstream(name: string, server: GatewayServerConfig, concurrency: number): Upstream {
    const client = new TracedClient(
      {
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
        onToolsListChanged: () => {
          if (!upstream.retired) this.#relist();
        },
        // Roots, prompts and resources: see gateway-passthrough.ts.
        roots: () => this.#passthrough.roots(),
        onListChanged: (list) => {
          if (upstream.retired) return;
          // Prompts and templates are told after their pins are checked; resources at once.
          this.#relist();
          if (list === 'resources') {
            void this.#passthrough.resourcesChanged(
              [...this.#downstreams].map((downstream) => downstream.server),
            );
          }
        },
      },
      this.#traceMeta,
    );
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
        const parent = this.#calls.get(context)?.span;
        if (!GatewayTracer.live(parent)) return tool.invoke(args, context);
        const span = this.#tracer.upstreamCall(tool.remoteName, parent, {
          'toolfence.upstream': upstream.name,
        });
        try {
          // The upstream call carries this span's trace context in `params._meta`.
          const result = await this.#traceMeta.run(this.#tracer.traceContext(span), () =>
            tool.invoke(args, context),
          );
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
   * Serves one downstream client on a stdio-shaped `transport` (stdin/stdout for
   * `toolfence-mcp serve`, or an in-memory pair): the client's opening picks the era, a
   * `server/discover` probe for 2026-07-28 or an `initialize` for 2025-11-25 (the SDK v2's
   * `serveStdio`). Several may be connected at once.
   */
  async connect(transport: Transport): Promise<void> {
    // The entry owns the transport's callbacks; an `onclose` set before connecting still runs.
    const closed = transport.onclose;
    const handle = serveStdio((context) => this.#newDownstream(context.era, true).server, {
      transport,
      onerror: (error) => {
        this.#options.logger?.debug?.('Downstream connection error', { name: error.name });
      },
    });
    this.#stdio.add(handle);
    const entry = transport.onclose;
    transport.onclose = () => {
      this.#stdio.delete(handle);
      entry?.();
      closed?.();
    };
  }

  /** Closes the downstream servers, the registry and every upstream client. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#reloading;
    await Promise.all([...this.#stdio].map((handle) => handle.close().catch(() => undefined)));
    await Promise.all(
      [...this.#downstreams].map((downstream) => downstream.server.close().catch(() => undefined)),
    );
    await this.#registry.close().catch(() => undefined);
    await Promise.all([...this.#open].map((upstream) => this.#closeUpstream(upstream)));
    await this.#options.audit.close();
  }

  async #ask(request: ApprovalRequest): Promise<boolean> {
    const call = this.#calls.get(request.context);
    if (call === undefined) return false;
    const offered = this.#offered.get(request.toolName);
    if (call.downstream.era === 'modern') {
      if (call.answer !== undefined) {
        if (call.answer === 'approved') call.approvedBy = 'user';
        return call.answer === 'approved';
      }
      if (call.canAsk) call.prompt = approvalPrompt(request, offered?.server);
      return false;
    }
    if (!call.canAsk) return false;
    try {
      const answer = await call.request.elicitInput(
        {
          message: approvalPrompt(request, offered?.server),
          requestedSchema: APPROVAL_SCHEMA as never,
        },
        { signal: request.signal },
      );
      const approved = answer.action === 'accept' && answer.content?.approve === true;
      if (approved) call.approvedBy = 'user';
      return approved;
    } catch {
      return false;
    }
  }

  async #call(
    downstream: Downstream,
    params: { readonly name: string; readonly arguments?: Record<string, unknown> | undefined },
    request: ServerContext['mcpReq'],
  ): Promise<CallToolResult | ReturnType<typeof inputRequired>> {
    const name = params.name;
    const args = params.arguments ?? {};
    const offered = this.#offered.get(name);
    const modern = downstream.era === 'modern';
    const base = {
      time: isoTime(Date.now()),
      tool: name,
      pin: offered?.pin ?? 'unknown',
      argumentsDigest: digestOf(args),
    };
    // A modern retry presents the approval it was asked for: it must name one this gateway issued
    // for exactly this tool, definition pin and arguments, unexpired and unused.
    let answer: CallState['answer'];
    if (modern) {
      const state = request.requestState();
      const responses = request.inputResponses;
      if (state !== undefined || responses !== undefined) {
        const refusal =
          typeof state === 'string'
            ? this.#grants.redeem(state, {
                tool: name,
                pin: base.pin,
                argumentsDigest: base.argumentsDigest,
              })
            : 'unknown';
        if (refusal !== undefined) {
          await this.#audit({ ...base, decision: 'ask', outcome: `approval-${refusal}` });
          return errorText(
            `The approval presented for ${name} does not cover this call: ${REFUSALS[refusal]}. The call did not run; call again to be asked.`,
          );
        }
        const response = responses?.[APPROVAL_KEY];
        answer =
          isRecord(response) &&
          response.action === 'accept' &&
          isRecord(response.content) &&
          response.content.approve === true
            ? 'approved'
            : 'declined';
      }
    }
    const envelope = (request.envelope ?? {}) as Record<string, unknown>;
    const call: CallState = {
      downstream,
      request,
      canAsk: supportsFormElicitation(
        modern
          ? envelope['io.modelcontextprotocol/clientCapabilities']
          : downstream.server.getClientCapabilities(),
      ),
      answer,
    };
    const context = createToolContext({ runId: `gateway-${randomUUID()}`, signal: request.signal });
    this.#calls.set(context, call);
    let span = NO_SPAN;
    if (this.#tracer.enabled) {
      const version = downstream.server.getNegotiatedProtocolVersion();
      span = this.#tracer.serverCall(name, request._meta, {
        ...(version === undefined ? {} : { 'mcp.protocol.version': version }),
        ...(offered === undefined ? {} : { 'toolfence.upstream': offered.server }),
      });
      call.span = span;
    }
    try {
      const result = await this.#registry.invoke(name, args, context);
      const decision = call.decision?.verdict ?? 'allow';
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
        ...(call.approvedBy === undefined ? {} : { approvedBy: call.approvedBy }),
        outcome,
        resultDigest: digestOf(result),
        ...(this.#observe ? { observed: true } : {}),
      });
      if (span !== undefined) {
        span.set('toolfence.decision', decision);
        span.set('toolfence.outcome', outcome);
        span.end(result.isError === true ? 'tool_error' : undefined);
      }
      return downstream.server.projectCallToolResult(
        toCallResult(result),
        offered?.tool.spec.outputSchema as Readonly<Record<string, unknown>> | undefined,
      );
    } catch (error) {
      const decision = call.decision?.verdict;
      const code = ToolsError.isInstance(error) ? error.code : 'GATEWAY_CALL_FAILED';
      const denied = code === 'POLICY_PERMISSION_DENIED' || code === 'APPROVAL_REQUIRED';
      if (denied && call.prompt !== undefined) {
        // Modern: ask through an `input_required` result; the client retries with the answer.
        const handle = this.#grants.issue({
          tool: name,
          pin: base.pin,
          argumentsDigest: base.argumentsDigest,
        });
        await this.#audit({ ...base, decision: 'ask', outcome: 'asked' });
        span.set('toolfence.decision', 'ask');
        span.set('toolfence.outcome', 'asked');
        span.end();
        return inputRequired({
          inputRequests: {
            [APPROVAL_KEY]: inputRequired.elicit({
              message: call.prompt,
              requestedSchema: APPROVAL_SCHEMA as never,
            }),
          },
          requestState: handle,
        });
      }
      const overBudget = code === 'POLICY_BUDGET_EXCEEDED';
      const outcome = denied
        ? decision === 'ask'
          ? 'declined'
          : 'denied'
        : overBudget
          ? 'over-budget'
          : 'failed';
      await this.#audit({ ...base, decision: decision ?? 'deny', outcome });
      span.set('toolfence.decision', decision ?? 'deny');
      span.set('toolfence.outcome', outcome);
      span.end(code);
      return errorText(
        denied
          ? decision === 'ask'
            ? `The call to ${name} was not approved by the user, so it did not run.`
            : `The call to ${name} is denied by the gateway's policy, so it did not run.`
          : overBudget
            ? `The call to ${name} is over the gateway's call budget (${budgetLimit(error)}), so it did not run.`
            : `The call to ${name} failed before it reached the server (${code}).`,
      );
    }
  }

  #audit(entry: AuditEntry): Promise<void> {
    return this.#options.audit.append(entry).then(
      () => undefined,
      (error: unknown) => {
        this.#options.logger?.error?.('The audit log could not be written', {
          code: (error as { code?: unknown } | null)?.code,
        });
      },
    );
  }
}

/** The prompt of one approval: the tool, why, its description and exactly these arguments. */
function approvalPrompt(request: ApprovalRequest, server: string | undefined): string {
  return [
    `Allow this call to ${request.toolName} (server ${server ?? 'unknown'})?`,
    `Why asked: ${request.reason ?? 'the policy asks for this tool'}.`,
    `Tool description: ${escapeInvisible(request.spec.description).slice(0, 500)}`,
    `Arguments (this approval covers exactly these, once):\n${preview(request.args)}`,
  ].join('\n');
}

/** The `tools/list` entry of an offered tool, built once per reload. */
function listedDefinition(
  tool: BridgedTool,
  flagged: readonly string[],
): Readonly<Record<string, unknown>> {
  const spec = tool.spec;
  const warning =
    flagged.length > 0
      ? ` [toolfence: this definition holds invisible Unicode in ${flagged.join(', ')}; shown escaped]`
      : '';
  return Object.freeze({
    name: spec.name,
    description: `${escapeInvisible(spec.description)}${warning}`,
    inputSchema: spec.inputSchema,
    ...(spec.outputSchema === undefined ? {} : { outputSchema: spec.outputSchema }),
    ...(spec.annotations === undefined ? {} : { annotations: spec.annotations }),
  });
}

/** Which budget limit refused a call, from `BudgetExceededError.details` (safe to show). */
function budgetLimit(error: unknown): string {
  const details = (error as { details?: Record<string, unknown> }).details ?? {};
  if (details.reason === 'unavailable') {
    return 'the shared budget store cannot be reached, and the gateway fails closed';
  }
  const { limit, max } = details;
  if (limit === 'maxCalls' && typeof max === 'number') return `maxCalls ${max} used up`;
  if (limit === 'maxConcurrent' && typeof max === 'number') return `maxConcurrent ${max} running`;
  return 'a limit was reached';
}

function errorText(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
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
