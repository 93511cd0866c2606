import type { ProtocolError, Server, ServerContext } from '@modelcontextprotocol/server';
import {
  CONTENT_TRUST_LEVELS,
  type ContentTrustLevel,
  compareRisk,
  type RiskLevel,
  readContract,
  type ToolContract,
} from '@toolfence/tool-contract';
import {
  type Authorizer,
  checkOptionKeys,
  createToolContext,
  type FlowRaise,
  isPermissionDecision,
  type JsonObject,
  type PermissionDecision,
  PRINCIPAL_METADATA_KEY,
  type Principal,
  type ToolOrigin,
} from '@toolfence/tools/core';
import { ResourceNotFoundError, ServerRpcError } from '../client/errors.js';
import type { McpClient } from '../client/mcp-client.js';
import type { McpToolInfo } from '../client/tool-listing.js';
import { isRecord } from '../is-record.js';
import { escapeInvisible, printableText } from '../printable-text.js';
import type { McpBridgeLogger } from '../transport/logger.js';
import { approvalPrompt, flowChain } from './approval-prompt.js';
import type { AuditEntry } from './audit-log.js';
import { AuditLogError } from './audit-log-error.js';
import { canonicalJson, digestOf } from './canonical-json.js';
import { GatewayConfigError } from './errors.js';
import { auditFlow, type GatewayFlow, raisedVerdict } from './flow-session.js';
import { principalOfRequest } from './identity/gateway-principal.js';
import { listingFor } from './identity/listing-filter.js';
import { isoTime } from './iso-time.js';
import {
  definitionDigest,
  type GatewayPinStore,
  type PinKind,
  type PinReason,
  type PinRecord,
  pinKey,
} from './pin-store.js';
import { promptReadName, resourceReadName } from './read-name.js';
import {
  type CompiledUriTemplate,
  canonicalResourceUri,
  compileUriTemplate,
  uriTemplateMatches,
} from './resource-uri.js';
import { nextRunId } from './run-id.js';
import { serverSdk } from './server-sdk.js';

/**
 * Limits of what the gateway passes through besides tools (McpGateway option `passthrough`).
 * Unknown keys are refused.
 */
export interface GatewayPassthroughOptions {
  /**
   * Characters of one upstream's `instructions` kept, counted in the server's text (a control
   * or invisible character kept is shown as `\u{…}`). Default 2,048.
   */
  readonly maxInstructionsPerServer?: number;
  /** Characters of all upstreams' `instructions` kept together, counted the same way. Default 8,192. */
  readonly maxInstructionsTotal?: number;
  /** Pages of one upstream listing (`prompts/list`, `resources/list`, ...) followed. Default 100. */
  readonly maxListPages?: number;
  /** Entries of one upstream listing kept; the rest are left out (and logged). Default 10,000. */
  readonly maxListItems?: number;
  /** Milliseconds the downstream client has to answer the `roots/list` asked for an upstream. Default 10,000. */
  readonly rootsTimeoutMs?: number;
  /**
   * Characters of a `resources/read` URI the gateway reads; a longer one is refused
   * (`GATEWAY_RESOURCE_URI_TOO_LONG`) before it is matched or sent. Default 8,192.
   */
  readonly maxReadUriChars?: number;
  /**
   * Expressions (`{…}`) of one upstream resource template, each counted once per variable it
   * names (`{?a,b}` counts two); a template with more is left out of `resources/templates/list`
   * (and logged), and no read is matched against it. Default 32.
   */
  readonly maxTemplateExpressions?: number;
  /**
   * Steps the gateway spends matching a `resources/read` URI against the upstreams' resource
   * templates, per pass over them (a read makes at most two: before and after it lists the
   * resources again): each template tried counts its steps (literal runs and expressions'
   * variables) times the URI's length plus one. A read that would take more is refused
   * (`GATEWAY_RESOURCE_MATCH_LIMIT`) and nothing is read. Default 20,000,000.
   */
  readonly maxTemplateMatchWork?: number;
}

/** The defaults of {@link GatewayPassthroughOptions}. */
export const DEFAULT_PASSTHROUGH_LIMITS: Readonly<Required<GatewayPassthroughOptions>> =
  Object.freeze({
    maxInstructionsPerServer: 2_048,
    maxInstructionsTotal: 8_192,
    maxListPages: 100,
    maxListItems: 10_000,
    rootsTimeoutMs: 10_000,
    maxReadUriChars: 8_192,
    maxTemplateExpressions: 32,
    maxTemplateMatchWork: 20_000_000,
  });

const OPTION_KEYS = Object.keys(DEFAULT_PASSTHROUGH_LIMITS);

/** The option checked, defaults filled in; a bad value is a `GatewayConfigError` naming it. */
export function passthroughLimits(value: unknown): Readonly<Required<GatewayPassthroughOptions>> {
  if (value === undefined) return DEFAULT_PASSTHROUGH_LIMITS;
  if (!isRecord(value)) {
    throw new GatewayConfigError('McpGateway option passthrough must be an object', {
      details: { option: 'passthrough' },
    });
  }
  checkOptionKeys(
    value,
    OPTION_KEYS,
    'McpGateway passthrough',
    (message, option) =>
      new GatewayConfigError(message, { details: { option: `passthrough.${option}` } }),
  );
  const out: Record<string, number> = { ...DEFAULT_PASSTHROUGH_LIMITS };
  for (const key of OPTION_KEYS) {
    const given = value[key];
    if (given === undefined) continue;
    if (typeof given !== 'number' || !Number.isSafeInteger(given) || given < 1) {
      throw new GatewayConfigError(
        `McpGateway option passthrough.${key} must be a whole number of at least 1`,
        { details: { option: `passthrough.${key}` } },
      );
    }
    out[key] = given;
  }
  return Object.freeze(out) as Required<GatewayPassthroughOptions>;
}

/** The gateway's own sentence, before the upstreams' instructions. */
export const GATEWAY_INSTRUCTIONS =
  'Tools from several MCP servers, named <server>__<tool>. Every call is checked by policy; some ask the user first.';

/** The capabilities the downstream server declares for what passes through (always declared). */
export const PASSTHROUGH_CAPABILITIES: Readonly<{
  prompts: { listChanged: boolean };
  resources: { listChanged: boolean };
  completions: Record<string, never>;
}> = Object.freeze({
  prompts: { listChanged: true },
  resources: { listChanged: true },
  completions: {},
});

/** One prompt or resource template offered downstream. */
interface Passed {
  readonly offered: string;
  readonly remote: string;
  readonly pin: string;
  readonly listed: Readonly<Record<string, unknown>>;
  /** The URI template compiled for matching (see `uriTemplateMatches`). */
  readonly template?: CompiledUriTemplate;
  readonly uriTemplate?: string;
}

/** What one ready upstream offers besides tools, as of its last load. */
export interface PassthroughUpstream {
  readonly server: string;
  readonly namespace: string;
  readonly client: McpClient;
  readonly instructions: string | undefined;
  readonly resources: boolean;
  readonly completions: boolean;
  readonly contentTrust: ContentTrustLevel;
  /**
   * The most dangerous sink risk (`external-publication`, `paid-operation`, `destructive`) among
   * the server's listed tool definitions and their accepted pins, else `read-only`: the risk the
   * flow guard judges a read or completion that carries the client's data to this server by.
   */
  readonly sinkRisk: RiskLevel;
  readonly prompts: readonly Passed[];
  readonly templates: readonly Passed[];
  /** Offered names hidden until accepted, with their kind and reasons. */
  readonly hidden: ReadonlyMap<
    string,
    { readonly kind: PinKind; readonly reasons: readonly PinReason[] }
  >;
}

