import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type {
  AuthInfo,
  CallToolResult,
  inputRequired,
  Server,
  ServerContext,
  Transport,
} from '@modelcontextprotocol/server';
import {
  type ApprovalRequest,
  type AuthorizationRequest,
  type Authorizer,
  type BudgetReserver,
  checkOptionKeys,
  createToolContext,
  errorResult,
  type FlowRaise,
  type FlowSessionLabels,
  isPermissionDecision,
  type JsonObject,
  type PermissionDecision,
  PRINCIPAL_METADATA_KEY,
  type Principal,
  type SameJsonValueOptions,
  sameJsonValue,
  type Tool,
  type ToolContext,
  type ToolIdentity,
  ToolRegistry,
  type ToolResult,
  ToolsError,
} from '@toolfence/tools/core';
import type { BridgedTool } from '../bridge/bridge-tools.js';
import { sharedValidator, warmSharedValidator } from '../bridge/shared-validator.js';
import type { McpClient, McpClientOptions } from '../client/mcp-client.js';
import type { McpToolInfo } from '../client/tool-listing.js';
import { isRecord } from '../is-record.js';
import type { AllowNonPublic } from '../oauth/http.js';
import { printableText } from '../printable-text.js';
import { giveEarlyProcess } from '../transport/early-stdio-process.js';
import type { McpBridgeLogger } from '../transport/logger.js';
import { VERSION } from '../version.js';
import { ApprovalGrants, type ApprovalRefusal } from './approval-grants.js';
import { type ApprovalInbox, inboxAsk } from './approval-inbox.js';
import {
  type ApprovalPrompt,
  approvalPrompt,
  DEFAULT_APPROVAL_MAX_ARGUMENT_CHARS,
  flowChain,
} from './approval-prompt.js';
import {
  type ApprovalSpentStore,
  DEFAULT_MAX_SPENT_APPROVALS,
  MemorySpentApprovals,
} from './approval-spent-store.js';
import { AUDIT_TEXT_MAX_CHARS, type AuditEntry, type AuditLog, auditText } from './audit-log.js';
import { AuditLogError } from './audit-log-error.js';
import { canonicalJson, digestOf } from './canonical-json.js';
import { EarlyUpstreams } from './early-upstreams.js';
import { GatewayConfigError } from './errors.js';
import {
  type FastCallHandler,
  type FastCallOutcome,
  FastCallTransport,
} from './fast-call-transport.js';
import type { GatewayFlowSettings } from './flow-config.js';
import {
  auditFlow,
  connectionSession,
  GatewayFlow,
  principalSession,
  raisedVerdict,
} from './flow-session.js';
import {
  DEFAULT_APPROVAL_TIMEOUT_MS,
  DEFAULT_LIST_WAIT_MS,
  DEFAULT_MAX_CONCURRENT_CALLS,
  DEFAULT_START_TIMEOUT_MS,
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
import { CallerClients } from './identity/caller-clients.js';
import { type CallerToken, callerTokenOfRequest } from './identity/caller-token.js';
import type { ExchangedTokens } from './identity/exchanged-tokens.js';
import { approvalPrincipal, principalOfRequest } from './identity/gateway-principal.js';
import { listingFor } from './identity/listing-filter.js';
import {
  GatewayCallerCredentialError,
  GatewayTokenExchangeError,
} from './identity/upstream-credential-error.js';
import {
  DEFAULT_EXCHANGE_CALLER_CLIENT_IDLE_MS,
  DEFAULT_EXCHANGE_MAX_CALLER_CLIENTS,
} from './identity/upstream-credentials.js';
import { InitializeGate } from './initialize-gate.js';
import { isoTime } from './iso-time.js';
import {
  definitionDigest,
  escapeInvisible,
  type GatewayPinStore,
  type PinReason,
  type PinRecord,
} from './pin-store.js';
import { modernCallToolResult, type PlainToolsCall } from './plain-tools-call.js';
import { nextRunId } from './run-id.js';
import {
  ApprovalSeal,
  type ApprovalSealKeys,
  DEFAULT_MAX_REQUEST_STATE_CHARS,
} from './sealed-approval.js';
import { loadedServerSdk, loadServerSdk, serverSdk } from './server-sdk.js';
import type { CallRoute } from './traced-client.js';
import { describeUpstreamFailure, type UpstreamFailure } from './upstream-failure.js';
import { type TracedClientClass, upstreamModules } from './upstream-modules.js';
import { StartGate, withStartTimeout } from './upstream-start.js';

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
  /**
   * Where each call is recorded. `start()` opens it (a log that does not match its head stops the
   * start); a call runs only after its `started` line is written.
   */
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
   * @deprecated Approvals are sealed into `requestState`, not held by the gateway: accepted
   * (1 to 1,000,000) and without effect. Removed in the next minor.
   */
  readonly maxPendingApprovals?: number;
  /**
   * The keys sealing approvals into `requestState` (AES-256-GCM), shared by the replicas; the
   * previous ones only open (rotation). Default: a random key of this gateway (an approval it
   * asked is honoured by it alone). See `sealKeysOf`.
   */
  readonly sealKeys?: ApprovalSealKeys;
  /**
   * Where approvals are recorded as spent, so each is honoured once across the replicas (Redis,
   * PostgreSQL). Default: this gateway's memory, at most `maxSpentApprovals` entries. The
   * caller closes it.
   */
  readonly approvalStore?: ApprovalSpentStore;
  /**
   * Spent approvals the default memory store remembers until they expire; one more is refused
   * (fails closed). Default 100,000.
   */
  readonly maxSpentApprovals?: number;
  /** Longest `requestState` opened, in characters; longer is refused as forged. Default 4,096. */
  readonly maxRequestStateChars?: number;
  /**
   * Characters of arguments (pretty-printed JSON, escaped) an approval prompt shows whole; an
   * `ask` over it is refused without asking (`prompt-too-long`), never shown in part. Default:
   * the config's `approvalMaxArgumentChars`, else 8,192.
   */
  readonly approvalMaxArgumentChars?: number;
  /** Limits of prompts, resources and `instructions` passed through (see `GatewayPassthroughOptions`). */
  readonly passthrough?: GatewayPassthroughOptions;
  /**
   * Where an `ask` goes that the client cannot put to its user (no elicitation): it waits there
   * for a person (the web console) up to the approval timeout instead of being refused; asks the
   * client puts to its user are listed there too. Default none (such an ask is refused).
   */
  readonly approvalInbox?: ApprovalInbox;
  /**
   * The flow guard (the policy file's `flow` section), kept per downstream session: on by
   * default; `{ enabled: false }` turns it off. Observe mode makes it observe. Default `{}`.
   */
  readonly flow?: GatewayFlowSettings;
  /**
   * Non-public addresses the token exchanges of servers with `credentials` may reach (the
   * network guard's rule, as `allowNonPublic` of the OAuth functions). Default none: public only.
   */
  readonly tokenExchangeAllowNonPublic?: AllowNonPublic;
  /**
   * Longest name a `tools/call` may give, in characters, unless it is an offered tool's: a longer
   * one is refused before anything else (the client is told the limit; audit outcome
   * `name-too-long`, the name written as `auditText` bounds it). From 1 to 1,000,000; default
   * `DEFAULT_MAX_TOOL_NAME_CHARS` (512).
   */
  readonly maxToolNameChars?: number;
}

/**
 * The default of {@link McpGatewayOptions.maxToolNameChars}: 512 characters, room for MCP's
 * 128-character tool names behind a namespace and more.
 */
export const DEFAULT_MAX_TOOL_NAME_CHARS = 512;

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
  'sealKeys',
  'approvalStore',
  'maxSpentApprovals',
  'maxRequestStateChars',
  'approvalMaxArgumentChars',
  'passthrough',
  'approvalInbox',
  'flow',
  'tokenExchangeAllowNonPublic',
  'maxToolNameChars',
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

/** Options of {@link McpGateway.connect}. */
export interface GatewayConnectOptions {
  /**
   * Serve plain `tools/call` requests without the SDK server's per-message checks (their
   * answers are the same; see the README's gateway section). Default true; false sends every
   * message through the SDK server.
   */
  readonly plainCallFastPath?: boolean | undefined;
}

/** The keys {@link McpGateway.connect} accepts. */
const CONNECT_OPTION_KEYS: readonly string[] = Object.freeze(['plainCallFastPath']);

/** A {@link GatewayConfigError} naming the bad option. */
function gatewayOptionError(message: string, option: string): GatewayConfigError {
  return new GatewayConfigError(message, { details: { option } });
}

/** The era a downstream connection speaks: `modern` (2026-07-28, stateless) or `legacy`. */
export type GatewayEra = 'legacy' | 'modern';

/** What the gateway knows about one upstream after start. */
export interface GatewayUpstreamStatus {
  /** The server's name in the config. */
  readonly name: string;
  /**
   * `ready`; `starting` (its first load has not settled: its tools are offered, and announced
   * with `list_changed`, once it is ready); or `failed` (its tools are absent; the others work).
   */
  readonly state: 'ready' | 'starting' | 'failed';
  /** Offered tool names. */
  readonly tools: readonly string[];
  /** Remote names hidden until `toolfence-mcp pin --accept`, with the reasons. */
  readonly hidden: Readonly<Record<string, readonly PinReason[]>>;
  /** For a failed upstream: the error code. */
  readonly error?: string;
  /** For a failed upstream: why, with the process's exit code and stderr tail when it exited. */
  readonly failure?: UpstreamFailure;
  /** The protocol version the upstream speaks (its era), once connected. */
  readonly protocolVersion?: string;
}

/** What {@link McpGateway.reload} applies. */
export interface GatewayReload {
  /** The new checked config. */
  readonly config: GatewayConfig;
  /** The pin store read again (after `toolfence-mcp pin --accept`). Default: the current one. */
  readonly pins?: GatewayPinStore;
  /** A new authorizer (the policy file read again). Default: the current one. */
  readonly authorizer?: Authorizer;
  /**
   * The flow settings read again. They apply at start (the labels live in the running guard): a
   * reload with other settings is refused. Default: the current ones.
   */
  readonly flow?: GatewayFlowSettings;
}

