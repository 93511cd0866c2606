import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import {
  type ApprovalRequest,
  type AuthorizationRequest,
  type Authorizer,
  createToolContext,
  type PermissionDecision,
  type Tool,
  ToolRegistry,
  type ToolResult,
  ToolsError,
} from '@toolfence/tools';
import { type BridgedTool, bridgeTools } from '../bridge/bridge-tools.js';
import { McpClient, type McpClientOptions } from '../client/mcp-client.js';
import type { McpBridgeLogger } from '../transport/logger.js';
import { VERSION } from '../version.js';
import type { AuditEntry, AuditLog } from './audit-log.js';
import { digestOf } from './canonical-json.js';
import type { GatewayConfig, GatewayServerConfig } from './gateway-config.js';
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
  readonly #options: McpGatewayOptions;
  readonly #observe: boolean;
  readonly #clients = new Map<string, McpClient>();
  readonly #offered = new Map<string, Offered>();
  readonly #status: GatewayUpstreamStatus[] = [];
  readonly #decisions = new WeakMap<object, PermissionDecision>();
  readonly #approvedBy = new WeakMap<object, 'user'>();
  readonly #registry: ToolRegistry;
  readonly #server: Server;

  /** Builds the gateway; nothing connects until {@link McpGateway.start}. */
  constructor(options: McpGatewayOptions) {
    this.#options = options;
    this.#observe = options.observe ?? options.config.gateway.observe ?? false;
    const authorizer = options.authorizer;
    const decisions = this.#decisions;
    const observe = this.#observe;
    const recording: Authorizer = {
      async authorize(request: AuthorizationRequest): Promise<PermissionDecision> {
        const decision = await authorizer.authorize(request);
        decisions.set(request.context, decision);
        return observe ? { verdict: 'allow', reason: 'observe' } : decision;
      },
    };
    this.#registry = new ToolRegistry({
      authorizer: recording,
      approval: (request) => this.#ask(request),
      approvalTimeoutMs: (options.config.gateway.approvalTimeoutSeconds ?? 120) * 1000,
    });
    this.#server = new Server(
      { name: 'toolfence-gateway', version: VERSION },
      {
        capabilities: { tools: { listChanged: true } },
        instructions:
          'Tools from several MCP servers, named <server>__<tool>. Every call is checked by policy; some ask the user first.',
      },
    );
    this.#server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: this.#listed() }));
    this.#server.setRequestHandler(CallToolRequestSchema, (request) =>
      this.#call(request.params.name, request.params.arguments ?? {}),
    );
  }

  /** The upstreams after start: ready or failed, offered and hidden tools. */
  get upstreams(): readonly GatewayUpstreamStatus[] {
    return this.#status;
  }

  /** Names offered downstream, sorted. */
  toolNames(): string[] {
    return [...this.#offered.keys()].sort();
  }

  /**
   * Connects every upstream, lists and pins its tools, and registers the visible ones. An upstream
   * that fails is reported (`upstreams`, the logger) and its tools are absent.
   */
  async start(): Promise<void> {
    let pinsChanged = false;
    const tools: Tool[] = [];
    for (const [name, server] of Object.entries(this.#options.config.mcpServers)) {
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
        ...(this.#options.logger === undefined ? {} : { logger: this.#options.logger }),
        ...this.#options.clientOptions?.(name, server),
      });
      this.#clients.set(name, client);
      try {
        const listing = await client.tools();
        const review = this.#options.pins.review(name, serverIdentity(server), listing);
        pinsChanged ||= review.changed;
        const bridged = await bridgeTools(client, {
          prefix: server.namespace as string,
          ...(server.allow === undefined ? {} : { allow: server.allow }),
          deny: [...(server.deny ?? []), ...review.hidden.keys()],
        });
        const offered: string[] = [];
        for (const tool of bridged) {
          if (!review.visible.has(tool.remoteName)) continue;
          const pin = this.#options.pins.pinOf(name, tool.remoteName);
          this.#offered.set(tool.spec.name, {
            server: name,
            tool,
            pin: pin?.sha256 ?? 'unpinned',
            flagged: pin?.flagged ?? [],
          });
          tools.push(tool);
          offered.push(tool.spec.name);
        }
        for (const [remote, reasons] of review.hidden) {
          this.#options.logger?.warn?.('A tool is hidden until it is accepted again', {
            server: name,
            tool: remote,
            reasons,
          });
        }
        this.#status.push({
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
          {
            server: name,
            code: typeof code === 'string' ? code : 'unknown',
          },
        );
        this.#status.push({
          name,
          state: 'failed',
          tools: [],
          hidden: {},
          error: typeof code === 'string' ? code : 'unknown',
        });
        await client.close().catch(() => undefined);
        this.#clients.delete(name);
      }
    }
    if (pinsChanged) await this.#options.pins.save();
    await this.#registry.registerAll(tools);
  }

  /** Serves the downstream client on `transport` (stdio for `toolfence-mcp serve`). */
  async connect(transport: Transport): Promise<void> {
    await this.#server.connect(transport);
  }

  /** Closes the downstream server, the registry and every upstream client. */
  async close(): Promise<void> {
    await this.#server.close().catch(() => undefined);
    await this.#registry.close().catch(() => undefined);
    await Promise.all([...this.#clients.values()].map((client) => client.close()));
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
    const capabilities = this.#server.getClientCapabilities();
    if (capabilities?.elicitation === undefined) return false;
    const message = [
      `Allow this call to ${request.toolName} (server ${offered?.server ?? 'unknown'})?`,
      `Why asked: ${request.reason ?? 'the policy asks for this tool'}.`,
      `Tool description: ${escapeInvisible(request.spec.description).slice(0, 500)}`,
      `Arguments (this approval covers exactly these, once):\n${preview(request.args)}`,
    ].join('\n');
    try {
      const answer = await this.#server.elicitInput(
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

  async #call(name: string, args: Record<string, unknown>): Promise<CallToolResult> {
    const offered = this.#offered.get(name);
    const context = createToolContext({ runId: `gateway-${randomUUID()}` });
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
      await this.#audit({
        ...base,
        decision,
        ...(this.#approvedBy.has(context) ? { approvedBy: 'user' as const } : {}),
        outcome:
          this.#observe && decision !== 'allow'
            ? 'observed'
            : ambiguous
              ? 'ambiguous'
              : result.isError === true
                ? 'tool-error'
                : 'ok',
        resultDigest: digestOf(result),
        ...(this.#observe ? { observed: true } : {}),
      });
      return toCallResult(result);
    } catch (error) {
      const decision = this.#decisions.get(context)?.verdict;
      const code = ToolsError.isInstance(error) ? error.code : 'GATEWAY_CALL_FAILED';
      const denied = code === 'POLICY_PERMISSION_DENIED' || code === 'APPROVAL_REQUIRED';
      await this.#audit({
        ...base,
        decision: decision ?? 'deny',
        outcome: denied ? (decision === 'ask' ? 'declined' : 'denied') : 'failed',
      });
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