/** What the pass-through needs of the gateway. */
export interface GatewayPassthroughHooks {
  /** The current authorizer (the policy), read at each request. */
  readonly authorizer: () => Authorizer;
  /** Appends one audit entry (never throws). */
  readonly audit: (entry: AuditEntry) => Promise<void>;
  /**
   * Appends the `started` line of a read about to go upstream: the log's own promise, which
   * rejects when the line cannot be written (the read is then not sent).
   */
  readonly auditStarted: (entry: AuditEntry) => Promise<unknown>;
  /** Enforce nothing, record what would have been decided. */
  readonly observe: boolean;
  /** True when the legacy downstream client declared form elicitation. */
  readonly canAsk: (server: Server) => boolean;
  readonly logger?: McpBridgeLogger | undefined;
  readonly limits: Readonly<Required<GatewayPassthroughOptions>>;
  /**
   * Characters of arguments an approval prompt shows whole (`gateway.approvalMaxArgumentChars`);
   * a read over it is refused without asking (`prompt-too-long`), as a call is.
   */
  readonly approvalMaxArgumentChars: number;
  /**
   * The gateway's flow guard and its sessions: a read or completion that carries the client's
   * data to a server is judged by it as a call to that server would be. Absent: none.
   */
  readonly flow?: GatewayFlow;
  /**
   * Resolves once the upstreams still starting are ready, or the gateway's `listWaitMs` passed:
   * a listing or a read that arrives during the start waits for it, as `tools/list` does.
   */
  readonly started?: () => Promise<void>;
}

const APPROVAL_SCHEMA = {
  type: 'object',
  properties: {
    approve: { type: 'boolean', title: 'Allow this read?', description: 'Approve this one read' },
  },
  required: ['approve'],
} as const;

const MALFORMED: PermissionDecision = Object.freeze({
  verdict: 'deny',
  reason: 'invalid-decision',
});

/** The SDK's `ProtocolError` with one of its codes (the SDK is loaded by the gateway's start). */
function protocolError(
  code: 'InvalidParams' | 'InvalidRequest' | 'InternalError',
  message: string,
  data?: Record<string, unknown>,
): ProtocolError {
  const { ProtocolError, ProtocolErrorCode } = serverSdk();
  return new ProtocolError(ProtocolErrorCode[code], message, data);
}

function refusal(code: string, message: string, data: Record<string, unknown> = {}): ProtocolError {
  return protocolError('InvalidParams', message, { code, ...data });
}

/**
 * How the policy names a read: the offered name `<namespace>__<own>` and, as for a bridged tool,
 * the origin `{ server, tool: <own> }`, where `own` is `prompt:<name>` or `resource:<uri>` (so a
 * rule `{ "server": "fs" }` or `{ "server": "fs", "tool": "resource:file:///etc/*" }` covers it).
 */
function readIdentity(
  upstream: PassthroughUpstream,
  own: string,
): { readonly name: string; readonly origin: ToolOrigin } {
  return {
    name: `${upstream.namespace}__${own}`,
    origin: Object.freeze({ server: upstream.server, tool: own }),
  };
}

/** The most cautious of two content-trust levels. */
function moreCautious(a: ContentTrustLevel, b: ContentTrustLevel): ContentTrustLevel {
  return CONTENT_TRUST_LEVELS.indexOf(a) >= CONTENT_TRUST_LEVELS.indexOf(b) ? a : b;
}

/** The content trust a listed tool definition declares in its contract, if it declares one. */
function declaredTrust(tool: Readonly<Record<string, unknown>>): ContentTrustLevel | undefined {
  try {
    const reading = readContract(tool as never);
    return reading.source === 'declared' ? reading.contract.contentTrust : undefined;
  } catch {
    // A tool whose contract cannot be read declares nothing.
    return undefined;
  }
}

/** Where a listed tool carries its declared contract (`_meta`). */
const CONTRACT_META_KEY = 'io.github.toolfence/contract';

/** A pinned definition as a listing entry (the pin keeps the `_meta` contract as `contract`). */
function pinnedAsListed(pin: PinRecord): Readonly<Record<string, unknown>> {
  const { contract, ...definition } = pin.definition;
  return contract === undefined
    ? definition
    : { ...definition, _meta: { [CONTRACT_META_KEY]: contract } };
}

/**
 * The server's content trust: the most cautious level its **accepted** tool definitions declare
 * in their contracts, `untrusted` when none declares one (remote content is untrusted unless the
 * server says more). A listed definition that is not the accepted pin (new or changed, hidden
 * until `pin --accept`) counts only where it is more cautious: a changed tool's pinned
 * definition still counts, and a pending one can raise the level, never lower it.
 */
function serverContentTrust(
  tools: readonly McpToolInfo[],
  identity: string,
  accepted: (tool: string) => PinRecord | undefined,
): ContentTrustLevel {
  let trust: ContentTrustLevel | undefined;
  let pending: ContentTrustLevel | undefined;
  const fold = (level: ContentTrustLevel | undefined, more: ContentTrustLevel | undefined) =>
    more === undefined ? level : level === undefined ? more : moreCautious(level, more);
  for (const tool of tools) {
    const pin = accepted(tool.name);
    const listed = declaredTrust(tool as unknown as Readonly<Record<string, unknown>>);
    if (pin !== undefined && pin.sha256 === definitionDigest(identity, tool)) {
      trust = fold(trust, listed);
      continue;
    }
    if (pin !== undefined) trust = fold(trust, declaredTrust(pinnedAsListed(pin)));
    pending = fold(pending, listed);
  }
  return fold(trust ?? 'untrusted', pending) as ContentTrustLevel;
}

/** The same server through the same client (a read approved on one is still sent through it). */
function sameUpstream(a: PassthroughUpstream, b: PassthroughUpstream): boolean {
  return a.server === b.server && a.client === b.client;
}

/** The risks that make a tool a sink for the flow guard (tools' `FlowGuard`). */
const SINK_RISKS: ReadonlySet<RiskLevel> = new Set<RiskLevel>([
  'external-publication',
  'paid-operation',
  'destructive',
]);

/**
 * The most dangerous sink risk among a server's listed tool definitions (as declared, else as
 * the heuristic reads them) and their accepted pins; `read-only` when none is a sink. A listed
 * definition counts even before it is accepted: what the server can do with data it is sent does
 * not wait for `pin --accept`.
 */
function serverSinkRisk(
  tools: readonly McpToolInfo[],
  accepted: (tool: string) => PinRecord | undefined,
): RiskLevel {
  let risk: RiskLevel = 'read-only';
  const fold = (level: RiskLevel | undefined): void => {
    if (level !== undefined && SINK_RISKS.has(level) && compareRisk(level, risk) > 0) risk = level;
  };
  for (const tool of tools) {
    try {
      fold(readContract(tool as never).contract.risk);
    } catch {
      // A definition whose contract cannot be read is judged by its pin alone.
    }
    fold(accepted(tool.name)?.risk);
  }
  return risk;
}

/**
 * Prompts, resources, resource templates, completions and `instructions` of the upstreams, passed
 * to the downstream clients under the rules tools follow: names are namespaced
 * (`<namespace>__<name>`; resource URIs stay as the servers wrote them), prompts and resource
 * templates are pinned (a changed one is hidden until `toolfence-mcp pin --accept`), and a
 * `prompts/get` or `resources/read` is a read decided by the gateway's policy and audited.
 */