interface Downstream {
  readonly server: Server;
  readonly era: GatewayEra;
  /** Its flow session: one per connection; absent for a stateless request (keyed by principal). */
  readonly session?: string;
  /** Its flow session outlives it (a sealed HTTP session's): its labels are not ended on close. */
  readonly keepsLabels?: boolean;
  /** How fast-path calls handed back to the SDK ended, by their replay token (see #fastCalls). */
  readonly replays: Map<string, FastCallOutcome>;
  /** The identity its server gave itself (a 2026-07-28 result's `_meta` names it). */
  readonly serverInfo: { readonly name: string; readonly version: string };
  /**
   * A 2026-07-28 connection's last request envelope the SDK server accepted (a request reached
   * a handler with it): the fast path serves a plain call carrying an equal one.
   */
  envelope?: Record<string, unknown>;
}

/**
 * The fast path of an HTTP session's plain calls ({@link McpGateway.legacyHttpSession}): a
 * {@link FastCallHandler} whose calls are given their caller, as the SDK's `http.authInfo`.
 */
export interface HttpFastCallHandler extends FastCallHandler {
  call(call: PlainToolsCall, signal: AbortSignal, authInfo?: AuthInfo): Promise<unknown>;
}

/**
 * How the fast path compares a request envelope with the one the SDK server accepted: values as
 * `JSON.parse` makes them only, 32 levels deep at most (deeper than any envelope: the fast path
 * declines, and the SDK decides).
 */
export const ENVELOPE_COMPARE: SameJsonValueOptions = Object.freeze({
  maxDepth: 32,
  plainOnly: true,
});

/** The `_meta` key of a fast-path call handed back to the SDK server (its value a random token). */
const REPLAY_META_KEY = 'dev.toolfence/fast-call-replay';

/** The `requestState` of a fast-path call's request context: it has none (one function for all). */
const NO_REQUEST_STATE = (): undefined => undefined;

/** One downstream `tools/call` while the registry runs it. */
interface CallState {
  readonly downstream: Downstream;
  readonly request: ServerContext['mcpReq'];
  /** The flow session whose labels the call reads and raises. */
  readonly session: string;
  /** The flow guard's raise for the call, when it raised it (or, observing, would have). */
  flow?: FlowRaise;
  /** Modern retry: the user's answer to the approval this call's `requestState` names. */
  readonly answer: 'approved' | 'declined' | undefined;
  /** Modern: the prompt to send back as an `input_required` result. */
  prompt?: string;
  approvedBy?: 'user' | 'console';
  decision?: PermissionDecision;
  span?: GatewaySpan;
  /**
   * The audit line's fields known when the call arrived (each line repeats them, stamped with
   * the time it is written).
   */
  audit?: Pick<AuditEntry, 'tool' | 'pin' | 'argumentsDigest' | 'principal'>;
  /** Why the user was not asked: the client cannot ask, or the arguments do not fit a prompt. */
  unasked?:
    | { readonly channel: false; readonly inbox?: 'full' | 'principal-full' }
    | { readonly tooLong: number };
  /** The pin digest of the definition the tool instance that ran was built from. */
  pin?: string;
  /** The policy in force when the approval came denies the call now (see #stillAsked). */
  policyChanged?: PermissionDecision;
  /** The flow guard denies the call now: a result that landed while it waited (see #stillAsked). */
  flowChanged?: boolean;
  /** The tool instance refused: its definition is no longer the accepted pin. */
  pinRefused?: boolean;
  /** The authenticated caller and their token (`gateway.httpAuth`), for token exchange only. */
  readonly caller?: { readonly principal: Principal; readonly token: CallerToken } | undefined;
}

interface Upstream {
  readonly name: string;
  readonly server: GatewayServerConfig;
  readonly concurrency: number;
  readonly client: McpClient;
  live: number;
  retired: boolean;
  /** Its first load has not settled yet (closed first when the gateway closes). */
  starting: boolean;
  /** With `credentials`: the tokens exchanged for callers and a connection per caller. */
  readonly exchange?: {
    readonly tokens: ExchangedTokens;
    readonly clients: CallerClients;
    readonly callerKey: ExchangeModule['callerKey'];
  };
}

/** The token exchange (and the OAuth HTTP client and network guard it brings). */
type ExchangeModule = typeof import('./identity/exchanged-tokens.js');
let exchangeModule: Promise<ExchangeModule> | undefined;

/**
 * Loads the token exchange with the first upstream that has `credentials`, once: a gateway whose
 * upstreams have none starts without it, its OAuth HTTP client and the network guard (issue 41).
 */
function loadExchangeModule(): Promise<ExchangeModule> {
  exchangeModule ??= import('./identity/exchanged-tokens.js');
  return exchangeModule;
}

/** One upstream's load in a reload: what it offers now, and its status. */
interface ServerLoad {
  /** The upstream serving the tools; absent when the load failed. */
  readonly upstream?: Upstream;
  readonly offered: ReadonlyMap<string, Offered>;
  readonly status: GatewayUpstreamStatus;
  /** The pins changed in the review and must be saved before the tools are offered. */
  readonly pinsChanged: boolean;
  /** Its prompts and resource templates, listed and pinned beside the tools. */
  readonly passed?: PassthroughUpstream;
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
  unknown:
    'it is unknown to this gateway (none was presented, or it was sealed under a key this gateway does not hold)',
  forged: 'it is not an approval this gateway issued, or it was altered',
  expired: 'it expired before the call was retried',
  'other-principal': 'it was given to another caller',
  replayed: 'it was already used (an approval covers one call, once)',
  mismatch: 'it was given for other arguments, another tool or another definition',
  unavailable:
    'the gateway cannot record that it was used (its approval store cannot be reached or is full), and it fails closed',
};

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

/**
 * True when the client of a call declared form elicitation (legacy: at initialize; modern: on the
 * request's envelope). Read only when the call is to be asked, not for every call.
 */
function canAsk(call: CallState): boolean {
  return supportsFormElicitation(
    call.downstream.era === 'modern'
      ? (call.request.envelope as Record<string, unknown> | undefined)?.[
          'io.modelcontextprotocol/clientCapabilities'
        ]
      : call.downstream.server.getClientCapabilities(),
  );
}

/** Identity of an upstream as pinned: its command line or its URL. */
export function serverIdentity(server: GatewayServerConfig): string {
  return server.url !== undefined
    ? `url:${server.url}`
    : `command:${JSON.stringify([server.command, ...(server.args ?? [])])}`;
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
  readonly #maxArgumentChars: number;
  readonly #maxToolNameChars: number;
  /** The flow guard and its sessions (flow-session.ts). */
  readonly #flow: GatewayFlow;
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
  readonly #startGate = new StartGate();
  /** Aborted by close(): loads still in progress end at once. */
  readonly #closing = new AbortController();
  /** The `tools/call` handlers running, by request (close() waits for those it declines). */
  readonly #handling = new WeakMap<object, Promise<unknown>>();
  /** The requests whose ask waits in the approval inbox now. */
  readonly #atInbox = new Set<object>();
  /** Aborted by declineWaitingAsks() (and close()): asks in the inbox are declined. */
  readonly #declining = new AbortController();
  #tracer: GatewayTracer = GatewayTracer.disabled();
  /** The tracer's load, begun by the first `tools/call` (see #loadTracer); once. */
  #tracerLoad: Promise<void> | undefined;
  #tracerLoaded = false;
  readonly #traceMeta = new AsyncLocalStorage<Record<string, string>>();
  readonly #route = new AsyncLocalStorage<CallRoute>();
  readonly #calls = new WeakMap<object, CallState>();
  readonly #registry: ToolRegistry;
  readonly #grants: ApprovalGrants;
  readonly #downstreams = new Set<Downstream>();
  readonly #stdio = new Set<{ close(): Promise<void> }>();
  readonly #changeListeners = new Set<() => void>();
  /** Prompts, resources, completions and instructions of the upstreams (gateway-passthrough.ts). */
  readonly #passthrough: GatewayPassthrough;
  // What each upstream passes through, as last loaded (kept while a reload loads it again).
  #passed: ReadonlyMap<string, PassthroughUpstream> = new Map();

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
    this.#maxArgumentChars = positiveInteger(
      'approvalMaxArgumentChars',
      options.approvalMaxArgumentChars ??
        options.config.gateway.approvalMaxArgumentChars ??
        DEFAULT_APPROVAL_MAX_ARGUMENT_CHARS,
      100_000_000,
    );
    this.#maxToolNameChars = positiveInteger(
      'maxToolNameChars',
      options.maxToolNameChars ?? DEFAULT_MAX_TOOL_NAME_CHARS,
      1_000_000,
    );
    if (options.maxPendingApprovals !== undefined) {
      positiveInteger('maxPendingApprovals', options.maxPendingApprovals, 1_000_000);
    }
    this.#grants = new ApprovalGrants(
      new ApprovalSeal({
        ...(options.sealKeys === undefined ? {} : { keys: options.sealKeys }),
        ttlMs: approvalTimeoutMs,
        maxRequestStateChars: positiveInteger(
          'maxRequestStateChars',
          options.maxRequestStateChars ?? DEFAULT_MAX_REQUEST_STATE_CHARS,
          1_000_000,
        ),
      }),
      options.approvalStore ??
        new MemorySpentApprovals(
          positiveInteger(
            'maxSpentApprovals',
            options.maxSpentApprovals ?? DEFAULT_MAX_SPENT_APPROVALS,
            10_000_000,
          ),
        ),
    );
    this.#flow = new GatewayFlow(options.flow, this.#observe);
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
      audit: (entry) => this.#audit(writtenEntry(entry)),
      auditStarted: (entry) => {
        // The log's own promise; a line it cannot build rejects as well.
        try {
          return this.#options.audit.append(writtenEntry(entry));
        } catch (error) {
          return Promise.reject(error);
        }
      },
      observe,
      canAsk: (server) => supportsFormElicitation(server.getClientCapabilities()),
      logger: options.logger,
      limits: passthroughLimits(options.passthrough),
      approvalMaxArgumentChars: this.#maxArgumentChars,
      started: () => this.#startGate.wait(this.#listWaitMs()),
      // Reads and completions that carry the client's data are judged by the same guard.
      flow: this.#flow,
    });
    const flowGuard = this.#flow.reading((context, flow) => this.#flowRead(context, flow));
    this.#registry = new ToolRegistry({
      // The bridge's validator: each upstream schema the bridge compiled is found compiled here.
      validator: sharedValidator(),
      authorizer: recording,
      approval: (request) => this.#ask(request),
      approvalTimeoutMs,
      ...(options.budget === undefined ? {} : { budget: options.budget }),
      ...(flowGuard === undefined ? {} : { flowGuard }),
    });
  }

  /**
   * The raise the registry's flow guard gave a call (the registry checks the guard once per call;
   * the gateway reads that raise for the audit line and observe mode instead of checking again).
   */
  #flowRead(context: ToolContext | undefined, flow: FlowRaise): void {
    const call = context === undefined ? undefined : this.#calls.get(context);
    // A call the policy denies has no raise (observing, the registry is told `allow`).
    if (call === undefined || (call.decision ?? MALFORMED).verdict === 'deny') return;
    call.flow = flow;
    if (!flow.enforced) {
      // Observe mode: the call runs; say what the guard would have done (names only).
      const { verdict: would, ...labels } = auditFlow(flow);
      this.#options.logger?.warn?.('The flow guard observed a call it would raise', {
        tool: call.audit?.tool,
        would,
        ...labels,
      });
    }
  }

  /** The decision a call is audited with: the policy's, raised by the flow guard. */
  #decided(call: CallState): PermissionDecision['verdict'] | undefined {
    const policy = call.decision?.verdict;
    return policy === undefined ? undefined : raisedVerdict(policy, call.flow, this.#observe);
  }

  /** The audit fields of a call's flow: its session and, when raised, the labels that decided. */
  #flowAudit(call: CallState): Pick<AuditEntry, 'session' | 'flow'> {
    if (this.#flow.guard === undefined) return {};
    return {
      session: call.session,
      ...(call.flow === undefined ? {} : { flow: auditFlow(call.flow) }),
    };
  }

  /**
   * The labels of a flow session (`session` as the audit lines name it): the sources that
   * exposed it and the private data it holds. Empty when the flow guard is off, and once the
   * session ended (its downstream connection closed).
   */
  flowLabels(session: string): FlowSessionLabels {
    return this.#flow.labels(session);
  }

  /**
   * A new downstream server (SDK v2 `Server`) for one connection of `era`, for serving the
   * gateway on a transport of your own: a legacy session (it is sent `list_changed` until it
   * closes) or one modern HTTP request. `serveGatewayHttp` uses it. Such a transport is taken to
   * serve several callers: once a server is made here, no downstream's roots are given to the
   * upstreams (they answer every caller); an upstream's `roots/list` is answered an empty list.
   * @throws {GatewayConfigError} (`details.reason` `not-started`) before `start()`, `connect()` or
   *   `reload()` loaded the SDK v2 server (importing the package does not load it).
   */
  downstreamServer(era: GatewayEra): Server {
    this.#needsServerSdk('downstreamServer');
    return this.#newDownstream(era, era === 'legacy', true).server;
  }

  /**
   * A legacy (2025-11-25) downstream server for one HTTP session, as {@link downstreamServer}
   * makes it, with the fast path of its plain `tools/call` requests (`calls`): ready once the
   * session's client has initialized, until the server closes; a call runs as the SDK's handler
   * would run it, its caller the `authInfo` the front passes (as the SDK's `http.authInfo`).
   * `serveGatewayHttp` serves such calls without the SDK server's per-message checks.
   * `flowSession`, when given, is the session's flow session (a sealed session's, derived from its
   * id): its labels outlive this server (they end by {@link endFlowSession}); otherwise a new one,
   * ended when the server closes.
   *
   * @internal The HTTP front's; its handler type is not part of the package's exports.
   */
  legacyHttpSession(flowSession?: string): {
    readonly server: Server;
    readonly calls: HttpFastCallHandler;
  } {
    this.#needsServerSdk('legacyHttpSession');
    const downstream = this.#newDownstream('legacy', true, true, flowSession);
    return { server: downstream.server, calls: this.#fastCalls(() => downstream) };
  }

  /**
   * Judges a flow session as one whose labels were dropped (exposed and holding private data)
   * until it ends: a sealed HTTP session resumed where its labels are not held (another replica,
   * a restart). Nothing when the flow guard is off.
   *
   * @internal The HTTP front's.
   */
  dropFlowSession(session: string): void {
    this.#flow.guard?.dropSession(session);
  }

  /**
   * Ends a flow session's labels: a sealed HTTP session deleted, or past its max age.
   *
   * @internal The HTTP front's.
   */
  endFlowSession(session: string): void {
    this.#flow.end(session);
  }

  /**
   * The SDK v2 server, which `start()`, `connect()` and `reload()` load (the package's import
   * does not); a method that needs it before any of them ran is refused.
   */
  #needsServerSdk(method: string): void {
    if (loadedServerSdk() === undefined) {
      throw new GatewayConfigError(
        `McpGateway.${method} needs the gateway started: await start() (or connect()) first`,
        { details: { reason: 'not-started' } },
      );
    }
  }

  #newDownstream(
    era: GatewayEra,
    track: boolean,
    shared: boolean,
    flowSession?: string,
  ): Downstream {
    const serverInfo = { name: 'toolfence-gateway', version: VERSION };
    const server = new (serverSdk().Server)(serverInfo, {
      capabilities: { tools: { listChanged: true }, ...PASSTHROUGH_CAPABILITIES },
      instructions: this.#passthrough.instructions(),
    });
    const downstream: Downstream = {
      server,
      era,
      // A given flow session (a sealed HTTP session's) outlives this connection.
      ...(track
        ? flowSession === undefined
          ? { session: connectionSession() }
          : { session: flowSession, keepsLabels: true }
        : {}),
      replays: new Map(),
      serverInfo,
    };
    this.#passthrough.attach(
      server,
      era,
      shared,
      (context) => downstream.session ?? principalSession(context.http?.authInfo),
    );
    server.setRequestHandler('tools/list', async (_request, context) => {
      learnEnvelope(downstream, context.mcpReq.envelope);
      // While upstreams still start, wait a bounded time for them (clients that ignore
      // list_changed see them too); then answer with what is ready.
      await this.#startGate.wait(this.#listWaitMs());
      // A caller with identity sees only what some rule could let them call (computed for this
      // request, never shared; the 2026-07-28 cache scope stays the SDK's `private`).
      const principal = principalOfRequest(context);
      const tools =
        principal === undefined || this.#observe
          ? this.#listing
          : listingFor(this.#listing, this.#authorizer, principal, (entry) => {
              const name = String(entry.name);
              const offered = this.#offered.get(name);
              return offered === undefined ? undefined : { name, origin: offered.tool.spec.origin };
            });
      // Said outright, whatever cache hint the server may be given: never for shared caches.
      return (
        principal !== undefined && era === 'modern' ? { tools, cacheScope: 'private' } : { tools }
      ) as never;
    });
    server.setRequestHandler('tools/call', (request, context) => {
      // A fast-path call whose outcome the SDK is to check and send: the call already ran.
      const replayed = takeReplay(downstream, request.params._meta);
      if (replayed !== undefined) {
        return (
          replayed.ok ? Promise.resolve(replayed.value) : Promise.reject(replayed.error)
        ) as Promise<CallToolResult>;
      }
      learnEnvelope(downstream, context.mcpReq.envelope);
      const handled = this.#call(
        downstream,
        request.params,
        context.mcpReq,
        downstream.session ?? principalSession(context.http?.authInfo),
        principalOfRequest(context),
        callerTokenOfRequest(context),
      ) as Promise<CallToolResult>;
      this.#handling.set(context.mcpReq, handled);
      return handled;
    });
    if (track) {
      this.#downstreams.add(downstream);
      server.onclose = () => {
        this.#downstreams.delete(downstream);
        this.#passthrough.detach(server);
        // The conversation ended: its labels go with it (a sealed session's end elsewhere).
        if (downstream.keepsLabels !== true) this.#flow.end(downstream.session);
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

  /** The pin store in use (the one the last start or reload brought). */
  get pins(): GatewayPinStore {
    return this.#pins;
  }

  /** Names offered downstream, sorted. */
  toolNames(): string[] {
    return [...this.#offered.keys()].sort();
  }

  /** The offered tools as a policy sees them: offered name and origin (server, own name). */
  offeredTools(): ToolIdentity[] {
    return [...this.#offered.entries()].map(([name, offered]) => ({
      name,
      origin: offered.tool.spec.origin,
    }));
  }

  #listWaitMs(): number {
    return this.#options.config.gateway.listWaitMs ?? DEFAULT_LIST_WAIT_MS;
  }

  /** Upstream clients still open, retired ones waiting for their last call included. */
  get openUpstreams(): number {
    return this.#open.size;
  }

  /**
   * @deprecated Always 0: approvals asked through `input_required` are sealed into their
   * `requestState` and held by the client, not the gateway. Removed in the next minor.
   */
  get pendingApprovals(): number {
    return 0;
  }

  /**
   * Connects every upstream, in parallel, lists and pins its tools, and registers the visible
   * ones; resolves once every upstream is ready or failed. Downstream clients may be connected
   * before it is called or while it runs: each upstream's tools are offered (and announced with
   * `list_changed`) as soon as that upstream is ready, and a `tools/list` that arrives meanwhile
   * waits at most `gateway.listWaitMs` for the rest. Each upstream has `startTimeoutMs` to start
   * and list; one that fails or times out is reported (`upstreams`, the logger) and its tools
   * are absent.
   */
  start(): Promise<void> {
    const run = (async () => {
      // The downstream server's SDK loads while the audit log is checked.
      const sdk = loadServerSdk();
      // A log that does not match its sealed head (cut, deleted, changed) stops the start.
      await this.#options.audit.open();
      await sdk;
      // `@opentelemetry/api` loads with the first `tools/call` (#loadTracer), not at start. Once
      // the upstream modules have loaded (their processes are spawned by then), the precompiled
      // meta-schema check is built while the upstreams start: their first listing would
      // otherwise build it after they answered (a failure here is the listing's to report).
      const spawned =
        Object.keys(this.#options.config.mcpServers).length === 0
          ? Promise.resolve()
          : upstreamModules().then(
              () => new Promise<void>((resolve) => setImmediate(resolve)),
              () => undefined,
            );
      void spawned
        .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
        .then(() => {
          if (Object.keys(this.#options.config.mcpServers).length > 0) warmSharedValidator();
        })
        .catch(() => undefined);
      await this.reload({ config: this.#options.config, pins: this.#options.pins });
    })();
    this.#startGate.begin(run);
    return run;
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
    if (next.flow !== undefined && !this.#flow.sameAs(next.flow, this.#observe)) {
      return Promise.reject(
        new GatewayConfigError(
          'the policy file\'s "flow" section applies at start (the running guard holds every session\'s labels); restart the gateway to change it',
          { details: { option: 'flow' } },
        ),
      );
    }
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

  // Loads every configured upstream in parallel (each bounded by its start timeout) and applies
  // the outcome as each one settles: the tools of an upstream that is ready are offered (and
  // announced) at once, an upstream still loading keeps what it offered before, and a failed or
  // slow one never holds up the others. The applications run one at a time, in one reload.
  async #reload(next: GatewayReload, refresh: boolean): Promise<void> {
    if (this.#closed) return;
    // The downstream servers and the pass-through's errors use the SDK v2 server.
    await loadServerSdk();
    const pins = next.pins ?? this.#pins;
    this.#pins = pins;
    if (next.authorizer !== undefined) this.#authorizer = next.authorizer;
    const loads = new Map<string, ServerLoad>();
    const state = { pinsChanged: false };
    let applying: Promise<void> = Promise.resolve();
    const apply = (): Promise<void> => {
      applying = applying.then(() => this.#apply(next.config, loads, pins, state));
      return applying;
    };
    await Promise.all(
      Object.entries(next.config.mcpServers).map(async ([name, server]) => {
        const load = await this.#loadServer(name, server, next.config, pins, refresh);
        if (load.pinsChanged) state.pinsChanged = true;
        loads.set(name, load);
        // A failure to apply is the reload's: raised below, after every load settled.
        apply().catch(() => undefined);
      }),
    );
    await apply();
  }

  // One upstream's load: connect (a new or changed upstream), list ONCE, review the pins, and
  // build the tools from exactly that listing. Never throws: a failure is the upstream's status.
  async #loadServer(
    name: string,
    server: GatewayServerConfig,
    config: GatewayConfig,
    pins: GatewayPinStore,
    refresh: boolean,
  ): Promise<ServerLoad> {
    const previous = this.#upstreams.get(name);
    // A relist starts nothing: an upstream that failed stays failed until a reload.
    const failed = this.#status.find((entry) => entry.name === name && entry.state === 'failed');
    if (!refresh && previous === undefined && failed !== undefined) {
      return { offered: new Map(), status: failed, pinsChanged: false };
    }
    const concurrency = config.gateway.maxConcurrentCalls ?? DEFAULT_MAX_CONCURRENT_CALLS;
    const startTimeoutMs =
      server.startTimeoutMs ?? config.gateway.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    const reused =
      previous !== undefined &&
      previous.concurrency === concurrency &&
      canonicalJson(previous.server) === canonicalJson(server);
    // The upstream client and the bridge load with the first upstream, not with the gateway: a
    // client's `initialize` is answered before they are needed (see upstream-modules.ts).
    const { TracedClient, bridgeTools } = await upstreamModules();
    const exchanging =
      reused || server.credentials === undefined ? undefined : await loadExchangeModule();
    const upstream = reused
      ? previous
      : this.#newUpstream(name, server, concurrency, startTimeoutMs, TracedClient, exchanging);
    // A process `serve` spawned for this upstream before the gateway loaded (early-upstreams.ts)
    // is taken by the client's first transport instead of a new one.
    const early = reused ? undefined : EarlyUpstreams.processFor(config, name, server);
    if (early !== undefined) giveEarlyProcess(upstream.client, early);
    try {
      // ONE listing per load: the pins review it and the tools are built from exactly it, so
      // the definition reviewed is the definition offered (a server whose listing TTL is 0
      // may answer every listing differently).
      const listing = await withStartTimeout(
        upstream.client.tools({ refresh: reused && refresh }),
        startTimeoutMs,
        name,
        this.#closing.signal,
      );
      const identity = serverIdentity(server);
      const review = await pins.review(name, identity, listing);
      // Prompts and resource templates: listed and pinned beside the tools.
      const passed = await this.#passthrough.load({
        server: name,
        namespace: server.namespace as string,
        identity,
        client: upstream.client,
        pins,
        tools: listing,
      });
      const built = builtDigests(listing, identity, review.visible, (tool) =>
        pins.pinOf(name, tool),
      );
      const bridged = await bridgeTools(upstream.client, {
        prefix: server.namespace as string,
        // Rules name a tool by its own name, by `server` (this config key) or the offered name.
        server: name,
        ...(server.allow === undefined ? {} : { allow: server.allow }),
        deny: [
          ...(server.deny ?? []),
          ...listing.map((tool) => tool.name).filter((tool) => !built.has(tool)),
        ],
        listing,
      });
      const offered = new Map<string, Offered>();
      for (const tool of bridged) {
        const digest = built.get(tool.remoteName);
        if (digest === undefined) continue;
        const flagged = pins.pinOf(name, tool.remoteName)?.flagged ?? [];
        const wrapped = this.#tracked(tool, upstream, digest);
        offered.set(tool.spec.name, {
          server: name,
          tool: wrapped,
          pin: digest,
          flagged,
          listed: listedDefinition(wrapped, flagged),
        });
      }
      for (const [remote, reasons] of review.hidden) {
        this.#options.logger?.warn?.('A tool is hidden until it is accepted again', {
          server: name,
          tool: remote,
          reasons,
        });
      }
      return {
        upstream,
        offered,
        passed: passed.upstream,
        pinsChanged: review.changed || passed.pinsChanged,
        status: {
          name,
          state: 'ready',
          tools: [...offered.keys()].sort(),
          hidden: Object.fromEntries(review.hidden),
          ...(upstream.client.protocolVersion === undefined
            ? {}
            : { protocolVersion: upstream.client.protocolVersion }),
        },
      };
    } catch (error) {
      const code = ToolsError.isInstance(error)
        ? error.code
        : ((error as { code?: unknown }).code as string | undefined);
      const failure = describeUpstreamFailure(error);
      this.#options.logger?.error?.(
        'An upstream MCP server failed to start; its tools are absent',
        {
          server: name,
          code: typeof code === 'string' ? code : 'unknown',
          message: failure.message,
          ...(failure.exitCode === undefined ? {} : { exitCode: failure.exitCode }),
          ...(failure.stderrTail === undefined ? {} : { stderrTail: failure.stderrTail }),
        },
      );
      if (!reused) this.#retire(upstream);
      return {
        offered: new Map(),
        pinsChanged: false,
        status: {
          name,
          state: 'failed',
          tools: [],
          hidden: {},
          error: typeof code === 'string' ? code : 'unknown',
          failure,
        },
      };
    } finally {
      upstream.starting = false;
    }
  }

  // Applies the loads settled so far: their tools replace what their upstream offered before; an
  // upstream still loading keeps what it offered (and its connection) until its load settles;
  // an upstream no longer used (removed, replaced, failed) is retired.
  async #apply(
    config: GatewayConfig,
    loads: ReadonlyMap<string, ServerLoad>,
    pins: GatewayPinStore,
    state: { pinsChanged: boolean },
  ): Promise<void> {
    if (this.#closed) return;
    const tools: Tool[] = [];
    const offeredNext = new Map<string, Offered>();
    const status: GatewayUpstreamStatus[] = [];
    const upstreamsNext = new Map<string, Upstream>();
    const passedNext = new Map<string, PassthroughUpstream>();
    for (const name of Object.keys(config.mcpServers)) {
      const load = loads.get(name);
      if (load !== undefined) {
        for (const [offeredName, offered] of load.offered) {
          offeredNext.set(offeredName, offered);
          tools.push(offered.tool);
        }
        if (load.upstream !== undefined) upstreamsNext.set(name, load.upstream);
        if (load.passed !== undefined) passedNext.set(name, load.passed);
        status.push(load.status);
        continue;
      }
      const previous = this.#upstreams.get(name);
      if (previous !== undefined) {
        upstreamsNext.set(name, previous);
        const kept = this.#passed.get(name);
        if (kept !== undefined) passedNext.set(name, kept);
        for (const [offeredName, offered] of this.#offered) {
          if (offered.server !== name) continue;
          offeredNext.set(offeredName, offered);
          tools.push(offered.tool);
        }
      }
      const before = this.#status.find((entry) => entry.name === name);
      status.push(
        before?.state === 'ready' ? before : { name, state: 'starting', tools: [], hidden: {} },
      );
    }
    // The pins are on disk before any client can see the new listing.
    if (state.pinsChanged) {
      state.pinsChanged = false;
      await pins.save();
    }
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
    this.#passed = passedNext;
    await this.#passthrough.commit(
      passedNext,
      [...this.#downstreams].map((downstream) => downstream.server),
    );
    this.#status = status;
    this.#options = { ...this.#options, config };
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

  #newUpstream(
    name: string,
    server: GatewayServerConfig,
    concurrency: number,
    startTimeoutMs: number,
    TracedClient: TracedClientClass,
    exchanging: ExchangeModule | undefined,
  ): Upstream {
    const client = new TracedClient(
      {
        // The handshake may take as long as the start timeout allows (an `npx` download).
        openTimeoutMs: startTimeoutMs,
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
      this.#route,
    );
    const upstream: Upstream = {
      name,
      server,
      concurrency,
      client,
      live: 0,
      retired: false,
      starting: true,
      // The exchange module is loaded (by the caller) exactly when the server has `credentials`.
      ...(exchanging === undefined
        ? {}
        : {
            exchange: this.#newExchange(
              name,
              server,
              concurrency,
              startTimeoutMs,
              TracedClient,
              exchanging,
            ),
          }),
    };
    this.#open.add(upstream);
    return upstream;
  }

  // `credentials`: tokens exchanged per caller, and a connection per caller that carries only
  // that caller's exchanged token (never the shared credential, never the caller's own token).
  #newExchange(
    name: string,
    server: GatewayServerConfig,
    concurrency: number,
    startTimeoutMs: number,
    TracedClient: TracedClientClass,
    { ExchangedTokens, callerKey }: ExchangeModule,
  ): NonNullable<Upstream['exchange']> {
    const credentials = server.credentials as NonNullable<GatewayServerConfig['credentials']>;
    const {
      oauth: _oauth,
      token: _token,
      authProvider: _authProvider,
      headers: _headers,
      ...extra
    } = this.#options.clientOptions?.(name, server) ?? {};
    const headers = Object.fromEntries(
      Object.entries(server.headers ?? {}).filter(
        ([header]) => header.toLowerCase() !== 'authorization',
      ),
    );
    const tokens = new ExchangedTokens({
      server: name,
      url: server.url as string,
      credentials,
      ...(this.#options.tokenExchangeAllowNonPublic === undefined
        ? {}
        : { allowNonPublic: this.#options.tokenExchangeAllowNonPublic }),
    });
    return {
      tokens,
      callerKey,
      clients: new CallerClients({
        server: name,
        max: credentials.maxCallerClients ?? DEFAULT_EXCHANGE_MAX_CALLER_CLIENTS,
        idleMs: credentials.callerClientIdleMs ?? DEFAULT_EXCHANGE_CALLER_CLIENT_IDLE_MS,
        create: (key, token) =>
          new TracedClient(
            {
              openTimeoutMs: startTimeoutMs,
              url: server.url as string,
              ...(Object.keys(headers).length === 0 ? {} : { headers }),
              maxConcurrentRequests: concurrency,
              ...(this.#options.logger === undefined ? {} : { logger: this.#options.logger }),
              ...extra,
              authProvider: {
                token,
                // The upstream refused the caller's exchanged token (revoked, expired early): this
                // request fails, and the caller's next call exchanges again.
                onChallenge: () => {
                  tokens.forget(key, token());
                  return false;
                },
              },
              roots: () => this.#passthrough.roots(),
            },
            this.#traceMeta,
            this.#route,
          ),
      }),
    };
  }

  // The caller's connection to an upstream with `credentials`, with a token exchanged for them.
  // Throws (the call does not run) when there is no caller or the exchange fails.
  async #callerRoute(
    upstream: Upstream,
    exchange: NonNullable<Upstream['exchange']>,
    state: CallState | undefined,
  ): Promise<{ route: CallRoute; release: () => void }> {
    const caller = state?.caller;
    if (caller === undefined) {
      throw new GatewayCallerCredentialError(
        `The upstream ${upstream.name} receives a token exchanged for each caller, and this call has no authenticated caller (serve --http with gateway.httpAuth)`,
        { details: { server: upstream.name } },
      );
    }
    const token = await exchange.tokens.tokenFor(caller.principal, caller.token);
    const lease = exchange.clients.acquire(exchange.callerKey(caller.principal), token);
    return { route: { owner: upstream.client, client: lease.client }, release: lease.release };
  }

  // Counts the registered instances of an upstream's tools: the registry closes a replaced or
  // removed instance when its last call ends, and a retired upstream closes when none is left.
  // `digest` is the pin digest of the definition the tool was built from: each call first checks
  // that it is still the accepted pin (a reload may bring pins that accept another definition).
  #tracked(tool: BridgedTool, upstream: Upstream, digest: string): BridgedTool {
    upstream.live += 1;
    let closed = false;
    return Object.freeze({
      spec: tool.spec,
      remoteName: tool.remoteName,
      needsApproval: tool.needsApproval,
      invoke: async (args: JsonObject, context: ToolContext) => {
        const state = this.#calls.get(context);
        if (state !== undefined) state.pin = digest;
        if (this.#pins.pinOf(upstream.name, tool.remoteName)?.sha256 !== digest) {
          if (state !== undefined) state.pinRefused = true;
          return pinChangedResult(tool.spec.name);
        }
        const exchange = upstream.exchange;
        if (exchange === undefined) {
          // No line on disk, no call: the `started` line is written before the request may leave.
          await this.#auditStarted(context);
          return await this.#invokeTraced(tool, upstream, args, context, state?.span);
        }
        // With `credentials`: the caller's exchanged token first (no token, no call).
        const routed = await this.#callerRoute(upstream, exchange, state);
        try {
          await this.#auditStarted(context);
          return await this.#route.run(routed.route, () =>
            this.#invokeTraced(tool, upstream, args, context, state?.span),
          );
        } finally {
          routed.release();
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

  #invokeTraced(
    tool: BridgedTool,
    upstream: Upstream,
    args: JsonObject,
    context: ToolContext,
    parent: GatewaySpan | undefined,
  ): Promise<ToolResult> {
    // No span (the usual case): the tool's own promise, without another async frame around it.
    if (!GatewayTracer.live(parent)) return tool.invoke(args, context);
    const span = this.#tracer.upstreamCall(tool.remoteName, parent, {
      'toolfence.upstream': upstream.name,
    });
    // The upstream call carries this span's trace context in `params._meta`. The bridged tool's
    // invoke is async: it rejects, it never throws.
    return this.#traceMeta
      .run(this.#tracer.traceContext(span), () => tool.invoke(args, context))
      .then(
        (result) => {
          span.end(result.isError === true ? 'tool_error' : undefined);
          return result;
        },
        (error: unknown) => {
          span.end(ToolsError.isInstance(error) ? error.code : 'GATEWAY_CALL_FAILED');
          throw error;
        },
      );
  }

  #retire(upstream: Upstream): void {
    upstream.retired = true;
    if (upstream.live === 0) void this.#closeUpstream(upstream);
  }

  async #closeUpstream(upstream: Upstream): Promise<void> {
    if (!this.#open.delete(upstream)) return;
    await Promise.all([
      upstream.client.close().catch(() => undefined),
      upstream.exchange?.clients.close(),
    ]);
  }

  /**
   * Serves one downstream client on a stdio-shaped `transport` (stdin/stdout for
   * `toolfence-mcp serve`, or an in-memory pair): the client's opening picks the era, a
   * `server/discover` probe for 2026-07-28 or an `initialize` for 2025-11-25 (the SDK v2's
   * `serveStdio`). Several may be connected at once.
   * @throws {GatewayConfigError} when `options` is not an object, has an unknown key, or its
   *   `plainCallFastPath` is not a boolean.
   */
  async connect(transport: Transport, options?: GatewayConnectOptions): Promise<void> {
    if (options !== undefined) {
      checkOptionKeys(options, CONNECT_OPTION_KEYS, 'McpGateway.connect', gatewayOptionError);
      const fastPath: unknown = options.plainCallFastPath;
      if (fastPath !== undefined && typeof fastPath !== 'boolean') {
        throw gatewayOptionError(
          'McpGateway.connect option "plainCallFastPath" must be true or false',
          'plainCallFastPath',
        );
      }
    }
    // Loaded by start() too; a connection made before it loads the SDK v2 server itself.
    const { serveStdio } = loadedServerSdk() ?? (await loadServerSdk());
    // The entry owns the transport's callbacks; an `onclose` set before connecting still runs.
    const closed = transport.onclose;
    // A plain `tools/call` skips the SDK server's per-message checks (fast-call-transport.ts):
    // on a 2025-11-25 connection, and on a 2026-07-28 one when its envelope is one the SDK
    // server already accepted there; everything else reaches the SDK server as before.
    let current: Downstream | undefined;
    const handler = this.#fastCalls(() => current);
    // Until the client has initialized (2025-11-25), only `initialize` and `ping` are answered; a
    // 2026-07-28 connection, whose requests carry their envelope, is open at once.
    const gated = new InitializeGate(transport, () =>
      current === undefined
        ? 'opening'
        : current.era === 'modern' || current.server.getClientCapabilities() !== undefined
          ? 'open'
          : 'uninitialized',
    );
    const fast = new FastCallTransport(
      gated,
      options?.plainCallFastPath === false
        ? { ready: () => false, call: handler.call, replay: handler.replay }
        : handler,
    );
    const handle = serveStdio(
      (context) => {
        const downstream = this.#newDownstream(context.era, true, false);
        current = downstream;
        return downstream.server;
      },
      {
        transport: fast,
        onerror: (error) => {
          this.#options.logger?.debug?.('Downstream connection error', { name: error.name });
        },
      },
    );
    this.#stdio.add(handle);
    const entry = fast.onclose;
    fast.onclose = () => {
      this.#stdio.delete(handle);
      entry?.();
      closed?.();
    };
  }

  /**
   * The fast path of one stdio connection: ready once its client has initialized a 2025-11-25
   * session, until it closes; a call runs through {@link McpGateway.#call} as the SDK's handler
   * would run it (the same request context: its signal, its elicitation, no `_meta`).
   */
  #fastCalls(current: () => Downstream | undefined): HttpFastCallHandler {
    // The request context's `elicitInput`, made once per server (not a closure per call).
    let elicitServer: Server | undefined;
    let elicitInput: ((...ask: Parameters<Server['elicitInput']>) => unknown) | undefined;
    const elicitOf = (server: Server) => {
      if (elicitServer !== server || elicitInput === undefined) {
        elicitServer = server;
        elicitInput = (params, options) => server.elicitInput(params, options);
      }
      return elicitInput;
    };
    return {
      ready: () => {
        const downstream = current();
        return (
          downstream !== undefined &&
          downstream.era === 'legacy' &&
          !this.#closed &&
          this.#downstreams.has(downstream) &&
          downstream.server.getClientCapabilities() !== undefined
        );
      },
      acceptsEnvelope: (meta) => {
        const downstream = current();
        return (
          downstream !== undefined &&
          downstream.era === 'modern' &&
          downstream.envelope !== undefined &&
          !this.#closed &&
          this.#downstreams.has(downstream) &&
          sameJsonValue(meta, downstream.envelope, ENVELOPE_COMPARE)
        );
      },
      modernResult: (result) => modernCallToolResult(result, (current() as Downstream).serverInfo),
      call: (call, signal, authInfo) => {
        const downstream = current() as Downstream;
        const server = downstream.server;
        // What the SDK's context gives a tools/call whose `_meta` is nothing or only the
        // 2026-07-28 envelope, which it lifts out as `envelope` (see buildContext).
        const request: Record<string, unknown> = {
          id: call.id,
          method: 'tools/call',
          _meta: undefined,
        };
        if (call.meta !== undefined) request.envelope = call.meta;
        request.requestState = NO_REQUEST_STATE;
        request.signal = signal;
        request.elicitInput = elicitOf(server);
        // The caller as the SDK's context gives it to the handler (`http.authInfo`).
        const context = authInfo === undefined ? undefined : { http: { authInfo } };
        const handled = this.#call(
          downstream,
          call,
          request as unknown as ServerContext['mcpReq'],
          downstream.session ?? principalSession(authInfo),
          principalOfRequest(context),
          callerTokenOfRequest(context),
        );
        this.#handling.set(request as unknown as ServerContext['mcpReq'], handled);
        return handled;
      },
      replay: (call, outcome) => {
        const downstream = current() as Downstream;
        const token = randomUUID();
        downstream.replays.set(token, outcome);
        return {
          jsonrpc: '2.0',
          id: call.id,
          method: 'tools/call',
          params: {
            name: call.name,
            ...(call.arguments === undefined ? {} : { arguments: call.arguments }),
            _meta: { ...call.meta, [REPLAY_META_KEY]: token },
          },
        };
      },
    };
  }

  /**
   * Declines every ask waiting in the approval inbox, and any that arrives later: their calls end
   * (not run, audited `declined`, the client answered "not approved"); resolves once they have
   * and their answers are handed to the transports. close() does it first; a server stopping
   * calls it before it closes its downstream connections (`toolfence-mcp serve` does).
   */
  async declineWaitingAsks(): Promise<void> {
    const declined = [...this.#atInbox].map((request) => this.#handling.get(request));
    this.#declining.abort();
    await Promise.allSettled(declined);
    await new Promise((resolve) => setImmediate(resolve));
  }

  /** Closes the downstream servers, the registry and every upstream client. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.declineWaitingAsks();
    this.#closing.abort();
    // Upstreams still starting are closed first, so a start in progress ends now rather than at
    // its start timeout.
    await Promise.all(
      [...this.#open].filter((upstream) => upstream.starting).map((u) => this.#closeUpstream(u)),
    );
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
    if (request.flow !== undefined) call.flow = request.flow;
    const offered = this.#offered.get(request.toolName);
    if (call.downstream.era === 'modern' && call.answer !== undefined) {
      if (call.answer === 'approved') call.approvedBy = 'user';
      return call.answer === 'approved';
    }
    const inbox = this.#options.approvalInbox;
    if (!canAsk(call) && inbox !== undefined) {
      return this.#askInbox(call, request, offered?.server, inbox);
    }
    const prompt = this.#prompt(call, request, offered?.server);
    if (prompt === undefined) return false;
    if (call.downstream.era === 'modern') {
      call.prompt = prompt;
      return false;
    }
    // The console lists the ask (read-only) while the client puts it to its user.
    const unlist = inbox?.observe(inboxAsk(request, offered?.server));
    try {
      const answer = await call.request.elicitInput(
        {
          message: prompt,
          requestedSchema: APPROVAL_SCHEMA as never,
        },
        { signal: request.signal },
      );
      const approved = answer.action === 'accept' && answer.content?.approve === true;
      if (!approved) return false;
      call.approvedBy = 'user';
    } catch {
      return false;
    } finally {
      unlist?.();
    }
    return this.#stillAsked(call, request);
  }

  /**
   * After a person approved `request`, which may have waited for minutes: the tool must still be
   * offered with the definition pin it had when the call came (a relist may have hidden it, a
   * reload may offer another definition), else the call does not run (`pin-changed`); and the
   * policy in force now (a reload may have replaced it) is asked again: a call it denies now does
   * not run (audited `denied`, with who approved; `call.policyChanged` holds the denial); and the
   * flow guard is asked again for the call's session, with what it read meanwhile: a deny
   * refuses it (`call.flowChanged`, the raise in `call.flow`), while an `ask` is covered by the
   * answer just given (the user was asked about this very call, though that prompt may not have
   * named the flow). A call they allow or still ask for runs, once.
   */
  async #stillAsked(call: CallState, request: ApprovalRequest): Promise<boolean> {
    if (this.#offered.get(request.toolName)?.pin !== call.audit?.pin) {
      call.pinRefused = true;
      return false;
    }
    let decision: unknown;
    try {
      decision = await this.#authorizer.authorize(request);
    } catch {
      decision = MALFORMED;
    }
    const now = isPermissionDecision(decision) ? decision : MALFORMED;
    if (now.verdict === 'deny') {
      call.decision = now;
      call.policyChanged = now;
      return false;
    }
    // The flow guard again, for the same session and sink: a private or untrusted result that
    // landed while the prompt was open counts. Only a deny refuses; an `ask` is what the user
    // just answered (the call was put to them), so their yes covers it.
    const guard = this.#flow.guard;
    if (guard === undefined) return true;
    let flow: FlowRaise | undefined;
    try {
      // As the registry's check reached it (GatewayFlow.reading): the session, spec and contract.
      flow = guard.check(call.session, request.spec, now.verdict, request.contract);
    } catch {
      call.decision = { verdict: 'deny', reason: 'flow-guard-error' };
      call.policyChanged = call.decision;
      return false;
    }
    if (flow === undefined || !flow.enforced || flow.verdict !== 'deny') return true;
    call.flow = flow;
    call.flowChanged = true;
    return false;
  }

  /** An ask the client cannot put to its user: it waits in the inbox for a person's answer. */
  async #askInbox(
    call: CallState,
    request: ApprovalRequest,
    server: string | undefined,
    inbox: ApprovalInbox,
  ): Promise<boolean> {
    // The same bound as a prompt: what a person approves is shown whole, never in part.
    const prompt = approvalPrompt(request, server, this.#maxArgumentChars);
    if ('tooLong' in prompt) {
      call.unasked = { tooLong: prompt.tooLong };
      return false;
    }
    // Declined when the approval times out, the call is cancelled, or the gateway closes.
    const signal = AbortSignal.any([request.signal, this.#declining.signal]);
    this.#atInbox.add(call.request);
    let answer: Awaited<ReturnType<ApprovalInbox['decide']>>;
    try {
      answer = await inbox.decide(inboxAsk(request, server, call.audit?.pin), signal);
    } finally {
      this.#atInbox.delete(call.request);
    }
    if (answer === 'full' || answer === 'principal-full') {
      call.unasked = { channel: false, inbox: answer };
    }
    if (answer !== 'approved') return false;
    call.approvedBy = 'console';
    return this.#stillAsked(call, request);
  }

  /** The prompt to ask with, or undefined (and why, in `call.unasked`) when nobody can be asked. */
  #prompt(
    call: CallState,
    request: ApprovalRequest,
    server: string | undefined,
  ): string | undefined {
    if (!canAsk(call)) {
      call.unasked = { channel: false };
      return undefined;
    }
    const prompt: ApprovalPrompt = approvalPrompt(request, server, this.#maxArgumentChars);
    if ('tooLong' in prompt) {
      call.unasked = { tooLong: prompt.tooLong };
      return undefined;
    }
    return prompt.message;
  }

  /**
   * Loads `@opentelemetry/api` (unless `tracing: false`) once, on the first `tools/call`: a
   * gateway that lists its tools and answers no call never loads it. It never rejects (a missing
   * package leaves the tracer disabled).
   */
  #loadTracer(): Promise<void> {
    this.#tracerLoad ??= GatewayTracer.load(this.#options.tracing ?? true, VERSION).then(
      (tracer) => {
        this.#tracer = tracer;
        this.#tracerLoaded = true;
      },
    );
    return this.#tracerLoad;
  }

  async #call(
    downstream: Downstream,
    params: { readonly name: string; readonly arguments?: Record<string, unknown> | undefined },
    request: ServerContext['mcpReq'],
    session: string,
    principal?: Principal,
    callerToken?: CallerToken,
  ): Promise<CallToolResult | ReturnType<typeof inputRequired>> {
    const name = params.name;
    const args = params.arguments ?? {};
    // A made-up name of any length: refused before it is looked up anywhere else or waited for.
    if (name.length > this.#maxToolNameChars && !this.#offered.has(name)) {
      return this.#nameTooLong(name, args, principal);
    }
    // The first call loads the tracer (while it waits for its upstream, if it does); every call
    // has it before its span starts, so every call is traced as when it loaded at start.
    const tracing = this.#tracerLoaded ? undefined : this.#loadTracer();
    let offered = this.#offered.get(name);
    // A tool of an upstream still starting: wait for it as a first listing would.
    if (offered === undefined) await this.#startGate.wait(this.#listWaitMs());
    if (tracing !== undefined) await tracing;
    // Read again after any wait (an upstream that started meanwhile offers it now).
    if (offered === undefined || tracing !== undefined) offered = this.#offered.get(name);
    const modern = downstream.era === 'modern';
    const fields = {
      tool: auditText(name),
      pin: offered?.pin ?? 'unknown',
      argumentsDigest: digestOf(args),
    };
    // Spread only with a caller (gateway.httpAuth): issuer and subject, never the token.
    const base: NonNullable<CallState['audit']> =
      principal === undefined ? fields : { ...fields, principal: auditPrincipal(principal) };
    // A modern retry presents the approval it was asked for: it must name one this gateway issued
    // for exactly this tool, definition pin and arguments, unexpired and unused.
    let answer: CallState['answer'];
    if (modern) {
      const state = request.requestState();
      const responses = request.inputResponses;
      if (state !== undefined || responses !== undefined) {
        const refusal = await this.#grants.redeem(state, {
          principal: approvalPrincipal(principal),
          tool: name,
          pin: base.pin,
          argumentsDigest: base.argumentsDigest,
        });
        if (refusal !== undefined) {
          await this.#audit({
            time: isoTime(Date.now()),
            ...base,
            decision: 'ask',
            outcome: `approval-${refusal}`,
          });
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
    const plain: CallState = { downstream, request, session, answer, audit: base };
    const call: CallState =
      principal === undefined || callerToken === undefined
        ? plain
        : { ...plain, caller: { principal, token: callerToken } };
    const contextOptions = { runId: nextRunId(), session, signal: request.signal };
    const context = createToolContext(
      principal === undefined
        ? contextOptions
        : // The caller, for policies (`principal` rules); log-safe.
          {
            ...contextOptions,
            metadata: { [PRINCIPAL_METADATA_KEY]: principal as unknown as JsonObject },
          },
    );
    this.#calls.set(context, call);
    let span = NO_SPAN;
    if (this.#tracer.enabled) {
      const version = downstream.server.getNegotiatedProtocolVersion();
      // Assigned in order, without a spread per optional attribute.
      const attributes: Record<string, string> = {};
      if (version !== undefined) attributes['mcp.protocol.version'] = version;
      if (offered !== undefined) attributes['toolfence.upstream'] = offered.server;
      if (principal !== undefined) {
        attributes['enduser.id'] = principal.subject;
        attributes['toolfence.principal.issuer'] = principal.issuer;
      }
      span = this.#tracer.serverCall(name, request._meta, attributes);
      call.span = span;
    }
    try {
      const result = await this.#registry.invoke(name, args, context);
      const decision = this.#decided(call) ?? 'allow';
      const ambiguous = result.metadata?.ambiguous === true;
      const outcome = call.pinRefused
        ? 'pin-changed'
        : this.#observe && decision !== 'allow'
          ? 'observed'
          : ambiguous
            ? 'ambiguous'
            : result.isError === true
              ? 'tool-error'
              : 'ok';
      await this.#audit(this.#ranLine(call, base, decision, outcome, digestOf(result)));
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
      // The registry's own raise is the one it enforced (the same the gateway saw, unless labels
      // rose in between).
      const details = (error as { details?: { flow?: FlowRaise; reason?: unknown } } | null)
        ?.details;
      if (details?.flow !== undefined) call.flow = details.flow;
      const flowDenied = details?.reason === 'flow-guard' && call.flow?.verdict === 'deny';
      const decision = this.#decided(call);
      const code = ToolsError.isInstance(error) ? error.code : 'GATEWAY_CALL_FAILED';
      const denied = code === 'POLICY_PERMISSION_DENIED' || code === 'APPROVAL_REQUIRED';
      if (denied && call.prompt !== undefined) {
        // Modern: ask through an `input_required` result; the client retries with the answer.
        const handle = this.#grants.issue({
          principal: approvalPrincipal(principal),
          tool: name,
          pin: base.pin,
          argumentsDigest: base.argumentsDigest,
        });
        await this.#audit({
          time: isoTime(Date.now()),
          ...base,
          decision: 'ask',
          outcome: 'asked',
          ...this.#flowAudit(call),
        });
        span.set('toolfence.decision', 'ask');
        span.set('toolfence.outcome', 'asked');
        span.end();
        const { inputRequired } = serverSdk();
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
      const auditFailed = auditFailure(error);
      const unasked = denied && decision === 'ask' ? call.unasked : undefined;
      // Approved, and the definition changed while the approval waited (see #stillAsked).
      const pinChanged = denied && call.pinRefused === true;
      const outcome =
        auditFailed !== undefined
          ? 'audit-failed'
          : pinChanged
            ? 'pin-changed'
            : unasked !== undefined
              ? 'channel' in unasked
                ? 'no-approval-channel'
                : 'prompt-too-long'
              : denied
                ? decision === 'ask'
                  ? 'declined'
                  : 'denied'
                : overBudget
                  ? 'over-budget'
                  : code === 'REGISTRY_INPUT_INVALID'
                    ? // Refused before the policy: audited `deny`, though no rule judged it.
                      'invalid-arguments'
                    : 'failed';
      await this.#audit({
        time: isoTime(Date.now()),
        ...base,
        decision: decision ?? 'deny',
        // Approved, then refused: the policy, the flow or the definition changed while it waited.
        ...((call.policyChanged !== undefined || call.flowChanged === true || pinChanged) &&
        call.approvedBy !== undefined
          ? { approvedBy: call.approvedBy }
          : {}),
        outcome,
        ...this.#flowAudit(call),
      });
      span.set('toolfence.decision', decision ?? 'deny');
      span.set('toolfence.outcome', outcome);
      span.end(auditFailed?.code ?? code);
      return errorText(
        auditFailed !== undefined
          ? `The call to ${name} did not run: the gateway could not write it to its audit log (${auditFailed.code}), and it runs no call it cannot record. The gateway's operator must check the log (toolfence-mcp audit verify) and restart the gateway.`
          : pinChanged
            ? `The call to ${name} was approved, but its definition changed while it waited for the approval (it is no longer the one offered when the user was asked), so it did not run. List the tools again; if it is hidden, a person reviews it with toolfence-mcp pin --show.`
            : unasked !== undefined
              ? 'channel' in unasked
                ? unasked.inbox !== undefined
                  ? unasked.inbox === 'principal-full'
                    ? `The call to ${name} needs a person's approval in the gateway's console, but the console already holds as many of your calls waiting for approval as one caller may have (maxPendingPerPrincipal), so it did not run and nobody was asked. Wait until those are answered or time out, then call it again.`
                    : `The call to ${name} needs a person's approval in the gateway's console, but the console already holds as many calls waiting for approval as it may (maxPending), so it did not run and nobody was asked. Call it again later.`
                  : call.flow !== undefined
                    ? this.#flowText(name, call.flow, 'no-approval-channel')
                    : `The call to ${name} needs the user's approval, but this client cannot ask the user (it declared no form elicitation), so it did not run and nobody was asked. To run it, use a client that supports elicitation, or allow this tool in the gateway's policy file (--policy: a rule with "decision": "allow").`
                : `The call to ${name} needs the user's approval, but its arguments are ${unasked.tooLong} characters as shown, over the ${this.#maxArgumentChars} an approval prompt shows whole (gateway.approvalMaxArgumentChars), so nobody was asked and it did not run: the gateway never asks approval for what the user cannot see. Call it with shorter arguments, or allow this tool in the gateway's policy file.`
              : denied
                ? call.policyChanged !== undefined
                  ? `The call to ${name} was approved, but the gateway's policy changed while it waited for the approval and now denies it (${reasonShown(call.policyChanged.reason)}), so it did not run.`
                  : call.flowChanged === true && call.flow !== undefined
                    ? this.#flowChangedText(name, call.flow)
                    : decision === 'ask'
                      ? `The call to ${name} was not approved by the user, so it did not run.`
                      : flowDenied && call.flow !== undefined
                        ? this.#flowText(name, call.flow, 'denied')
                        : `The call to ${name} is denied by the gateway's policy (${denialReason(error)}), so it did not run.`
                : overBudget
                  ? `The call to ${name} is over the gateway's call budget (${budgetLimit(error)}), so it did not run.`
                  : this.#notRunText(name, code, error),
      );
    }
  }

  /** A call whose name is over `maxToolNameChars` and no offered tool's: audited bounded, refused. */
  async #nameTooLong(
    name: string,
    args: Record<string, unknown>,
    principal: Principal | undefined,
  ): Promise<CallToolResult> {
    await this.#audit({
      time: isoTime(Date.now()),
      tool: auditText(name),
      pin: 'unknown',
      argumentsDigest: digestOf(args),
      ...(principal === undefined ? {} : { principal: auditPrincipal(principal) }),
      decision: 'deny',
      outcome: 'name-too-long',
    });
    return errorText(
      `The tool name of this call is ${name.length} characters long, over the ${this.#maxToolNameChars} a tool name may have (McpGateway option maxToolNameChars), and no offered tool has it, so the call did not run. List the tools (tools/list) and use one of their names.`,
    );
  }

  // Why the flow guard stopped a call approved while a result raised the flow, naming the flow.
  #flowChangedText(name: string, flow: FlowRaise): string {
    return `The call to ${printableText(name, 200)} was approved, but while it waited for the approval ${flowChain(flow)}, and could leak that private data, so the gateway's flow guard denies it and it did not run. Continue without it, start a new conversation, or ask the user to permit this flow in the gateway's policy file (--policy: "flow": {"permit": [{"from": SOURCE, "to": SINK}]}).`;
  }

  // Why the flow guard stopped a call, naming the flow: the sources, the private data, the sink.
  #flowText(name: string, flow: FlowRaise, outcome: 'denied' | 'no-approval-channel'): string {
    const shown = printableText(name, 200);
    const permit =
      'permit this flow in the gateway\'s policy file (--policy: "flow": {"permit": [{"from": SOURCE, "to": SINK}]})';
    return outcome === 'denied'
      ? `The call to ${shown} is denied by the gateway's flow guard: ${flowChain(flow)}, and could leak that private data, so it did not run. Continue without it, start a new conversation, or ask the user to ${permit}.`
      : `The call to ${shown} needs the user's approval because ${flowChain(flow)}, but this client cannot ask the user (it declared no form elicitation), so it did not run and nobody was asked. To run it, use a client that supports elicitation, or ask the user to ${permit}.`;
  }

  // Why a call did not reach its server, in words a model (and the person reading along) can act
  // on: the argument that is wrong and what is accepted, a hidden tool and how a person accepts
  // it, an upstream still starting or failed. Our own texts only, escaped and bounded.
  #notRunText(name: string, code: string, error: unknown): string {
    const shown = printableText(name, 200);
    if (code === 'REGISTRY_INPUT_INVALID') {
      return `The call to ${shown} did not run: its arguments do not match the tool's input schema (${printableText((error as Error).message, 1_000)}). Fix the arguments and call again.`;
    }
    if (code === 'REGISTRY_TOOL_NOT_FOUND') {
      const split = name.indexOf('__');
      const namespace = split === -1 ? undefined : name.slice(0, split);
      const entry = Object.entries(this.#options.config.mcpServers).find(
        ([, server]) => server.namespace === namespace,
      );
      const status =
        entry === undefined ? undefined : this.#status.find((item) => item.name === entry[0]);
      // Own members only: a made-up name such as `x__constructor` is no hidden tool.
      const remote = name.slice(split + 2);
      const reasons =
        status !== undefined && Object.hasOwn(status.hidden, remote)
          ? status.hidden[remote]
          : undefined;
      if (reasons?.includes('definition-too-large')) {
        return `The tool ${shown} is hidden, so the call did not run: its definition is larger than the pin store's maxDefinitionBytes, so it was neither pinned nor kept for review and cannot be accepted. The gateway's operator may raise maxDefinitionBytes if the server is trusted.`;
      }
      if (reasons !== undefined) {
        return `The tool ${shown} is hidden, so the call did not run: its definition is new or changed since it was pinned (${reasons.join(', ')}). A person must review it with "toolfence-mcp pin --show" and accept it with "toolfence-mcp pin --accept ${shown}@<digest>" (the token --show prints); then it is offered again.`;
      }
      if (status?.state === 'starting') {
        return `The call to ${shown} did not run: its server ${printableText(status.name, 64)} is still starting. Call it again in a moment.`;
      }
      if (status?.state === 'failed') {
        return `The call to ${shown} did not run: its server ${printableText(status.name, 64)} failed to start (${status.error ?? 'unknown'}); the gateway's operator can see why in its stderr or with "toolfence-mcp status".`;
      }
      return `The gateway offers no tool named ${shown}, so the call did not run. List the tools (tools/list) and use one of their names.`;
    }
    const credential = callerCredentialFailure(error);
    if (credential !== undefined) {
      return `The call to ${shown} did not run: ${printableText(credential.message, 1_000)}.`;
    }
    return `The call to ${shown} failed before it reached the server (${code}).`;
  }

  /** Writes the `started` line of an authorized call; throws (the call does not run) when it cannot. */
  #auditStarted(context: ToolContext): Promise<unknown> {
    const call = this.#calls.get(context);
    if (call?.audit === undefined) return Promise.resolve();
    // The log's own promise (no async frame around it); a line it cannot build rejects as well.
    try {
      return this.#options.audit.append(
        this.#ranLine(call, call.audit, this.#decided(call) ?? 'allow', 'started', undefined),
      );
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * The `started` line of an authorized call, or the line of how it ended, in one object (the
   * fields in the order of the entry's spreads before: the call's fields, the pin of the
   * definition the instance that ran was built from, the decision and who approved, the outcome,
   * the result's digest, observe mode, the flow session and raise).
   */
  #ranLine(
    call: CallState,
    base: NonNullable<CallState['audit']>,
    decision: AuditEntry['decision'],
    outcome: string,
    resultDigest: string | undefined,
  ): AuditEntry {
    // Assigned in that order (the order of the fields in the written line), no spread per field.
    const line: { -readonly [K in keyof AuditEntry]?: AuditEntry[K] } = {
      // When the line is written (a `started` line may follow an approval that took minutes).
      time: isoTime(Date.now()),
      tool: base.tool,
      pin: call.pin ?? base.pin,
      argumentsDigest: base.argumentsDigest,
    };
    if (base.principal !== undefined) line.principal = base.principal;
    line.decision = decision;
    if (call.approvedBy !== undefined) line.approvedBy = call.approvedBy;
    line.outcome = outcome;
    if (resultDigest !== undefined) line.resultDigest = resultDigest;
    if (this.#observe) line.observed = true;
    if (this.#flow.guard !== undefined) {
      line.session = call.session;
      if (call.flow !== undefined) line.flow = auditFlow(call.flow);
    }
    return line as AuditEntry;
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

/**
 * Keeps a 2026-07-28 request's envelope, as the SDK server accepted it (its request reached a
 * handler), for the fast path to recognise on the connection's next calls.
 */
function learnEnvelope(downstream: Downstream, envelope: unknown): void {
  if (downstream.era === 'modern' && isRecord(envelope)) {
    downstream.envelope = envelope as Record<string, unknown>;
  }
}

/** The outcome a fast-path call handed back under `meta`'s replay token, taken once. */
function takeReplay(downstream: Downstream, meta: unknown): FastCallOutcome | undefined {
  if (downstream.replays.size === 0 || !isRecord(meta)) return undefined;
  const token = meta[REPLAY_META_KEY];
  if (typeof token !== 'string') return undefined;
  const outcome = downstream.replays.get(token);
  downstream.replays.delete(token);
  return outcome;
}

/** A caller as an audit line names them: issuer and subject, each bounded by `auditText`. */
function auditPrincipal(
  principal: Pick<Principal, 'issuer' | 'subject'>,
): NonNullable<AuditEntry['principal']> {
  return { issuer: auditText(principal.issuer), subject: auditText(principal.subject) };
}

/**
 * A read's `entry` as it is written: stamped with the time it is written (a `started` line may
 * follow an approval that took minutes), its names bounded as `auditText` writes them (its `tool`
 * holds a prompt name or a resource URI a client gave).
 */
function writtenEntry(entry: AuditEntry): AuditEntry {
  const principal = entry.principal;
  const time = isoTime(Date.now());
  if (
    entry.tool.length <= AUDIT_TEXT_MAX_CHARS &&
    (principal === undefined ||
      (principal.issuer.length <= AUDIT_TEXT_MAX_CHARS &&
        principal.subject.length <= AUDIT_TEXT_MAX_CHARS))
  ) {
    return entry.time === time ? entry : { ...entry, time };
  }
  return {
    ...entry,
    time,
    tool: auditText(entry.tool),
    ...(principal === undefined ? {} : { principal: auditPrincipal(principal) }),
  };
}

/** The audit failure that stopped a call before it ran (the registry may wrap it), if one did. */
function auditFailure(error: unknown): AuditLogError | undefined {
  for (let current = error, depth = 0; current !== undefined && depth < 4; depth += 1) {
    if (AuditLogError.isInstance(current)) return current;
    current = (current as { cause?: unknown } | null)?.cause;
  }
  return undefined;
}

/**
 * The tools of one listing that may be bridged, with the pin digest of the very definition each
 * is built from: visible in the review, listed once under its name, and whose digest is the
 * accepted pin.
 */
function builtDigests(
  listing: readonly McpToolInfo[],
  identity: string,
  visible: ReadonlySet<string>,
  accepted: (tool: string) => PinRecord | undefined,
): Map<string, string> {
  const built = new Map<string, string>();
  const twice = new Set<string>();
  for (const tool of listing) {
    if (built.has(tool.name) || twice.has(tool.name)) {
      built.delete(tool.name);
      twice.add(tool.name);
      continue;
    }
    if (!visible.has(tool.name)) continue;
    const digest = definitionDigest(identity, tool);
    if (accepted(tool.name)?.sha256 === digest) built.set(tool.name, digest);
  }
  return built;
}

/** What a call to a tool instance whose definition is no longer the accepted pin answers. */
function pinChangedResult(name: string): ToolResult {
  return errorResult(
    `The definition of ${name} that was offered is no longer the accepted pin, so the call did not run. List the tools again; if it is hidden, review it with toolfence-mcp pin --show.`,
    { metadata: { code: 'GATEWAY_PIN_CHANGED' } },
  );
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

/** Longest policy reason shown to the model, in characters. */
const MAX_REASON_CHARS = 300;

/** The policy's reason for a denial (the rule's `reason`), escaped and bounded for the model. */
function denialReason(error: unknown): string {
  return reasonShown((error as { details?: { reason?: unknown } }).details?.reason);
}

/** A policy's reason, escaped and bounded for the model (`no reason given` when there is none). */
function reasonShown(reason: unknown): string {
  if (typeof reason !== 'string' || reason === '') return 'no reason given';
  // Control characters (a newline, an escape sequence) become spaces; invisible ones are shown.
  const shown = Array.from(escapeInvisible(reason), (char) =>
    (char.codePointAt(0) as number) < 0x20 || char === '\u007f' ? ' ' : char,
  ).join('');
  return shown.length > MAX_REASON_CHARS ? `${shown.slice(0, MAX_REASON_CHARS)}…` : shown;
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

/** A per-caller credential failure (no caller, the exchange failed) in `error` or its causes. */
function callerCredentialFailure(
  error: unknown,
): GatewayTokenExchangeError | GatewayCallerCredentialError | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current !== undefined && current !== null; depth++) {
    if (
      GatewayTokenExchangeError.isInstance(current) ||
      GatewayCallerCredentialError.isInstance(current)
    ) {
      return current;
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

function errorText(text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** A registry result in MCP's shape: `json` blocks become text, annotations are kept. */
function toCallResult(result: ToolResult): CallToolResult {
  // The content as it is unless a block is `json` (a bridged upstream's result has none).
  let content: readonly unknown[] = result.content;
  if (content.some((block) => (block as { type?: unknown }).type === 'json')) {
    content = result.content.map((block) =>
      block.type === 'json' ? { type: 'text', text: JSON.stringify(block.json) } : block,
    );
  }
  const mapped: { -readonly [K in keyof CallToolResult]: CallToolResult[K] } = {
    content: content as CallToolResult['content'],
  };
  if (result.structuredContent !== undefined) mapped.structuredContent = result.structuredContent;
  if (result.isError === true) mapped.isError = true;
  return mapped;
}