export class GatewayPassthrough {
  readonly #hooks: GatewayPassthroughHooks;
  #upstreams: ReadonlyMap<string, PassthroughUpstream> = new Map();
  #prompts = new Map<string, { readonly upstream: PassthroughUpstream; readonly passed: Passed }>();
  #promptListing: readonly Readonly<Record<string, unknown>>[] = [];
  #templateListing: readonly Readonly<Record<string, unknown>>[] = [];
  #listingKey = '';
  /**
   * Canonical URI → the servers that listed it, each with its own spelling of it, from the last
   * `resources/list` of every upstream.
   */
  #routes = new Map<string, Map<string, string>>();
  /** The legacy downstream connections open (the roots of one of them may be forwarded). */
  readonly #legacy = new Set<Server>();
  /** The downstream whose roots the upstreams were last told of (undefined: none). */
  #rootsFrom: Server | undefined;
  /**
   * Whether a downstream came through a transport shared by several callers (`serve --http`):
   * from then on no downstream's roots reach the upstreams, which serve every caller.
   */
  #shared = false;

  constructor(hooks: GatewayPassthroughHooks) {
    this.#hooks = hooks;
  }

  /**
   * Lists one ready upstream's prompts and resource templates and reviews their pins (`pins`,
   * under the keys `prompt:<server>` and `resource-template:<server>`). A listing that fails is
   * logged and counts as empty; the upstream's tools are not affected.
   */
  async load(input: {
    readonly server: string;
    readonly namespace: string;
    readonly identity: string;
    readonly client: McpClient;
    readonly pins: GatewayPinStore;
    /**
     * The server's tool listing, its pins already reviewed: the content trust of its reads is
     * read from the definitions accepted in `pins` (see serverContentTrust).
     */
    readonly tools: readonly McpToolInfo[];
  }): Promise<{ readonly upstream: PassthroughUpstream; readonly pinsChanged: boolean }> {
    const { server, namespace, identity, client, pins } = input;
    const capabilities = client.serverCapabilities ?? {};
    const hidden = new Map<string, { kind: PinKind; reasons: readonly PinReason[] }>();
    let pinsChanged = false;
    const review = async (
      kind: PinKind,
      entries: readonly Readonly<Record<string, unknown>>[],
    ): Promise<Passed[]> => {
      const key = pinKey(server, kind);
      const decided = await pins.review(key, identity, entries as unknown as McpToolInfo[], kind);
      pinsChanged ||= decided.changed;
      const passed: Passed[] = [];
      for (const entry of entries) {
        const remote = entry.name as string;
        const offered = `${namespace}__${remote}`;
        const reasons = decided.hidden.get(remote);
        if (reasons !== undefined || !decided.visible.has(remote)) {
          hidden.set(offered, { kind, reasons: reasons ?? [] });
          this.#hooks.logger?.warn?.(`A ${kind} is hidden until it is accepted again`, {
            server,
            name: remote,
            reasons: reasons ?? [],
          });
          continue;
        }
        const listed: Record<string, unknown> = { ...entry, name: offered };
        if (typeof entry.description === 'string') {
          listed.description = escapeInvisible(entry.description);
        }
        const uriTemplate = typeof entry.uriTemplate === 'string' ? entry.uriTemplate : undefined;
        let template: CompiledUriTemplate | undefined;
        if (uriTemplate !== undefined) {
          template = compileUriTemplate(uriTemplate);
          // A template that cannot be read, or holds more expressions than a read is matched
          // against, is not offered.
          if (template === undefined) continue;
          const { maxTemplateExpressions } = this.#hooks.limits;
          if (template.expressions > maxTemplateExpressions) {
            this.#hooks.logger?.warn?.(
              'A resource template has more expressions than maxTemplateExpressions; it is left out',
              { server, name: remote, expressions: template.expressions, maxTemplateExpressions },
            );
            continue;
          }
        }
        passed.push({
          offered,
          remote,
          pin: pins.pinOf(key, remote)?.sha256 ?? 'unpinned',
          listed: Object.freeze(listed),
          ...(template === undefined || uriTemplate === undefined ? {} : { template, uriTemplate }),
        });
      }
      return passed;
    };
    const prompts = isRecord(capabilities.prompts)
      ? await this.#list(client, server, 'prompts/list', 'prompts', 'name')
      : [];
    const templates = isRecord(capabilities.resources)
      ? await this.#list(
          client,
          server,
          'resources/templates/list',
          'resourceTemplates',
          'uriTemplate',
        )
      : [];
    const upstream: PassthroughUpstream = {
      server,
      namespace,
      client,
      instructions: client.instructions,
      resources: isRecord(capabilities.resources),
      completions: isRecord(capabilities.completions),
      contentTrust: serverContentTrust(input.tools, identity, (tool) => pins.pinOf(server, tool)),
      sinkRisk: serverSinkRisk(input.tools, (tool) => pins.pinOf(server, tool)),
      prompts: await review('prompt', prompts),
      templates: await review('resource-template', templates),
      hidden,
    };
    return { upstream, pinsChanged };
  }

  /**
   * Makes `upstreams` (the ready ones, by server name) what is offered, and sends
   * `notifications/prompts/list_changed` and `notifications/resources/list_changed` to `servers`
   * when the offered prompts or resource templates changed.
   */
  async commit(
    upstreams: ReadonlyMap<string, PassthroughUpstream>,
    servers: readonly Server[],
  ): Promise<void> {
    this.#upstreams = upstreams;
    const prompts = new Map<string, { upstream: PassthroughUpstream; passed: Passed }>();
    const templates: Readonly<Record<string, unknown>>[] = [];
    for (const upstream of upstreams.values()) {
      for (const passed of upstream.prompts) prompts.set(passed.offered, { upstream, passed });
      for (const passed of upstream.templates) templates.push(passed.listed);
    }
    this.#prompts = prompts;
    const promptListing = [...prompts.keys()]
      .sort()
      .map((name) => (prompts.get(name) as { passed: Passed }).passed.listed);
    const templateListing = templates.sort((a, b) => String(a.name).localeCompare(String(b.name)));
    const promptKey = canonicalJson(promptListing);
    const templateKey = canonicalJson(templateListing);
    const [oldPrompts, oldTemplates] =
      this.#listingKey === '' ? ['', ''] : this.#listingKey.split('\n');
    this.#promptListing = promptListing;
    this.#templateListing = templateListing;
    const first = this.#listingKey === '';
    this.#listingKey = `${promptKey}\n${templateKey}`;
    if (first) return;
    const sends: Promise<unknown>[] = [];
    for (const server of servers) {
      if (oldPrompts !== promptKey)
        sends.push(server.sendPromptListChanged().catch(() => undefined));
      if (oldTemplates !== templateKey) {
        sends.push(server.sendResourceListChanged().catch(() => undefined));
      }
    }
    await Promise.all(sends);
  }

  /** The gateway's sentence, then each ready upstream's `instructions`, labelled and bounded. */
  instructions(): string {
    const { maxInstructionsPerServer, maxInstructionsTotal } = this.#hooks.limits;
    const lines: string[] = [];
    let left = maxInstructionsTotal;
    for (const upstream of [...this.#upstreams.values()].sort((a, b) =>
      a.server.localeCompare(b.server),
    )) {
      if (upstream.instructions === undefined || upstream.instructions.trim() === '') continue;
      if (left <= 0) {
        lines.push('(the instructions of further servers are cut)');
        break;
      }
      const text = printableText(upstream.instructions, Math.min(maxInstructionsPerServer, left));
      left -= Math.min([...upstream.instructions].length, maxInstructionsPerServer, left);
      lines.push(`[server ${upstream.server}, tools ${upstream.namespace}__*] ${text}`);
    }
    if (lines.length === 0) return GATEWAY_INSTRUCTIONS;
    return [
      GATEWAY_INSTRUCTIONS,
      "The upstream servers' own instructions follow, one line each, labelled with the server (their words, not the gateway's):",
      ...lines,
    ].join('\n');
  }

  /**
   * The roots an upstream is given when it asks (`roots/list`): the downstream client's, asked
   * of it now, when exactly one legacy downstream client is connected, it declared `roots`, and
   * no downstream ever came through a shared transport (`serve --http`); otherwise none (an
   * empty list: the upstream keeps its own configured folders). Only
   * `file://` roots are passed. When that client does not answer within `rootsTimeoutMs` (or
   * answers an error), the upstream's `roots/list` is answered an error, not an empty list: its
   * roots are unknown, not none.
   */
  async roots(): Promise<readonly { readonly uri: string; readonly name?: string }[]> {
    const server = this.#rootsOwner();
    if (server === undefined) return [];
    let answer: Awaited<ReturnType<Server['listRoots']>>;
    try {
      answer = await server.listRoots(undefined, {
        timeout: this.#hooks.limits.rootsTimeoutMs,
      });
    } catch {
      throw protocolError(
        'InternalError',
        `The gateway's client did not give its roots within rootsTimeoutMs (${this.#hooks.limits.rootsTimeoutMs} ms), or refused; the roots are unknown`,
      );
    }
    return answer.roots
      .filter((root) => typeof root.uri === 'string' && root.uri.startsWith('file://'))
      .map((root) => ({
        uri: root.uri,
        ...(typeof root.name === 'string' ? { name: root.name } : {}),
      }));
  }

  /**
   * The downstream whose roots the upstreams get: the one legacy client, if it declared roots;
   * never one of a shared transport's callers (one caller's roots would shape the upstreams for
   * all).
   */
  #rootsOwner(): Server | undefined {
    if (this.#shared || this.#legacy.size !== 1) return undefined;
    const [server] = this.#legacy as Set<Server>;
    return server !== undefined && isRecord(server.getClientCapabilities()?.roots)
      ? server
      : undefined;
  }

  /**
   * Tells every ready upstream that asked for roots that they changed, only when they did: the
   * downstream they come from is another (one connected, left, or a second made them none).
   * A connection that does not change whose roots apply sends nothing.
   */
  #ownerMaybeChanged(): void {
    const owner = this.#rootsOwner();
    if (owner === this.#rootsFrom) return;
    this.#rootsFrom = owner;
    this.#rootsChanged();
  }

  /** Tells every ready upstream that asked for roots that they changed. */
  #rootsChanged(): void {
    for (const upstream of this.#upstreams.values()) void upstream.client.notifyRootsChanged();
  }

  /** An upstream said its resources changed: the downstream clients are told at once. */
  async resourcesChanged(servers: readonly Server[]): Promise<void> {
    await Promise.all(
      servers.map((server) => server.sendResourceListChanged().catch(() => undefined)),
    );
  }

  /** A downstream connection ended: its roots no longer apply. */
  detach(server: Server): void {
    if (this.#legacy.delete(server)) this.#ownerMaybeChanged();
  }

  /**
   * Installs the pass-through request handlers on one downstream server. `shared`: it serves one
   * caller of a transport that serves several (`serve --http`); once one is attached, no
   * downstream's roots are given to the upstreams again. `session` names the flow session of a
   * request (the connection's, or its principal's), as for a `tools/call`.
   */
  attach(
    server: Server,
    era: 'legacy' | 'modern',
    shared: boolean,
    session?: (context: ServerContext) => string,
  ): void {
    if (shared && !this.#shared) {
      this.#shared = true;
      this.#ownerMaybeChanged();
    }
    if (era === 'legacy') {
      // Roots: known once the client is initialized; changes are forwarded to the upstreams.
      this.#legacy.add(server);
      this.#ownerMaybeChanged();
      server.oninitialized = () => this.#ownerMaybeChanged();
      // Only the roots of the client they come from matter to the upstreams.
      server.setNotificationHandler('notifications/roots/list_changed', () => {
        if (server === this.#rootsOwner()) this.#rootsChanged();
      });
    }
    const started = async (): Promise<void> => {
      await this.#hooks.started?.();
    };
    server.setRequestHandler('prompts/list', async (_request, context) => {
      await started();
      // A caller with identity sees only the prompts some rule could let them get.
      const principal = principalOfRequest(context);
      const prompts =
        principal === undefined || this.#hooks.observe
          ? this.#promptListing
          : listingFor(this.#promptListing, this.#hooks.authorizer(), principal, (entry) => {
              const found =
                typeof entry.name === 'string' ? this.#prompts.get(entry.name) : undefined;
              return found === undefined
                ? undefined
                : readIdentity(found.upstream, promptReadName(found.passed.remote));
            });
      return (
        principal !== undefined && era === 'modern'
          ? { prompts, cacheScope: 'private' }
          : { prompts }
      ) as never;
    });
    server.setRequestHandler('resources/templates/list', async () => {
      await started();
      return { resourceTemplates: this.#templateListing } as never;
    });
    server.setRequestHandler('resources/list', async (_request, context) => {
      await started();
      const { listed: resources, owners } = await this.#listResources(context.mcpReq.signal);
      // A caller with identity sees only the resources some rule could let them read.
      const principal = principalOfRequest(context);
      return {
        ...(principal !== undefined && era === 'modern' ? { cacheScope: 'private' } : {}),
        resources:
          principal === undefined || this.#hooks.observe
            ? resources
            : listingFor(resources, this.#hooks.authorizer(), principal, (entry) => {
                const owner = owners.get(entry);
                const uri =
                  typeof entry.uri === 'string' ? canonicalResourceUri(entry.uri) : undefined;
                return owner === undefined || uri === undefined
                  ? undefined
                  : readIdentity(owner, resourceReadName(uri));
              }),
      } as never;
    });
    server.setRequestHandler('prompts/get', async (request, context) => {
      await started();
      return this.#getPrompt(
        server,
        era,
        request.params,
        context.mcpReq,
        principalOfRequest(context),
        session?.(context),
      ) as never;
    });
    server.setRequestHandler('resources/read', async (request, context) => {
      await started();
      return this.#readResource(
        server,
        era,
        request.params.uri,
        context.mcpReq,
        principalOfRequest(context),
        session?.(context),
      ) as never;
    });
    server.setRequestHandler('completion/complete', async (request, context) => {
      await started();
      return this.#complete(
        server,
        era,
        request.params as unknown as Record<string, unknown>,
        context.mcpReq,
        principalOfRequest(context),
        session?.(context),
      ) as never;
    });
  }

  // Follows an upstream listing's pagination within the limits; entries without a string
  // `name` (and `key`) are left out, as are repeated names.
  async #list(
    client: McpClient,
    server: string,
    method: string,
    field: string,
    key: string,
  ): Promise<Readonly<Record<string, unknown>>[]> {
    const { maxListPages, maxListItems } = this.#hooks.limits;
    const out: Readonly<Record<string, unknown>>[] = [];
    const names = new Set<string>();
    const cursors = new Set<string>();
    let cursor: string | undefined;
    try {
      for (let page = 0; page < maxListPages; page++) {
        const result = await client.request(method, cursor === undefined ? {} : { cursor });
        const entries = result[field];
        if (Array.isArray(entries)) {
          for (const entry of entries) {
            if (
              !isRecord(entry) ||
              typeof entry.name !== 'string' ||
              typeof entry[key] !== 'string'
            )
              continue;
            if (names.has(entry.name)) continue;
            if (out.length >= maxListItems) {
              this.#hooks.logger?.warn?.(
                'An upstream listing is longer than maxListItems; the rest is left out',
                {
                  server,
                  method,
                  maxListItems,
                },
              );
              return out;
            }
            names.add(entry.name);
            out.push(entry);
          }
        }
        const next = result.nextCursor;
        if (typeof next !== 'string' || next === '' || cursors.has(next)) return out;
        cursors.add(next);
        cursor = next;
      }
      this.#hooks.logger?.warn?.('An upstream listing has more pages than maxListPages', {
        server,
        method,
        maxListPages,
      });
    } catch (error) {
      this.#hooks.logger?.warn?.('An upstream listing failed; it counts as empty', {
        server,
        method,
        code: (error as { code?: unknown } | null)?.code,
      });
    }
    return out;
  }

  // The resources of every upstream (named `<namespace>__<name>`, URIs as the servers wrote them),
  // each with the upstream that listed it; the routes of resources/read are renewed from them.
  async #listResources(signal: AbortSignal): Promise<{
    listed: Readonly<Record<string, unknown>>[];
    owners: Map<Readonly<Record<string, unknown>>, PassthroughUpstream>;
  }> {
    const routes = new Map<string, Map<string, string>>();
    const listed: Readonly<Record<string, unknown>>[] = [];
    const owners = new Map<Readonly<Record<string, unknown>>, PassthroughUpstream>();
    const upstreams = [...this.#upstreams.values()].filter((upstream) => upstream.resources);
    const listings = await Promise.all(
      upstreams.map((upstream) =>
        this.#list(upstream.client, upstream.server, 'resources/list', 'resources', 'uri'),
      ),
    );
    signal.throwIfAborted();
    for (const [index, upstream] of upstreams.entries()) {
      for (const entry of listings[index] ?? []) {
        const uri = entry.uri as string;
        // Routed by its canonical form (a URI that has none cannot be read through the gateway).
        const canonical = canonicalResourceUri(uri);
        if (canonical !== undefined) {
          const servers = routes.get(canonical) ?? new Map<string, string>();
          if (!servers.has(upstream.server)) servers.set(upstream.server, uri);
          routes.set(canonical, servers);
        }
        const offered = Object.freeze({
          ...entry,
          name: `${upstream.namespace}__${entry.name as string}`,
          ...(typeof entry.description === 'string'
            ? { description: escapeInvisible(entry.description) }
            : {}),
        });
        listed.push(offered);
        owners.set(offered, upstream);
      }
    }
    this.#routes = routes;
    return { listed, owners };
  }

  /**
   * The upstreams that may serve the canonical URI `uri`, each with the spelling it is sent: the
   * ones that listed it (their own spelling, which has this canonical form), else the ones whose
   * template matches it (the canonical form).
   */
  #candidates(uri: string): {
    upstreams: { readonly upstream: PassthroughUpstream; readonly sent: string }[];
    template?: Passed;
  } {
    const listedBy = this.#routes.get(uri);
    if (listedBy !== undefined) {
      const upstreams = [];
      for (const [name, sent] of listedBy) {
        const upstream = this.#upstreams.get(name);
        if (upstream !== undefined) upstreams.push({ upstream, sent });
      }
      if (upstreams.length > 0) return { upstreams };
    }
    const matched: { upstream: PassthroughUpstream; sent: string }[] = [];
    let template: Passed | undefined;
    // Each match is linear, but an upstream may list many templates: the work of one read is
    // bounded as a whole (a template's steps times the URI's length, counted before matching).
    const { maxTemplateMatchWork } = this.#hooks.limits;
    let work = 0;
    const matches = (compiled: CompiledUriTemplate): boolean => {
      work += compiled.steps.length * (uri.length + 1);
      if (work > maxTemplateMatchWork) {
        throw refusal(
          'GATEWAY_RESOURCE_MATCH_LIMIT',
          `Matching the resource URI ${printableText(uri, 200)} against the upstreams' resource templates takes more than the ${maxTemplateMatchWork} steps the gateway spends on one read (passthrough.maxTemplateMatchWork), so it read nothing. Use a URI that resources/list gives, or a shorter one.`,
          { maxTemplateMatchWork },
        );
      }
      return uriTemplateMatches(compiled, uri);
    };
    for (const upstream of this.#upstreams.values()) {
      const hit = upstream.templates.find(
        (passed) => passed.template !== undefined && matches(passed.template),
      );
      if (hit !== undefined) {
        matched.push({ upstream, sent: uri });
        template ??= hit;
      }
    }
    return template === undefined ? { upstreams: matched } : { upstreams: matched, template };
  }

  async #readResource(
    server: Server,
    era: 'legacy' | 'modern',
    given: string,
    request: ServerContext['mcpReq'],
    principal?: Principal,
    session?: string,
  ): Promise<Record<string, unknown>> {
    // The policy judges, the audit names and the upstream receives one spelling of the URI: a
    // rule on `file:///home/u/secret/*` then covers `file:///home/u/./secret/key` too.
    const { maxReadUriChars } = this.#hooks.limits;
    if (given.length > maxReadUriChars) {
      throw refusal(
        'GATEWAY_RESOURCE_URI_TOO_LONG',
        `The resource URI ${printableText(given, 200)} is ${given.length} characters, over the ${maxReadUriChars} the gateway reads (passthrough.maxReadUriChars), so it read nothing.`,
        { maxReadUriChars },
      );
    }
    const uri = canonicalResourceUri(given);
    if (uri === undefined) {
      throw refusal(
        'GATEWAY_RESOURCE_URI_INVALID',
        `The resource URI ${printableText(given, 200)} is not a valid URI (or, for file:, its path holds an escaped "/", backslash or NUL), so the gateway read nothing. Use the URI as resources/list or a template of resources/templates/list gives it.`,
        { uri: given },
      );
    }
    let found = this.#candidates(uri);
    if (found.upstreams.length === 0) {
      await this.#listResources(request.signal);
      found = this.#candidates(uri);
    }
    if (found.upstreams.length === 0) {
      throw refusal(
        'GATEWAY_RESOURCE_NOT_FOUND',
        `No upstream server listed the resource ${printableText(uri, 200)} or offers a template that matches it (see resources/list and resources/templates/list).`,
        { uri },
      );
    }
    if (found.upstreams.length > 1) {
      const servers = found.upstreams.map(({ upstream }) => upstream.server).sort();
      throw refusal(
        'GATEWAY_RESOURCE_AMBIGUOUS',
        `The resource ${printableText(uri, 200)} is offered by several upstream servers (${servers.join(', ')}), so the gateway cannot tell which one to read; it read none.`,
        { uri, servers },
      );
    }
    const { upstream, sent } = found.upstreams[0] as {
      upstream: PassthroughUpstream;
      sent: string;
    };
    const args = { uri };
    return this.#governed(
      server,
      era,
      request,
      {
        kind: 'resource',
        own: resourceReadName(uri),
        args,
        pin: found.template?.pin ?? 'unpinned',
        upstream,
        principal,
        description: `Read the resource ${uri} of server ${upstream.server}`,
        // A URI the server listed carries nothing of the client's; a template's expansion does.
        ...(found.template === undefined ? {} : { session }),
        // Still this server's alone, as listed or by the same template.
        stillOffered: async () => {
          let now = this.#candidates(uri);
          if (now.upstreams.length === 0) {
            await this.#listResources(request.signal);
            now = this.#candidates(uri);
          }
          const only = now.upstreams.length === 1 ? now.upstreams[0] : undefined;
          return (
            only !== undefined &&
            sameUpstream(only.upstream, upstream) &&
            only.sent === sent &&
            now.template?.pin === found.template?.pin
          );
        },
      },
      async () => ({
        contents: await upstream.client.readResource(sent, { signal: request.signal }),
      }),
    );
  }

  async #getPrompt(
    server: Server,
    era: 'legacy' | 'modern',
    params: { readonly name: string; readonly arguments?: Record<string, string> | undefined },
    request: ServerContext['mcpReq'],
    principal?: Principal,
    session?: string,
  ): Promise<Record<string, unknown>> {
    const target = this.#prompts.get(params.name);
    if (target === undefined) throw this.#unknown('prompt', params.name);
    const { upstream, passed } = target;
    const args = (params.arguments ?? {}) as JsonObject;
    return this.#governed(
      server,
      era,
      request,
      {
        kind: 'prompt',
        own: promptReadName(passed.remote),
        args,
        pin: passed.pin,
        upstream,
        principal,
        description:
          typeof passed.listed.description === 'string'
            ? passed.listed.description
            : `Prompt ${passed.remote} of server ${upstream.server}`,
        // Arguments are the client's data; a prompt without them carries none.
        ...(Object.keys(args).length === 0 ? {} : { session }),
        // Still listed under this name, by the same server, with the same pin.
        stillOffered: () => {
          const now = this.#prompts.get(params.name);
          return (
            now !== undefined &&
            sameUpstream(now.upstream, upstream) &&
            now.passed.remote === passed.remote &&
            now.passed.pin === passed.pin
          );
        },
      },
      async () => {
        const result = await upstream.client.request('prompts/get', {
          name: passed.remote,
          ...(params.arguments === undefined ? {} : { arguments: params.arguments }),
        });
        if (!Array.isArray(result.messages)) {
          throw refusal(
            'GATEWAY_UPSTREAM_MALFORMED',
            `The server ${upstream.server} answered prompts/get without a messages list.`,
          );
        }
        return { ...result };
      },
    );
  }

  #unknown(kind: 'prompt' | 'resource-template', name: string): ProtocolError {
    for (const upstream of this.#upstreams.values()) {
      const hidden = upstream.hidden.get(name);
      if (hidden === undefined || hidden.kind !== kind) continue;
      if (hidden.reasons.includes('definition-too-large')) {
        return refusal(
          'GATEWAY_DEFINITION_HIDDEN',
          `The ${kind} ${printableText(name, 200)} is hidden because its definition is larger than the pin store's maxDefinitionBytes, so it was neither pinned nor kept for review and cannot be accepted; the gateway's operator may raise maxDefinitionBytes if the server is trusted.`,
          { name, reasons: hidden.reasons },
        );
      }
      return refusal(
        'GATEWAY_DEFINITION_HIDDEN',
        `The ${kind} ${printableText(name, 200)} is hidden because its definition is new or changed since it was pinned (${hidden.reasons.join(', ')}); a person can review it with "toolfence-mcp pin --show" and accept it with "toolfence-mcp pin --accept ${name}@<digest>" (the token --show prints).`,
        { name, reasons: hidden.reasons },
      );
    }
    return refusal(
      'GATEWAY_DEFINITION_NOT_FOUND',
      `No upstream server offers the ${kind} ${printableText(name, 200)} (see ${kind === 'prompt' ? 'prompts/list' : 'resources/templates/list'}).`,
      { name },
    );
  }

  /**
   * A `completion/complete`: sent to the server of the referenced prompt or resource template
   * only as the read of that definition would be (the policy's decision on
   * `<namespace>__prompt:<name>` or `<namespace>__resource:<uri template>`, then the flow guard:
   * its values are the client's data), never asked of the user, and audited (`kind`
   * `completion`). Only `ref`, `argument` and `context.arguments` are forwarded: the client's
   * `_meta` (a progress token, any other key) stays at the gateway.
   */
  async #complete(
    server: Server,
    era: 'legacy' | 'modern',
    params: Record<string, unknown>,
    request: ServerContext['mcpReq'],
    principal?: Principal,
    session?: string,
  ): Promise<Record<string, unknown>> {
    const ref = isRecord(params.ref) ? params.ref : {};
    let upstream: PassthroughUpstream | undefined;
    let passed: Passed | undefined;
    let forwarded: Record<string, unknown>;
    let own: string;
    if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
      const target = this.#prompts.get(ref.name);
      if (target === undefined) throw this.#unknown('prompt', ref.name);
      ({ upstream, passed } = target);
      forwarded = { type: 'ref/prompt', name: passed.remote };
      own = promptReadName(passed.remote);
    } else if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
      const uri = ref.uri;
      const owners = [...this.#upstreams.values()].filter((candidate) =>
        candidate.templates.some((template) => template.uriTemplate === uri),
      );
      if (owners.length > 1) {
        const servers = owners.map((owner) => owner.server).sort();
        throw refusal(
          'GATEWAY_RESOURCE_AMBIGUOUS',
          `The resource template ${printableText(uri, 200)} is offered by several upstream servers (${servers.join(', ')}); the gateway cannot tell which one completes it.`,
          { uri, servers },
        );
      }
      upstream = owners[0];
      if (upstream === undefined) throw this.#unknown('resource-template', uri);
      passed = upstream.templates.find((template) => template.uriTemplate === uri);
      forwarded = { type: 'ref/resource', uri };
      own = resourceReadName(uri);
    } else {
      throw refusal(
        'GATEWAY_COMPLETION_REF',
        'completion/complete needs ref {type:"ref/prompt", name} or {type:"ref/resource", uri}.',
      );
    }
    if (!upstream.completions) return { completion: { values: [] } };
    const argument = isRecord(params.argument)
      ? { name: params.argument.name, value: params.argument.value }
      : {};
    const context =
      isRecord(params.context) && params.context.arguments !== undefined
        ? { arguments: params.context.arguments }
        : undefined;
    const args = (context === undefined ? { argument } : { argument, context }) as JsonObject;
    const target = upstream;
    return this.#governed(
      server,
      era,
      request,
      {
        kind: 'completion',
        own,
        args,
        pin: passed?.pin ?? 'unpinned',
        upstream: target,
        principal,
        description: `Completions of ${own} of server ${target.server}`,
        // The value typed so far and the other arguments are the client's data.
        session,
        // A completion is never put to the user, so never checked again.
        stillOffered: () => true,
      },
      async () => {
        const result = await target.client.request('completion/complete', {
          ref: forwarded,
          ...args,
        });
        return isRecord(result.completion) ? { ...result } : { completion: { values: [] } };
      },
    );
  }

  #upstreamFailure(upstream: PassthroughUpstream, method: string, error: unknown): ProtocolError {
    if (error instanceof serverSdk().ProtocolError) return error;
    if (ResourceNotFoundError.isInstance(error)) {
      return refusal(
        'GATEWAY_RESOURCE_NOT_FOUND',
        `The server ${upstream.server} has no such resource.`,
      );
    }
    const code = (error as { code?: unknown } | null)?.code;
    const said =
      ServerRpcError.isInstance(error) && error.serverMessage !== undefined
        ? ` The server said: "${error.serverMessage}"`
        : '';
    return protocolError(
      'InternalError',
      `The server ${upstream.server} failed ${method} (${typeof code === 'string' ? code : 'unknown'}).${said}`,
      { code: 'GATEWAY_UPSTREAM_FAILED', server: upstream.server },
    );
  }

  // A prompts/get, resources/read or completion/complete: the policy decides it as a read (risk
  // `read-only`, the server's content trust); one that carries the client's data to the server
  // (`session` given) is then judged by the flow guard as a call to that server; an `ask` is put
  // to a legacy client that declared form elicitation (never for a completion), and the outcome
  // is audited with its own `kind`.
  async #governed(
    server: Server,
    era: 'legacy' | 'modern',
    request: ServerContext['mcpReq'],
    given: {
      readonly kind: 'prompt' | 'resource' | 'completion';
      /**
       * The read's name on its server: `prompt:<name>` or `resource:<canonical uri>`; for a
       * completion, the name of the prompt or resource template it completes.
       */
      readonly own: string;
      readonly args: JsonObject;
      readonly pin: string;
      readonly upstream: PassthroughUpstream;
      readonly description: string;
      /** The caller (with gateway.httpAuth). */
      readonly principal?: Principal | undefined;
      /**
       * The flow session of a request that carries the client's data to the server (prompt
       * arguments, a URI the server did not list, a completion's values): the flow guard judges
       * it. Absent: the request carries nothing of the client's, and the guard is not asked.
       */
      readonly session?: string | undefined;
      /**
       * Whether the read is still offered as it was when it came (its prompt still listed with the
       * same pin; its resource still found on the same server), asked after an approval.
       */
      readonly stillOffered: () => boolean | Promise<boolean>;
    },
    run: () => Promise<Record<string, unknown>>,
  ): Promise<Record<string, unknown>> {
    // The policy sees the offered name and, like a tool's, the origin: the server and the read's
    // own name, so a rule with `server` covers that server's prompts and resources too.
    const read = { ...given, ...readIdentity(given.upstream, given.own) };
    const judged = read.session !== undefined && this.#hooks.flow?.guard !== undefined;
    const base = {
      time: isoTime(Date.now()),
      kind: read.kind,
      tool: read.name,
      pin: read.pin,
      argumentsDigest: digestOf(read.args),
      ...(read.principal === undefined
        ? {}
        : { principal: { issuer: read.principal.issuer, subject: read.principal.subject } }),
      ...(judged && read.session !== undefined ? { session: read.session } : {}),
    } as const;
    const method =
      read.kind === 'prompt'
        ? 'prompts/get'
        : read.kind === 'resource'
          ? 'resources/read'
          : 'completion/complete';
    // Names come from the servers (and a URI from the client): escaped wherever they are shown.
    const shown = printableText(read.name, 300);
    const policy = await this.#decide(read, request.signal);
    const observe = this.#hooks.observe;
    const flow = judged ? this.#flowCheck(read, policy.verdict) : undefined;
    const verdict = raisedVerdict(policy.verdict, flow, observe);
    const flowed = flow === undefined ? {} : { flow: auditFlow(flow) };
    // The raise that decided, when the guard (enforcing) raised the policy's verdict.
    const raise = flow?.enforced && verdict === flow.verdict ? flow : undefined;
    let approvedBy: 'user' | undefined;
    if (!observe && verdict !== 'allow') {
      let outcome = 'denied';
      let tooLong = 0;
      if (verdict === 'ask') {
        if (read.kind !== 'completion' && era === 'legacy' && this.#hooks.canAsk(server)) {
          // The prompt of a call: the arguments whole and every name escaped, or nobody asked.
          const prompt = approvalPrompt(
            {
              toolName: read.name,
              args: read.args,
              reason: policy.reason,
              ...(raise === undefined ? {} : { flow: raise }),
              spec: { description: read.description },
            },
            read.upstream.server,
            this.#hooks.approvalMaxArgumentChars,
            read.kind,
          );
          if ('tooLong' in prompt) {
            outcome = 'prompt-too-long';
            tooLong = prompt.tooLong;
          } else {
            const approved = await request
              .elicitInput(
                { message: prompt.message, requestedSchema: APPROVAL_SCHEMA as never },
                { signal: request.signal },
              )
              .then(
                (answer) => answer.action === 'accept' && answer.content?.approve === true,
                () => false,
              );
            if (approved) approvedBy = 'user';
            else outcome = 'declined';
          }
        } else {
          outcome = 'no-approval-channel';
        }
      }
      if (approvedBy === undefined) {
        await this.#hooks.audit({ ...base, decision: verdict, outcome, ...flowed });
        const why = policy.reason === undefined ? '' : ` (${printableText(policy.reason, 200)})`;
        throw protocolError(
          'InvalidRequest',
          raise !== undefined && (outcome === 'denied' || outcome === 'no-approval-channel')
            ? this.#flowText(method, shown, read.upstream.server, raise, outcome)
            : outcome === 'denied'
              ? `${method} of ${shown} is denied by the gateway's policy${why}, so it was not sent.`
              : outcome === 'declined'
                ? `${method} of ${shown} was not approved by the user, so it was not sent.`
                : outcome === 'prompt-too-long'
                  ? `The gateway's policy asks a person before ${method} of ${shown}${why}, but its arguments are ${tooLong} characters as shown, over the ${this.#hooks.approvalMaxArgumentChars} an approval prompt shows whole (gateway.approvalMaxArgumentChars), so nobody was asked and it was not sent: the gateway never asks approval for what the user cannot see. Send it with shorter arguments, or allow it in the gateway's policy file.`
                  : read.kind === 'completion'
                    ? `The gateway's policy asks a person before reading ${shown}${why}; its completions are never put to the user, so ${method} was not sent. Allow it in the policy instead.`
                    : `The gateway's policy asks a person before ${method} of ${shown}${why}, and this client cannot be asked (it declared no form elicitation, or speaks 2026-07-28 where reads are not asked); allow it in the policy instead.`,
          { code: 'GATEWAY_READ_REFUSED', outcome },
        );
      }
    }
    if (approvedBy !== undefined) {
      // Checked again when the answer comes, as a call's: the prompt may have waited for minutes.
      const refused = await this.#stillAsked(read, request.signal);
      if (refused !== undefined) {
        await this.#hooks.audit({
          ...base,
          decision: refused.outcome === 'pin-changed' ? verdict : 'deny',
          approvedBy,
          outcome: refused.outcome,
          ...(refused.flow === undefined ? flowed : { flow: auditFlow(refused.flow) }),
        });
        throw protocolError(
          'InvalidRequest',
          refused.outcome === 'pin-changed'
            ? `${method} of ${shown} was approved, but it changed while it waited for the approval (server ${printableText(read.upstream.server, 100)} no longer offers it as it did when the user was asked), so it was not sent. List the prompts or resources again.`
            : refused.flow !== undefined
              ? `${method} of ${shown} was approved, but while it waited for the approval ${flowChain(refused.flow)}, and it carries data to server ${printableText(read.upstream.server, 100)}, so it could leak that private data: the gateway's flow guard denies it and it was not sent. Continue without it, start a new conversation, or ask the user to permit this flow in the gateway's policy file.`
              : `${method} of ${shown} was approved, but the gateway's policy changed while it waited for the approval and now denies it (${refused.reason === undefined || refused.reason === '' ? 'no reason given' : printableText(refused.reason, 200)}), so it was not sent.`,
          { code: 'GATEWAY_READ_REFUSED', outcome: refused.outcome },
        );
      }
    }
    const decided = {
      ...base,
      decision: verdict,
      ...(approvedBy === undefined ? {} : { approvedBy }),
      ...flowed,
    } as const;
    // No line, no read: the `started` line is on disk before the request may leave, as a call's.
    try {
      await this.#hooks.auditStarted({
        ...decided,
        outcome: 'started',
        ...(observe ? { observed: true } : {}),
      });
    } catch (error) {
      await this.#hooks.audit({ ...decided, outcome: 'audit-failed' });
      const code = AuditLogError.isInstance(error) ? error.code : 'AUDIT_WRITE_FAILED';
      throw protocolError(
        'InternalError',
        `${method} of ${shown} was not sent: the gateway could not write it to its audit log (${code}), and it sends no read it cannot record. The gateway's operator must check the log (toolfence-mcp audit verify) and restart the gateway.`,
        { code: 'GATEWAY_READ_REFUSED', outcome: 'audit-failed', audit: code },
      );
    }
    try {
      const result = await run();
      await this.#hooks.audit({
        ...decided,
        outcome: observe && verdict !== 'allow' ? 'observed' : 'ok',
        resultDigest: digestOf(result),
        ...(observe ? { observed: true } : {}),
      });
      return result;
    } catch (error) {
      await this.#hooks.audit({ ...decided, outcome: 'failed' });
      throw this.#upstreamFailure(read.upstream, method, error);
    }
  }

  /**
   * The flow guard's raise for a request that carries the client's data to a server, judged as a
   * call to a tool of that server named as the read is (`<namespace>__prompt:<name>`, origin
   * `{ server, tool: "prompt:<name>" }`) whose risk is the server's {@link PassthroughUpstream.sinkRisk}:
   * a sink when the server offers a sink tool or `flow.sinks` names it; `flow.notSinks` and
   * `flow.permit` name it the same way.
   */
  #flowCheck(
    read: {
      readonly name: string;
      readonly origin: ToolOrigin;
      readonly upstream: PassthroughUpstream;
      readonly description: string;
      readonly session?: string | undefined;
    },
    verdict: PermissionDecision['verdict'],
  ): FlowRaise | undefined {
    const guard = this.#hooks.flow?.guard;
    if (guard === undefined || read.session === undefined) return undefined;
    const contract: ToolContract = Object.freeze({
      risk: read.upstream.sinkRisk,
      contentTrust: read.upstream.contentTrust,
      idempotent: true,
      version: '1.0.0',
      aliases: [],
    });
    const flow = guard.check(
      read.session,
      Object.freeze({
        name: read.name,
        origin: read.origin,
        description: read.description,
        inputSchema: { type: 'object' },
        contract,
      }) as never,
      verdict,
      contract,
    );
    if (flow !== undefined && !flow.enforced) {
      // Observe mode: the request goes; say what the guard would have done (names only).
      const { verdict: would, ...labels } = auditFlow(flow);
      this.#hooks.logger?.warn?.('The flow guard observed a read it would raise', {
        tool: read.name,
        would,
        ...labels,
      });
    }
    return flow;
  }

  /** Why the flow guard stopped a read or completion, naming the flow and the server. */
  #flowText(
    method: string,
    shown: string,
    server: string,
    flow: FlowRaise,
    outcome: string,
  ): string {
    const permit =
      'permit this flow in the gateway\'s policy file (--policy: "flow": {"permit": [{"from": SOURCE, "to": {"server": "' +
      printableText(server, 100) +
      '"}}]})';
    return outcome === 'denied'
      ? `${method} of ${shown} is denied by the gateway's flow guard: it carries data to server ${printableText(server, 100)}, and ${flowChain(flow)}, so it could leak that private data and was not sent. Continue without it, start a new conversation, or ask the user to ${permit}.`
      : `${method} of ${shown} needs the user's approval because it carries data to server ${printableText(server, 100)}, and ${flowChain(flow)}, but this client cannot be asked (it declared no form elicitation, speaks 2026-07-28 where reads are not asked, or this is a completion, which is never asked), so it was not sent and nobody was asked. Ask the user to ${permit}.`;
  }

  /**
   * After a person approved a read, which may have waited for minutes: it must still be offered as
   * it was (else `pin-changed`); the policy in force now must not deny it (a reload while the
   * prompt waited: `denied`, with its reason); and, for a read the flow guard judges, the guard
   * asked again for the same session and server must not deny it (a private or untrusted result
   * that landed meanwhile: `denied`, with the raise). An `ask` now is covered by the answer just
   * given. Undefined: the read goes.
   */
  async #stillAsked(
    read: {
      readonly name: string;
      readonly origin: ToolOrigin;
      readonly args: JsonObject;
      readonly upstream: PassthroughUpstream;
      readonly description: string;
      readonly principal?: Principal | undefined;
      readonly session?: string | undefined;
      readonly stillOffered: () => boolean | Promise<boolean>;
    },
    signal: AbortSignal,
  ): Promise<
    | {
        readonly outcome: 'pin-changed' | 'denied';
        readonly reason?: string;
        readonly flow?: FlowRaise;
      }
    | undefined
  > {
    if (!(await read.stillOffered())) return { outcome: 'pin-changed' };
    const now = await this.#decide(read, signal);
    if (now.verdict === 'deny') {
      return { outcome: 'denied', ...(now.reason === undefined ? {} : { reason: now.reason }) };
    }
    const flow = this.#flowCheck(read, now.verdict);
    if (flow?.enforced === true && flow.verdict === 'deny') return { outcome: 'denied', flow };
    return undefined;
  }

  async #decide(
    read: {
      readonly name: string;
      readonly origin: ToolOrigin;
      readonly args: JsonObject;
      readonly upstream: PassthroughUpstream;
      readonly description: string;
      readonly principal?: Principal | undefined;
    },
    signal: AbortSignal,
  ): Promise<PermissionDecision> {
    const contract: ToolContract = Object.freeze({
      risk: 'read-only',
      contentTrust: read.upstream.contentTrust,
      idempotent: true,
      version: '1.0.0',
      aliases: [],
    });
    try {
      const decision = await this.#hooks.authorizer().authorize({
        toolName: read.name,
        args: Object.freeze({ ...read.args }),
        context: createToolContext({
          runId: nextRunId(),
          signal,
          ...(read.principal === undefined
            ? {}
            : { metadata: { [PRINCIPAL_METADATA_KEY]: read.principal as unknown as JsonObject } }),
        }),
        spec: Object.freeze({
          name: read.name,
          origin: read.origin,
          description: read.description,
          inputSchema: { type: 'object' },
          contract,
          effect: 'read',
        }),
        contract,
        effect: 'read',
      });
      return isPermissionDecision(decision) ? decision : MALFORMED;
    } catch {
      return Object.freeze({ verdict: 'deny', reason: 'authorizer-failed' });
    }
  }
}
