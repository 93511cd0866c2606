import { hash } from 'node:crypto';
import {
  type EffectiveContract,
  isContentTrustLevel,
  isRiskLevel,
  type RiskLevel,
  type ToolContract,
} from '@toolfence/tool-contract';
import { ToolsError } from '../tools-error.js';
import type { ApprovalGrant, CallAuthorization, InvokeOptions } from './approval-grant.js';
import { ApprovalRequiredError } from './approval-required-error.js';
import {
  type AuthorizationRequest,
  type Authorizer,
  isPermissionDecision,
  type PermissionDecision,
} from './authorization.js';
import type { BudgetReservation, BudgetReserver } from './budget.js';
import { BudgetExceededError } from './budget-exceeded-error.js';
import { type InvokedEnd, settleInvoked } from './budget-settlement.js';
import { ConfigurationError } from './configuration-error.js';
import { contractOf } from './contract-of.js';
import { checkEffectDescriptor, resolveEffect } from './effect.js';
import type { FlowRaise, SessionFlowGuard } from './flow-raise.js';
import {
  type JsonSnapshotLimits,
  resolveSnapshotLimits,
  snapshotJsonObject,
} from './json-snapshot.js';
import {
  type OperationPlan,
  planOperationContracts,
  resolveCallContract,
} from './operation-contracts.js';
import { checkOptionKeys } from './option-keys.js';
import { PermissionDeniedError } from './permission-denied-error.js';
import { RegistryClosedError } from './registry-closed-error.js';
import {
  AjvSchemaValidator,
  type SchemaValidator,
  type ValidationResult,
} from './schema-validator.js';
import type { JsonObject, JsonValue, Tool, ToolContext, ToolResult, ToolSpec } from './tool.js';
import { ToolCloseError } from './tool-close-error.js';
import { createToolContext, isCreatedToolContext, type ToolContextInit } from './tool-context.js';
import { ToolExecutionError } from './tool-execution-error.js';
import { ToolInputError } from './tool-input-error.js';
import { ToolNotFoundError } from './tool-not-found-error.js';
import { ToolStartError } from './tool-start-error.js';

/** One call as middleware sees it: the frozen argument snapshot and the frozen context. */
export interface ToolCall {
  /** Unique within the registry, for correlating events and traces. */
  readonly callId: string;
  /** Name the caller asked for (it may not be registered: middleware sees not-found calls). */
  readonly toolName: string;
  /** Frozen snapshot of the call's arguments, not yet validated against the input schema. */
  readonly args: JsonObject;
  /** The call's frozen context. */
  readonly context: ToolContext;
}

/**
 * Wraps the whole call (lookup, validation, authorization, execution), so it also sees
 * not-found, invalid and denied calls. It cannot change the arguments; it may replace the result
 * or throw.
 */
export type ToolMiddleware = (
  call: ToolCall,
  next: () => Promise<ToolResult>,
) => Promise<ToolResult>;

/** What the approval callback is asked. `signal` aborts on timeout or when the call is aborted. */
export interface ApprovalRequest extends AuthorizationRequest {
  /** The authorizer's reason for asking (the flow guard's, when it raised the call to `ask`). */
  readonly reason: string | undefined;
  /** Aborts when the approval times out or the call is aborted; stop waiting for a human then. */
  readonly signal: AbortSignal;
  /**
   * The flow guard's raise, when it raised this call or reports one: the prompt should name the
   * flow (its `reason` names the sources, the private data and the sink). A yes covers this one
   * call only.
   */
  readonly flow?: FlowRaise;
}

/** Answers an `ask`: true runs the call, false denies it. */
export type ApprovalCallback = (request: ApprovalRequest) => boolean | Promise<boolean>;

/** Fields every audit event carries. */
export interface ToolEventBase {
  /** The call's registry-unique ID; all events of one call share it. */
  readonly callId: string;
  /** Name of the tool the call asked for. */
  readonly toolName: string;
  /** `runId` of the call's context. */
  readonly runId: string;
  /** `stepId` of the call's context, if it has one. */
  readonly stepId: string | undefined;
  /** `sha256:<hex>` of the canonical JSON (sorted keys) of the argument snapshot. */
  readonly argsDigest: string;
  /** The snapshot itself, only with `eventArguments: 'snapshot'`. */
  readonly args?: JsonObject;
  /** Milliseconds since the epoch. */
  readonly timestamp: number;
  /**
   * The operation the call performs, for a tool with per-operation contracts, once known (the
   * `started` event and calls refused before validation have none).
   */
  readonly operation?: string;
  /** Risk of the contract the call was judged by, once known (a declared contract only). */
  readonly risk?: RiskLevel;
  /**
   * The flow guard's raise for the call, when it raised one (enforced) or reports one (observe
   * mode): the labels and the sink that decided.
   */
  readonly flow?: FlowRaise;
}

/** A structured audit event. Raw arguments are never included unless asked for. */
export type ToolEvent =
  | (ToolEventBase & {
      /** The call entered the registry (before lookup, validation and authorization). */
      readonly type: 'started';
    })
  | (ToolEventBase & {
      /** The call was refused by a permission decision or a budget. */
      readonly type: 'denied';
      /** Error code of the refusal, for example `POLICY_BUDGET_EXCEEDED`. */
      readonly code: string;
      /** Log-safe reason from the decision or budget, if any. */
      readonly reason: string | undefined;
      /** Milliseconds from `started` to the refusal. */
      readonly durationMs: number;
    })
  | (ToolEventBase & {
      /** The call threw for any other reason (not found, invalid input, tool error, ...). */
      readonly type: 'failed';
      /** Error code of the thrown error (`REGISTRY_TOOL_FAILED` for a foreign error). */
      readonly code: string;
      /** Milliseconds from `started` to the failure. */
      readonly durationMs: number;
    })
  | (ToolEventBase & {
      /** The tool returned a result. */
      readonly type: 'completed';
      /** The result's `isError`: the tool ran but reported a failure. */
      readonly isError: boolean;
      /** Milliseconds from `started` to the result. */
      readonly durationMs: number;
    });

/** Where diagnostics go (for example a failed deferred close). Default: nowhere. */
export interface RegistryLogger {
  /** Reports a problem the registry worked around; `details` are log-safe. */
  warn(message: string, details?: Readonly<Record<string, unknown>>): void;
}

/** Options of {@link ToolRegistry}. */
export interface ToolRegistryOptions {
  /** Decides every call (required: there is no implicit allow). */
  readonly authorizer: Authorizer;
  /** Tools installed at construction; their `start()` runs at once (calls wait for it). */
  readonly tools?: readonly Tool[];
  /** Outermost first. Default none. */
  readonly middleware?: readonly ToolMiddleware[];
  /**
   * Default: a new {@link AjvSchemaValidator} (each schema in its declared dialect, `format` as an
   * annotation, its notes sent to `logger`).
   */
  readonly validator?: SchemaValidator;
  /** Receives audit events; errors it throws are logged and ignored. Default none. */
  readonly onEvent?: (event: ToolEvent) => void;
  /** `'digest'` (default): events carry only the digest; `'snapshot'`: the snapshot too. */
  readonly eventArguments?: 'digest' | 'snapshot';
  /** Argument snapshot limits. Default depth 64, 10,000 nodes, 8 MiB. */
  readonly limits?: Partial<JsonSnapshotLimits>;
  /** Answers `ask` decisions. Default none: `ask` is denied with `APPROVAL_REQUIRED`. */
  readonly approval?: ApprovalCallback;
  /** How long an approval may take before the call is denied. Default 120,000 ms. */
  readonly approvalTimeoutMs?: number;
  /** Call budgets, reserved after authorization and before the tool runs. Default none. */
  readonly budget?: BudgetReserver;
  /**
   * A `FlowGuard`: after the authorizer's verdict it may raise it (allow to ask, anything to
   * deny) for a call to a sink in an exposed session (`context.session`), and it records every
   * result the tools return. Default none.
   */
  readonly flowGuard?: SessionFlowGuard;
  /** Default none. */
  readonly logger?: RegistryLogger;
}

/** What {@link ToolRegistry.diagnostics} reports. */
export interface RegistryDiagnostics {
  /** Tools currently registered. */
  readonly tools: number;
  /** Calls running now, on current and retiring tool instances. */
  readonly activeCalls: number;
  /** Replaced or removed instances still finishing calls before they are closed. */
  readonly retiringTools: number;
  /** Tool names with queued or running register/remove operations. */
  readonly pendingChanges: number;
}

/** Options of {@link ToolRegistry.register}. */
export interface RegisterOptions {
  /** Replace a tool of the same name instead of failing. Default false. */
  readonly replace?: boolean;
}

/** The default of {@link ToolRegistryOptions.approvalTimeoutMs}. */
export const DEFAULT_APPROVAL_TIMEOUT_MS = 120_000;

interface Entry {
  readonly name: string;
  readonly tool: Tool;
  readonly spec: ToolSpec;
  /** The static contract (`contractOf(spec)`), read once at registration. */
  readonly contract: ToolContract | undefined;
  /** Per-operation contracts, checked and copied at registration. */
  readonly plan: OperationPlan | undefined;
  /** The input schema's compiled check, when the validator is the stock AjvSchemaValidator. */
  readonly check: ((value: JsonValue) => ValidationResult) | undefined;
  /** Ends a call's lease with its result (checked); one per entry, not a closure per call. */
  readonly onResult: (result: unknown) => ToolResult;
  /** Ends a call's lease with its failure, for a context without a signal. */
  readonly onFailure: (error: unknown) => never;
  /** Calls holding this instance. */
  leases: number;
  /** Set for a constructor-provided tool while its `start()` runs. */
  starting: Promise<void> | undefined;
  startError: ToolStartError | undefined;
  retired: boolean;
  /** Settles when the retired instance has been closed (rejects with ToolCloseError). */
  retirement: Promise<void> | undefined;
  finishRetirement: (() => void) | undefined;
  /**
   * The flow guard's result handler made for the last session and contract (most calls repeat
   * them: no closure per call).
   */
  recorder: FlowRecorder | undefined;
}

/** A result handler that records in one session by one contract. */
interface FlowRecorder {
  readonly session: string;
  readonly contract: ToolContract | undefined;
  readonly onResult: (value: unknown) => ToolResult;
}

/** What an audited call learned about itself while it was screened (for its closing event). */
interface CallTrace {
  operation: string | undefined;
  contract: ToolContract | undefined;
  flow?: FlowRaise | undefined;
}

/** What the registry remembers about a {@link CallAuthorization} it issued. */
interface AuthorizationRecord {
  /** The registered instance judged (a grant binds to it: a replacement never inherits one). */
  readonly entry: Entry;
  readonly runId: string;
  readonly session: string;
  /** The frozen snapshot the verdict is about (digested only when granted). */
  readonly args: JsonObject;
  granted: boolean;
}

/** What the registry remembers about an {@link ApprovalGrant} it issued. */
interface GrantRecord {
  readonly toolName: string;
  readonly argsDigest: string;
  /** The registered instance the grant is for (its registration, not its spec object). */
  readonly entry: Entry;
  readonly runId: string;
  readonly session: string;
  used: boolean;
}

/** A grant as presented to one call: `fresh` is false when it had been presented before. */
interface PresentedGrant {
  readonly record: GrantRecord;
  readonly fresh: boolean;
}

let callCounter = 0;

const REGISTER_OPTION_KEYS: ReadonlySet<string> = new Set(['replace']);

function checkRegisterOptions(options: RegisterOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new ConfigurationError('register options must be an object such as { replace: true }', {
      details: { option: 'options' },
    });
  }
  if (typeof (options as { invoke?: unknown }).invoke === 'function') {
    throw new ConfigurationError(
      'register takes one tool and its options; register several with registerAll([...tools])',
      { details: { option: 'options' } },
    );
  }
  for (const key of Object.keys(options)) {
    if (!REGISTER_OPTION_KEYS.has(key)) {
      throw new ConfigurationError(`Unknown register option ${quote(key)} (accepted: replace)`, {
        details: { option: key },
      });
    }
  }
  if (options.replace !== undefined && typeof options.replace !== 'boolean') {
    throw new ConfigurationError('register option replace must be a boolean', {
      details: { option: 'replace' },
    });
  }
}

/**
 * The permission boundary: every call goes through {@link ToolRegistry.invoke}, which snapshots
 * the arguments, leases the current tool instance, validates, authorizes (scope, authorizer,
 * approval, budget) and only then runs the tool.
 */
export class ToolRegistry {
  readonly #entries = new Map<string, Entry>();
  readonly #instances = new Set<Tool>();
  readonly #operations = new Map<string, Promise<void>>();
  readonly #retiring = new Set<Entry>();
  readonly #authorizer: Authorizer;
  readonly #validator: SchemaValidator;
  readonly #limits: JsonSnapshotLimits;
  readonly #onEvent: ((event: ToolEvent) => void) | undefined;
  readonly #eventArguments: 'digest' | 'snapshot';
  readonly #approval: ApprovalCallback | undefined;
  readonly #approvalTimeoutMs: number;
  readonly #budget: BudgetReserver | undefined;
  readonly #flowGuard: SessionFlowGuard | undefined;
  readonly #logger: RegistryLogger | undefined;
  readonly #pipeline: (call: ToolCall) => Promise<ToolResult>;
  /** No middleware and no onEvent: nobody sees a ToolCall, so none is built (the hot path). */
  readonly #direct: boolean;
  readonly #initialStarts: Promise<void>[] = [];
  readonly #authorizations = new WeakMap<CallAuthorization, AuthorizationRecord>();
  readonly #grants = new WeakMap<ApprovalGrant, GrantRecord>();
  readonly #presented = new WeakMap<ToolCall, PresentedGrant>();
  /**
   * The authorizer's effective contract of a call (`Authorizer.effectiveContract`), taken when the
   * flow guard checked it and handed to the guard again with the call's result.
   */
  readonly #effective = new WeakMap<AuthorizationRequest, EffectiveContract>();
  #closing = false;
  #closed: Promise<void> | undefined;

  /**
   * Checks the options and installs `options.tools` (their `start()` runs in the background).
   * Throws {@link ConfigurationError} for an invalid option or two tools with the same name.
   */
  constructor(options: ToolRegistryOptions) {
    checkOptionKeys(
      options,
      [
        'authorizer',
        'tools',
        'middleware',
        'validator',
        'onEvent',
        'eventArguments',
        'limits',
        'approval',
        'approvalTimeoutMs',
        'budget',
        'flowGuard',
        'logger',
      ],
      'ToolRegistry',
    );
    if (typeof options !== 'object' || options === null) {
      throw new ConfigurationError('ToolRegistry needs an options object', {
        details: { option: 'options' },
      });
    }
    if (typeof options.authorizer?.authorize !== 'function') {
      throw new ConfigurationError(
        'ToolRegistry needs an authorizer (use AllowAllAuthorizer in tests only)',
        { details: { option: 'authorizer' } },
      );
    }
    this.#authorizer = options.authorizer;
    // The default validator's notes (an unknown format, say) go to the registry's logger.
    this.#validator =
      options.validator ??
      new AjvSchemaValidator(options.logger === undefined ? {} : { logger: options.logger });
    if (
      typeof this.#validator.validate !== 'function' ||
      typeof this.#validator.prepare !== 'function'
    ) {
      throw new ConfigurationError('validator must have prepare() and validate()', {
        details: { option: 'validator' },
      });
    }
    this.#limits = resolveSnapshotLimits(options.limits);
    checkOptionalFunction(options.onEvent, 'onEvent');
    checkOptionalFunction(options.approval, 'approval');
    this.#onEvent = options.onEvent;
    this.#approval = options.approval;
    const eventArguments: unknown = options.eventArguments ?? 'digest';
    if (eventArguments !== 'digest' && eventArguments !== 'snapshot') {
      throw new ConfigurationError("eventArguments must be 'digest' or 'snapshot'", {
        details: { option: 'eventArguments' },
      });
    }
    this.#eventArguments = eventArguments;
    const timeout: unknown = options.approvalTimeoutMs ?? DEFAULT_APPROVAL_TIMEOUT_MS;
    if (typeof timeout !== 'number' || !Number.isSafeInteger(timeout) || timeout < 1) {
      throw new ConfigurationError('approvalTimeoutMs must be a positive integer', {
        details: { option: 'approvalTimeoutMs' },
      });
    }
    this.#approvalTimeoutMs = timeout;
    if (options.budget !== undefined && typeof options.budget.reserve !== 'function') {
      throw new ConfigurationError('budget must be a CallBudget', {
        details: { option: 'budget' },
      });
    }
    this.#budget = options.budget;
    const flowGuard = options.flowGuard;
    if (
      flowGuard !== undefined &&
      (typeof flowGuard !== 'object' ||
        flowGuard === null ||
        typeof flowGuard.check !== 'function' ||
        typeof flowGuard.record !== 'function')
    ) {
      throw new ConfigurationError('flowGuard must be a FlowGuard', {
        details: { option: 'flowGuard' },
      });
    }
    this.#flowGuard = flowGuard;
    this.#logger = options.logger;
    const middleware = options.middleware ?? [];
    if (!Array.isArray(middleware)) {
      throw new ConfigurationError('middleware must be an array', {
        details: { option: 'middleware' },
      });
    }
    for (const [index, layer] of middleware.entries()) {
      checkOptionalFunction(layer, `middleware[${index}]`);
    }
    this.#pipeline = compose(middleware as readonly ToolMiddleware[], (call) =>
      this.#execute(call),
    );
    this.#direct = middleware.length === 0 && this.#onEvent === undefined;
    for (const tool of options.tools ?? []) this.#installInitial(tool);
  }

  /** Resolves when every constructor-provided tool has started; rejects with the first {@link ToolStartError}. */
  async ready(): Promise<void> {
    await Promise.all(this.#initialStarts);
  }

  /** The tool currently installed under `name`. */
  get(name: string): Tool | undefined {
    return this.#entries.get(name)?.tool;
  }

  /** True when a tool is installed under `name`. */
  has(name: string): boolean {
    return this.#entries.has(name);
  }

  /** Installed tool names, sorted. */
  names(): string[] {
    return [...this.#entries.keys()].sort(compareNames);
  }

  /** Specs of the installed tools, in {@link names} order. */
  specs(): ToolSpec[] {
    return this.names().map((name) => (this.#entries.get(name) as Entry).spec);
  }

  /**
   * Counters for health checks and leak tests: installed tools, calls holding a lease, retired
   * instances not yet closed, and names with a registry change in progress.
   */
  diagnostics(): RegistryDiagnostics {
    let activeCalls = 0;
    for (const entry of this.#entries.values()) activeCalls += entry.leases;
    for (const entry of this.#retiring) activeCalls += entry.leases;
    return {
      tools: this.#entries.size,
      activeCalls,
      retiringTools: this.#retiring.size,
      pendingChanges: this.#operations.size,
    };
  }

  /** True once `close()` has been called. */
  get closed(): boolean {
    return this.#closing;
  }

  /**
   * Starts and installs a tool. A name in use fails with {@link ConfigurationError} unless
   * `replace` is set (then it behaves as {@link replace}); re-registering the installed instance
   * is a no-op. A failing `start()` closes the tool and raises {@link ToolStartError}.
   */
  async register(tool: Tool, options: RegisterOptions = {}): Promise<void> {
    this.#assertOpen();
    checkRegisterOptions(options);
    const spec = this.#checkTool(tool);
    return this.#serial(spec.name, async () => {
      this.#assertOpen();
      const current = this.#entries.get(spec.name);
      if (current?.tool === tool) return;
      if (current !== undefined && options.replace !== true) {
        throw new ConfigurationError(
          `A tool named ${quote(spec.name)} is already registered (pass { replace: true } or call replace())`,
          { details: { tool: spec.name } },
        );
      }
      await this.#swapIn(spec, tool);
    });
  }

  /**
   * Starts and installs several tools at once, all or none: every spec and name is checked
   * before any tool starts (a name used twice in `tools`, or already in use without `replace`,
   * fails with {@link ConfigurationError} and starts nothing), then the tools are registered in
   * order. If one fails to start, the ones this call installed are removed again (and closed) and
   * the {@link ToolStartError} is raised. `registry.registerAll(await bridgeTools(client))` is the
   * usual way to add a whole server.
   */
  async registerAll(tools: readonly Tool[], options: RegisterOptions = {}): Promise<void> {
    this.#assertOpen();
    if (!Array.isArray(tools)) {
      throw new ConfigurationError('registerAll takes an array of tools', {
        details: { option: 'tools' },
      });
    }
    checkRegisterOptions(options);
    const specs = tools.map((tool) => this.#checkTool(tool));
    const seen = new Set<string>();
    for (const spec of specs) {
      if (seen.has(spec.name)) {
        throw new ConfigurationError(`Two of the tools are named ${quote(spec.name)}`, {
          details: { tool: spec.name },
        });
      }
      seen.add(spec.name);
      const current = this.#entries.get(spec.name);
      if (current !== undefined && options.replace !== true) {
        throw new ConfigurationError(
          `A tool named ${quote(spec.name)} is already registered (pass { replace: true } or call replace())`,
          { details: { tool: spec.name } },
        );
      }
    }
    const installed: string[] = [];
    try {
      for (const [index, tool] of tools.entries()) {
        const name = (specs[index] as ToolSpec).name;
        const before = this.#entries.get(name);
        await this.register(tool, options);
        if (before === undefined) installed.push(name);
      }
    } catch (error) {
      for (const name of installed.reverse()) {
        await this.unregister(name).catch(() => undefined);
      }
      throw error;
    }
  }

  /**
   * Replaces the tool installed under `name` (missing: {@link ToolNotFoundError}). The new tool
   * starts first; if that fails it is closed, {@link ToolStartError} is raised and the old tool
   * stays. Otherwise the swap is atomic: new calls get the new tool, calls in flight finish on
   * the old one, which is closed when its last call ends (at once, and awaited, if idle). A
   * {@link ToolCloseError} from that close arrives after the swap was committed.
   */
  async replace(name: string, tool: Tool): Promise<void> {
    this.#assertOpen();
    const spec = this.#checkTool(tool);
    if (spec.name !== name) {
      throw new ConfigurationError(`The new tool's spec.name must be ${quote(name)}`, {
        details: { tool: name },
      });
    }
    return this.#serial(name, async () => {
      this.#assertOpen();
      const current = this.#entries.get(name);
      if (current === undefined) throw notFound(name);
      if (current.tool === tool) return;
      await this.#swapIn(spec, tool);
    });
  }

  /**
   * Removes a tool (missing: {@link ToolNotFoundError}); waits for a registration or replacement
   * of that name in progress and removes its result. The tool closes when its last call ends.
   */
  async unregister(name: string): Promise<void> {
    this.#assertOpen();
    return this.#serial(name, async () => {
      this.#assertOpen();
      const entry = this.#entries.get(name);
      if (entry === undefined) throw notFound(name);
      this.#entries.delete(name);
      await this.#retire(entry, true);
    });
  }

  /**
   * Calls a tool through the whole pipeline: context check, argument snapshot, middleware,
   * lease, validation, read-only scope, authorizer, approval, budget, the tool. With
   * `options.approval` (a grant from {@link grantApproval}) an `ask` verdict for exactly the
   * granted call is answered by the grant instead of the `approval` callback.
   */
  invoke(
    name: string,
    args: unknown,
    context: ToolContext | ToolContextInit,
    options?: InvokeOptions,
  ): Promise<ToolResult> {
    let presented: PresentedGrant | undefined;
    let snapshot: JsonObject;
    let frozenContext: ToolContext;
    try {
      this.#assertOpen();
      if (options !== undefined) presented = this.#presentGrant(options);
      frozenContext = isCreatedToolContext(context) ? context : createToolContext(context);
      snapshot = snapshotJsonObject(args === undefined ? {} : args, this.#limits);
    } catch (error) {
      return Promise.reject(error);
    }
    callCounter += 1;
    // Without middleware and onEvent the call object and its ID would be seen by nobody.
    if (this.#direct) return this.#leasedDirect(name, snapshot, frozenContext, presented);
    const call: ToolCall = Object.freeze({
      callId: `call-${callCounter}`,
      toolName: name,
      args: snapshot,
      context: frozenContext,
    });
    if (presented !== undefined) this.#presented.set(call, presented);
    return this.#pipeline(call);
  }

  /**
   * Asks the authorizer about a call without running it, so a host with its own approval flow
   * (an agent framework's human-in-the-loop) can ask a human first. Takes the same argument
   * snapshot and runs the same lookup, validation and read-only scope check as {@link invoke},
   * rejecting with the same errors; then resolves with the authorizer's verdict (a throwing or
   * malformed authorizer counts as `deny`). It runs no middleware, approval callback, budget or
   * tool, and emits no events.
   */
  async authorize(
    name: string,
    args: unknown,
    context: ToolContext | ToolContextInit,
  ): Promise<CallAuthorization> {
    this.#assertOpen();
    const frozenContext = isCreatedToolContext(context) ? context : createToolContext(context);
    const snapshot = snapshotJsonObject(args === undefined ? {} : args, this.#limits);
    const entry = this.#entries.get(name);
    if (entry === undefined) throw notFound(name);
    if (entry.starting !== undefined) await entry.starting;
    const request = this.#screen(entry, name, snapshot, frozenContext);
    let answer: unknown;
    try {
      answer = await this.#authorizer.authorize(request);
    } catch {
      answer = { verdict: 'deny', reason: 'authorizer-error' };
    }
    let decision: PermissionDecision = isPermissionDecision(answer)
      ? answer
      : { verdict: 'deny', reason: 'invalid-decision' };
    let flow: FlowRaise | undefined;
    if (this.#flowGuard !== undefined) {
      try {
        flow = this.#flowCheck(request, decision);
        if (flow?.enforced === true) decision = raised(decision, flow);
      } catch {
        decision = { verdict: 'deny', reason: 'flow-guard-error' };
      }
    }
    const authorization: CallAuthorization = Object.freeze({
      toolName: name,
      verdict: decision.verdict,
      reason: decision.reason,
      ...(flow === undefined ? {} : { flow }),
    });
    this.#authorizations.set(authorization, {
      entry,
      runId: frozenContext.runId,
      session: sessionOf(frozenContext),
      args: snapshot,
      granted: false,
    });
    return authorization;
  }

  /**
   * Whether some call of tool `name` could be asked about: false only when the authorizer
   * promises it never asks about this tool (`Authorizer.mayAsk`) and no flow guard could raise a
   * call of it to `ask`. True for an unknown or starting tool, an authorizer without `mayAsk`, and
   * one that throws. A host's approval flow may skip its {@link authorize} preview when this is
   * false: {@link invoke} still authorizes every call.
   */
  mayAsk(name: string): boolean {
    if (this.#flowGuard !== undefined) return true;
    const authorizer = this.#authorizer;
    if (typeof authorizer.mayAsk !== 'function') return true;
    const entry = this.#entries.get(name);
    if (entry === undefined || entry.starting !== undefined) return true;
    try {
      return authorizer.mayAsk({ toolName: name, spec: entry.spec }) !== false;
    } catch {
      return true;
    }
  }

  /**
   * Records a human's yes to an `ask` from {@link authorize} and returns the single-use grant to
   * pass to {@link invoke}. The grant is bound to the tool instance, the run id and the digest of
   * the argument snapshot of that authorization. Throws {@link ConfigurationError} for an authorization this
   * registry did not issue, one whose verdict is not `ask`, or one already granted.
   */
  grantApproval(authorization: CallAuthorization): ApprovalGrant {
    const record = this.#authorizations.get(authorization);
    if (record === undefined) {
      throw new ConfigurationError('grantApproval needs an authorization from this registry', {
        details: { option: 'authorization' },
      });
    }
    if (authorization.verdict !== 'ask') {
      throw new ConfigurationError(
        `Only an 'ask' verdict can be approved (this one is ${authorization.verdict})`,
        { details: { option: 'authorization', verdict: authorization.verdict } },
      );
    }
    if (record.granted) {
      throw new ConfigurationError('This authorization has already been granted', {
        details: { option: 'authorization' },
      });
    }
    record.granted = true;
    const grant: ApprovalGrant = Object.freeze({
      toolName: authorization.toolName,
      argsDigest: digestJson(record.args),
      runId: record.runId,
      session: record.session,
    });
    this.#grants.set(grant, {
      toolName: grant.toolName,
      argsDigest: grant.argsDigest,
      entry: record.entry,
      runId: record.runId,
      session: record.session,
      used: false,
    });
    return grant;
  }

  /**
   * Stops new calls and registrations at once, waits for calls in flight, then closes every tool
   * exactly once. Concurrent and repeated calls share one close. A caller may stop waiting with
   * `signal` (its promise rejects); the close still completes. Rejects with {@link ToolCloseError}
   * when some tool's `close()` failed (every other tool was still closed).
   */
  close(options: { readonly signal?: AbortSignal } = {}): Promise<void> {
    if (this.#closed === undefined) {
      this.#closing = true;
      this.#closed = this.#closeAll();
      this.#closed.catch(() => {});
    }
    const signal = options.signal;
    if (signal === undefined) return this.#closed;
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void =>
        reject(
          new RegistryClosedError('Stopped waiting for the registry to close; it still closes', {
            details: { reason: 'wait-aborted' },
          }),
        );
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      (this.#closed as Promise<void>).then(
        (value) => {
          signal.removeEventListener('abort', onAbort);
          resolve(value);
        },
        (error: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(error);
        },
      );
    });
  }

  // ---------------------------------------------------------------------------------------------

  async #closeAll(): Promise<void> {
    // Registrations in progress see `#closing` and back out (closing their new tool).
    await Promise.all(this.#operations.values());
    const waits: Promise<void>[] = [];
    for (const [name, entry] of this.#entries) {
      this.#entries.delete(name);
      waits.push(this.#retire(entry, true));
    }
    for (const entry of this.#retiring) {
      if (entry.retirement !== undefined) waits.push(entry.retirement);
    }
    for (const start of this.#initialStarts) waits.push(start.then(noop, noop));
    const results = await Promise.allSettled(waits);
    const failures = results.filter((result) => result.status === 'rejected');
    if (failures.length > 0) {
      throw new ToolCloseError('Some tools failed to close; the registry is closed regardless', {
        details: { committed: true, failed: failures.length },
        cause: new AggregateError(failures.map((failure) => failure.reason)),
      });
    }
  }

  /** Checks invoke's options and marks a presented grant used (it is single-use). */
  #presentGrant(options: InvokeOptions): PresentedGrant | undefined {
    checkOptionKeys(options, ['approval'], 'invoke');
    if (options.approval === undefined) return undefined;
    const record = this.#grants.get(options.approval);
    if (record === undefined) {
      throw new ConfigurationError('approval must be a grant from this registry (grantApproval)', {
        details: { option: 'approval' },
      });
    }
    const fresh = !record.used;
    record.used = true;
    return { record, fresh };
  }

  #assertOpen(): void {
    if (this.#closing) {
      throw new RegistryClosedError('The registry is closed', { details: { reason: 'closed' } });
    }
  }

  #checkTool(tool: Tool): ToolSpec {
    if (typeof tool !== 'object' || tool === null || typeof tool.invoke !== 'function') {
      throw new ConfigurationError('A tool must be an object with an invoke() method', {
        details: { option: 'tool' },
      });
    }
    const spec = tool.spec;
    if (typeof spec !== 'object' || spec === null) {
      throw new ConfigurationError('A tool needs a spec object', { details: { option: 'spec' } });
    }
    const name: unknown = spec.name;
    if (typeof name !== 'string' || name === '' || name.length > 256) {
      throw new ConfigurationError('A tool needs a spec.name of 1 to 256 characters', {
        details: { option: 'spec.name' },
      });
    }
    if (typeof spec.description !== 'string') {
      throw new ConfigurationError(`Tool ${quote(name)}: spec.description must be a string`, {
        details: { tool: name, option: 'spec.description' },
      });
    }
    for (const method of ['start', 'close'] as const) {
      if (tool[method] !== undefined && typeof tool[method] !== 'function') {
        throw new ConfigurationError(`Tool ${quote(name)}: ${method} must be a function`, {
          details: { tool: name, option: method },
        });
      }
    }
    if (spec.effect !== undefined) checkEffectDescriptor(spec.effect, name);
    if (spec.operationContracts !== undefined) planOperationContracts(spec);
    if (spec.operationArgument !== undefined && typeof spec.operationArgument !== 'string') {
      throw new ConfigurationError(`Tool ${quote(name)}: spec.operationArgument must be a string`, {
        details: { tool: name, option: 'spec.operationArgument' },
      });
    }
    if (spec.origin !== undefined) checkOrigin(spec.origin, name);
    try {
      this.#validator.prepare(spec.inputSchema);
    } catch (error) {
      if (ConfigurationError.isInstance(error)) {
        throw new ConfigurationError(`Tool ${quote(name)}: ${error.message}`, {
          details: { tool: name, option: 'spec.inputSchema', ...error.details },
          cause: error,
        });
      }
      throw new ConfigurationError(`Tool ${quote(name)}: the input schema cannot be compiled`, {
        details: { tool: name, option: 'spec.inputSchema' },
        cause: error,
      });
    }
    return spec;
  }

  /**
   * The stock validator's compiled check for a registered schema (the same ajv function
   * `validate` would look up by schema on every call); undefined for any other validator, whose
   * `validate` then runs on every call.
   */
  #compiledCheck(spec: ToolSpec): ((value: JsonValue) => ValidationResult) | undefined {
    const validator = this.#validator;
    if (
      !(validator instanceof AjvSchemaValidator) ||
      validator.validate !== AjvSchemaValidator.prototype.validate
    ) {
      return undefined;
    }
    return validator.compile(spec.inputSchema);
  }

  #installInitial(tool: Tool): void {
    const spec = this.#checkTool(tool);
    if (this.#entries.has(spec.name)) {
      throw new ConfigurationError(`Two tools are named ${quote(spec.name)}`, {
        details: { tool: spec.name },
      });
    }
    if (this.#instances.has(tool)) {
      throw new ConfigurationError('The same tool instance is listed twice', {
        details: { tool: spec.name },
      });
    }
    const entry = newEntry(spec, tool, this.#compiledCheck(spec));
    this.#instances.add(tool);
    this.#entries.set(spec.name, entry);
    if (tool.start === undefined) return;
    const start = this.#serial(spec.name, async () => {
      try {
        await (tool.start as () => Promise<void>).call(tool);
      } catch (error) {
        entry.startError = startFailed(spec.name, error);
        if (this.#entries.get(spec.name) === entry) this.#entries.delete(spec.name);
        await this.#closeQuietly(tool, spec.name);
        this.#instances.delete(tool);
        throw entry.startError;
      } finally {
        entry.starting = undefined;
      }
    });
    entry.starting = start.then(noop, noop);
    start.catch(noop);
    this.#initialStarts.push(start);
  }

  /** Starts `tool`, then atomically installs it in place of whatever `spec.name` maps to. */
  async #swapIn(spec: ToolSpec, tool: Tool): Promise<void> {
    if (this.#instances.has(tool)) {
      throw new ConfigurationError('This tool instance is already registered under another name', {
        details: { tool: spec.name },
      });
    }
    this.#instances.add(tool);
    try {
      await tool.start?.();
    } catch (error) {
      await this.#closeQuietly(tool, spec.name);
      this.#instances.delete(tool);
      throw startFailed(spec.name, error);
    }
    if (this.#closing) {
      await this.#closeQuietly(tool, spec.name);
      this.#instances.delete(tool);
      throw new RegistryClosedError('The registry closed while the tool was starting', {
        details: { reason: 'closed', tool: spec.name },
      });
    }
    const previous = this.#entries.get(spec.name);
    this.#entries.set(spec.name, newEntry(spec, tool, this.#compiledCheck(spec)));
    if (previous !== undefined) await this.#retire(previous, true);
  }

  /**
   * Marks an entry retired: it closes when its last lease ends. Returns a promise that settles
   * when it has closed if it is idle now (`awaitIdle`), else at once.
   */
  #retire(entry: Entry, awaitIdle: boolean): Promise<void> {
    if (!entry.retired) {
      entry.retired = true;
      this.#retiring.add(entry);
      // A close nobody awaits (the instance was still leased) is reported to the logger.
      const deferred = entry.leases > 0;
      entry.retirement = new Promise<void>((resolve, reject) => {
        entry.finishRetirement = () => {
          entry.finishRetirement = undefined;
          const cleanup = (): void => {
            this.#retiring.delete(entry);
            this.#instances.delete(entry.tool);
          };
          const started = entry.starting ?? Promise.resolve();
          started
            .then(() => (entry.startError === undefined ? this.#closeTool(entry) : undefined))
            .then(
              () => {
                cleanup();
                resolve();
              },
              (error: unknown) => {
                cleanup();
                reject(error);
              },
            );
        };
      });
      entry.retirement.catch((error: unknown) => {
        if (!deferred) return;
        this.#logger?.warn('A retired tool failed to close', {
          tool: entry.name,
          code: ToolsError.isInstance(error) ? error.code : undefined,
        });
      });
      if (entry.leases === 0) entry.finishRetirement?.();
    }
    return awaitIdle && entry.leases === 0 && entry.retirement !== undefined
      ? entry.retirement
      : Promise.resolve();
  }

  async #closeTool(entry: Entry): Promise<void> {
    if (entry.tool.close === undefined) return;
    try {
      await entry.tool.close();
    } catch (error) {
      throw new ToolCloseError(
        `Tool ${quote(entry.name)} failed to close after it was removed; inspect the registry state, do not blindly retry`,
        { details: { tool: entry.name, committed: true }, cause: error },
      );
    }
  }

  async #closeQuietly(tool: Tool, name: string): Promise<void> {
    try {
      await tool.close?.();
    } catch {
      this.#logger?.warn('A tool that failed to start also failed to close', { tool: name });
    }
  }

  /** Runs registry changes for one name one after another. */
  #serial(name: string, operation: () => Promise<void>): Promise<void> {
    const previous = this.#operations.get(name) ?? Promise.resolve();
    const run = previous.then(operation);
    const settled = run.then(noop, noop);
    this.#operations.set(name, settled);
    void settled.then(() => {
      if (this.#operations.get(name) === settled) this.#operations.delete(name);
    });
    return run;
  }

  #execute(call: ToolCall): Promise<ToolResult> {
    return this.#onEvent === undefined
      ? this.#leased(call.toolName, call.args, call.context, this.#presented.get(call))
      : this.#executeWithEvents(call);
  }

  async #executeWithEvents(call: ToolCall): Promise<ToolResult> {
    const startedAt = performance.now();
    let eventBase = this.#eventBase(call);
    this.#emit(eventOf(eventBase, { type: 'started' }));
    const trace: CallTrace = { operation: undefined, contract: undefined };
    try {
      const result = await this.#leased(
        call.toolName,
        call.args,
        call.context,
        this.#presented.get(call),
        trace,
      );
      eventBase = judged(eventBase, trace);
      this.#emit(
        eventOf(eventBase, {
          type: 'completed',
          isError: result.isError === true,
          durationMs: performance.now() - startedAt,
          timestamp: Date.now(),
        }),
      );
      return result;
    } catch (error) {
      eventBase = judged(eventBase, trace);
      {
        const code = ToolsError.isInstance(error) ? error.code : ToolExecutionError.code;
        const durationMs = performance.now() - startedAt;
        if (PermissionDeniedError.isInstance(error) || BudgetExceededError.isInstance(error)) {
          const reason = error.details?.reason;
          this.#emit(
            eventOf(eventBase, {
              type: 'denied',
              code,
              reason: typeof reason === 'string' ? reason : undefined,
              durationMs,
              timestamp: Date.now(),
            }),
          );
        } else {
          this.#emit(
            eventOf(eventBase, { type: 'failed', code, durationMs, timestamp: Date.now() }),
          );
        }
      }
      throw error;
    }
  }

  /**
   * {@link invoke}'s hot path (no middleware, no events): the steps of #leased without an async
   * frame while nothing needs waiting for (the tool has started, no budget, the authorizer answers
   * at once); anything else continues on the general path, screened and authorized only once.
   */
  #leasedDirect(
    toolName: string,
    args: JsonObject,
    context: ToolContext,
    presented: PresentedGrant | undefined,
  ): Promise<ToolResult> {
    const entry = this.#entries.get(toolName);
    if (
      this.#closing ||
      entry === undefined ||
      entry.starting !== undefined ||
      this.#budget !== undefined
    ) {
      return this.#leased(toolName, args, context, presented);
    }
    entry.leases += 1;
    let authorizing: Promise<void> | undefined;
    let request: AuthorizationRequest;
    try {
      request = this.#screen(entry, toolName, args, context);
      authorizing = this.#authorize(entry, request, presented);
    } catch (error) {
      release(entry);
      return Promise.reject(error);
    }
    // No closure per call when nothing waits and no flow guard records: each one is an
    // allocation (and, in a build that keeps function names, a defineProperty call).
    const onResult =
      this.#flowGuard === undefined ? entry.onResult : this.#recorder(entry, context, request);
    if (authorizing !== undefined) {
      return authorizing.then(
        () => runLeased(entry, toolName, args, context, onResult),
        (error: unknown) => {
          release(entry);
          throw error;
        },
      );
    }
    return runLeased(entry, toolName, args, context, onResult);
  }

  /** The entry's result handler, then the flow guard's record (labels rise before the result reaches the caller, so the next call sees them). */
  #recorder(
    entry: Entry,
    context: ToolContext,
    request: AuthorizationRequest,
  ): (value: unknown) => ToolResult {
    const session = sessionOf(context);
    const contract = request.contract;
    const guard = this.#flowGuard as SessionFlowGuard;
    const { spec } = entry;
    if (typeof this.#authorizer.effectiveContract === 'function') {
      // The authorizer may judge this call by its own effective contract (an override): the
      // result is recorded by the one the guard checked the call with.
      return (value: unknown): ToolResult => {
        const result = entry.onResult(value);
        guard.record(session, spec, result, contract, this.#effective.get(request));
        return result;
      };
    }
    const last = entry.recorder;
    if (last !== undefined && last.session === session && last.contract === contract) {
      return last.onResult;
    }
    const onResult = (value: unknown): ToolResult => {
      const result = entry.onResult(value);
      guard.record(session, spec, result, contract);
      return result;
    };
    entry.recorder = { session, contract, onResult };
    return onResult;
  }

  /** Takes a lease on the current instance and runs the call on it; the lease ends with the call. */
  async #leased(
    toolName: string,
    args: JsonObject,
    context: ToolContext,
    presented: PresentedGrant | undefined,
    trace?: CallTrace,
  ): Promise<ToolResult> {
    this.#assertOpen();
    const entry = this.#entries.get(toolName);
    if (entry === undefined) throw notFound(toolName);
    entry.leases += 1;
    let reservation: BudgetReservation | undefined;
    // Set once the tool was invoked: from then on the call's request may have left.
    let end: InvokedEnd | undefined;
    try {
      if (entry.starting !== undefined) await entry.starting;
      const request = this.#screen(entry, toolName, args, context, trace);
      const authorizing = this.#authorize(entry, request, presented, trace);
      if (authorizing !== undefined) await authorizing;
      if (this.#budget !== undefined) {
        const reserved = this.#budget.reserve({ toolName, args, context });
        reservation = reserved instanceof Promise ? await reserved : reserved;
      }
      if (isAborted(context.signal)) {
        throw new ToolExecutionError(`Tool ${quote(toolName)} was not run: the call was aborted`, {
          details: { tool: toolName, reason: 'aborted' },
        });
      }
      let result: ToolResult;
      try {
        result = await entry.tool.invoke(args, context);
        end = { result };
      } catch (error) {
        end = { error };
        if (ToolsError.isInstance(error)) throw error;
        throw new ToolExecutionError(`Tool ${quote(toolName)} failed`, {
          details: { tool: toolName, reason: isAborted(context.signal) ? 'aborted' : 'threw' },
          cause: error,
        });
      }
      if (typeof result !== 'object' || result === null || !Array.isArray(result.content)) {
        throw new ToolExecutionError(`Tool ${quote(toolName)} returned an invalid result`, {
          details: { tool: toolName, reason: 'invalid-result' },
        });
      }
      // Labels rise before the result reaches the caller, so the next call sees them.
      this.#flowGuard?.record(
        sessionOf(context),
        entry.spec,
        result,
        request.contract,
        this.#effective.get(request),
      );
      return result;
    } finally {
      // Refunded only when the tool was never invoked or says the call did not leave.
      if (reservation !== undefined) {
        if (end === undefined) reservation.settle(false);
        else settleInvoked(reservation, end, context.signal);
      }
      entry.leases -= 1;
      if (entry.leases === 0 && entry.retired) entry.finishRetirement?.();
    }
  }

  /** Start error, validation and read-only scope: throws, else returns the authorizer's request. */
  #screen(
    entry: Entry,
    toolName: string,
    args: JsonObject,
    context: ToolContext,
    trace?: CallTrace,
  ): AuthorizationRequest {
    if (entry.startError !== undefined) throw entry.startError;
    const { spec } = entry;

    const validation =
      entry.check === undefined
        ? this.#validator.validate(spec.inputSchema, args)
        : entry.check(args);
    if (!validation.valid) {
      const issues = validation.issues.slice(0, 8);
      throw new ToolInputError(
        `Invalid arguments for tool ${quote(toolName)}: ${issues
          .map((issue) => `${issue.path} ${issue.message}`)
          .join('; ')}`,
        { details: { tool: toolName, reason: 'schema', issues } },
      );
    }

    let contract = entry.contract;
    let operation: string | undefined;
    if (entry.plan !== undefined) {
      const call = resolveCallContract(entry.plan, toolName, args);
      contract = call.contract;
      operation = call.operation;
    }
    if (trace !== undefined) {
      trace.contract = contract;
      trace.operation = operation;
    }
    const effect = resolveEffect(spec, args, contract);
    if (context.accessScope === 'read-only' && effect !== 'read') {
      throw new PermissionDeniedError(
        `Tool ${quote(toolName)} was denied: the read-only scope allows only calls that read (this one is ${effect})`,
        { details: { tool: toolName, reason: 'read-only-scope', effect } },
      );
    }
    return { toolName, args, context, spec, contract, operation, effect };
  }

  /** Authorizes a call: returns undefined when a synchronous authorizer allowed it. */
  #authorize(
    entry: Entry,
    request: AuthorizationRequest,
    grant: PresentedGrant | undefined,
    trace?: CallTrace,
  ): Promise<void> | undefined {
    let answer: unknown;
    try {
      answer = this.#authorizer.authorize(request);
    } catch (error) {
      throw authorizerFailed(request.toolName, error);
    }
    if (typeof (answer as { then?: unknown } | null)?.then === 'function') {
      return (answer as Promise<unknown>).then(
        (settled) => this.#applyDecision(entry, request, settled, grant, trace),
        (error: unknown) => {
          throw authorizerFailed(request.toolName, error);
        },
      );
    }
    return this.#applyDecision(entry, request, answer, grant, trace);
  }

  /**
   * The flow guard's raise for a call the authorizer judged (undefined without one); a raise that
   * would lower the verdict is ignored. Throws when the guard throws.
   */
  #flowCheck(request: AuthorizationRequest, decision: PermissionDecision): FlowRaise | undefined {
    const guard = this.#flowGuard as SessionFlowGuard;
    const effective = decision.verdict === 'deny' ? undefined : this.#authorizerContract(request);
    const flow = guard.check(
      sessionOf(request.context),
      request.spec,
      decision.verdict,
      request.contract,
      request.context,
      effective,
    );
    if (flow === undefined) return undefined;
    if (!flow.enforced) {
      this.#logger?.warn('The flow guard observed a call it would raise', {
        tool: request.toolName,
        verdict: flow.verdict,
        reason: flow.reason,
      });
    }
    return flow;
  }

  /**
   * The authorizer's effective contract of the call (`Authorizer.effectiveContract`), kept for the
   * call's record; undefined when it has none. Throws when it throws or answers something that is
   * not an effective contract (the caller denies the call as `flow-guard-error`).
   */
  #authorizerContract(request: AuthorizationRequest): EffectiveContract | undefined {
    const authorizer = this.#authorizer;
    if (typeof authorizer.effectiveContract !== 'function') return undefined;
    const effective: unknown = authorizer.effectiveContract(request);
    if (effective === undefined) return undefined;
    const contract = (effective as { contract?: unknown } | null)?.contract as
      | Partial<ToolContract>
      | null
      | undefined;
    if (
      typeof contract !== 'object' ||
      contract === null ||
      !isRiskLevel(contract.risk) ||
      !isContentTrustLevel(contract.contentTrust)
    ) {
      throw new TypeError('effectiveContract answered something that is not an effective contract');
    }
    this.#effective.set(request, effective as EffectiveContract);
    return effective as EffectiveContract;
  }

  #applyDecision(
    entry: Entry,
    request: AuthorizationRequest,
    answer: unknown,
    grant: PresentedGrant | undefined,
    trace?: CallTrace,
  ): Promise<void> | undefined {
    const name = request.toolName;
    let decision: PermissionDecision = isPermissionDecision(answer)
      ? answer
      : { verdict: 'deny', reason: 'invalid-decision' };
    let flow: FlowRaise | undefined;
    if (this.#flowGuard !== undefined) {
      try {
        flow = this.#flowCheck(request, decision);
      } catch (error) {
        throw new PermissionDeniedError(`Tool ${quote(name)} was denied: the flow guard failed`, {
          details: { tool: name, reason: 'flow-guard-error' },
          cause: error,
        });
      }
      if (flow !== undefined) {
        if (trace !== undefined) trace.flow = flow;
        if (flow.enforced) decision = raised(decision, flow);
      }
    }
    if (decision.verdict === 'allow') return undefined;
    const byFlow = flow?.enforced === true && decision.reason === flow.reason;
    if (decision.verdict === 'deny') {
      if (byFlow) {
        throw new PermissionDeniedError(`Tool ${quote(name)} was denied: ${flow?.reason}`, {
          details: { tool: name, reason: 'flow-guard', flow },
        });
      }
      throw new PermissionDeniedError(`Tool ${quote(name)} was denied by policy`, {
        details: { tool: name, reason: decision.reason ?? 'denied' },
      });
    }
    const withFlow = flow === undefined ? {} : { flow };
    if (grant !== undefined) {
      const refusal = grantRefusal(grant, entry, request);
      if (refusal === undefined) return undefined;
      throw new PermissionDeniedError(`Tool ${quote(name)} was denied: ${refusal}`, {
        details: { tool: name, reason: refusal, ...withFlow },
      });
    }
    const approval = this.#approval;
    if (approval === undefined) {
      throw new ApprovalRequiredError(
        byFlow
          ? `Tool ${quote(name)} needs approval and no approval callback is configured: ${flow?.reason}`
          : `Tool ${quote(name)} needs approval and no approval callback is configured`,
        {
          details: {
            tool: name,
            reason: byFlow ? 'flow-guard' : (decision.reason ?? 'approval-required'),
            ...withFlow,
          },
        },
      );
    }
    return this.#askApproval(approval, request, decision.reason, flow).then((approved) => {
      if (approved !== true) {
        throw new PermissionDeniedError(`Tool ${quote(name)} was denied: ${approved}`, {
          details: { tool: name, reason: approved, ...withFlow },
        });
      }
    });
  }

  /** True, or why not: `approval-declined`, `approval-timeout`, `approval-error`, `aborted`. */
  async #askApproval(
    approval: ApprovalCallback,
    request: AuthorizationRequest,
    reason: string | undefined,
    flow: FlowRaise | undefined,
  ): Promise<true | string> {
    const controller = new AbortController();
    const callSignal = request.context.signal;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let onCallAbort: (() => void) | undefined;
    const stop = new Promise<string>((resolve) => {
      timer = setTimeout(() => {
        controller.abort();
        resolve('approval-timeout');
      }, this.#approvalTimeoutMs);
      if (callSignal !== undefined) {
        onCallAbort = () => {
          controller.abort();
          resolve('aborted');
        };
        if (callSignal.aborted) onCallAbort();
        else callSignal.addEventListener('abort', onCallAbort, { once: true });
      }
    });
    try {
      const answer = Promise.resolve()
        .then(() =>
          approval(
            Object.freeze({
              ...request,
              reason,
              signal: controller.signal,
              ...(flow === undefined ? {} : { flow }),
            }),
          ),
        )
        .then(
          (approved) => (approved === true ? (true as const) : 'approval-declined'),
          () => 'approval-error',
        );
      return await Promise.race([answer, stop]);
    } finally {
      clearTimeout(timer);
      if (onCallAbort !== undefined) callSignal?.removeEventListener('abort', onCallAbort);
    }
  }

  /** Built by assignment in key order, not with a conditional spread (a slow path of V8's). */
  #eventBase(call: ToolCall): ToolEventBase {
    const { args, context } = call;
    const base: Mutable<ToolEventBase> = {
      callId: call.callId,
      toolName: call.toolName,
      runId: context.runId,
      stepId: context.stepId,
      argsDigest: digestJson(args),
    } as Mutable<ToolEventBase>;
    if (this.#eventArguments === 'snapshot') base.args = args;
    base.timestamp = Date.now();
    return base;
  }

  #emit(event: ToolEvent): void {
    try {
      this.#onEvent?.(Object.freeze(event));
    } catch {
      this.#logger?.warn('onEvent threw; the event was dropped', { type: event.type });
    }
  }
}

/** The event base with what the call's judgement found (operation, risk, flow raise), if anything. */
function judged(eventBase: ToolEventBase, trace: CallTrace): ToolEventBase {
  if (trace.operation === undefined && trace.contract === undefined && trace.flow === undefined) {
    return eventBase;
  }
  const event: Mutable<ToolEventBase> = Object.assign({}, eventBase);
  if (trace.operation !== undefined) event.operation = trace.operation;
  if (trace.contract !== undefined) event.risk = trace.contract.risk;
  if (trace.flow !== undefined) event.flow = trace.flow;
  return event;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * `{ ...base, ...fields }`, the same keys in the same order, built by assignment: V8's object
 * spread followed by more properties takes a slow path (about 1 µs an event on Node 20).
 */
function eventOf<const T extends object>(base: ToolEventBase, fields: T): ToolEventBase & T {
  const event: Record<string, unknown> = Object.assign(
    {},
    base as unknown as Record<string, unknown>,
  );
  for (const key in fields) event[key] = fields[key];
  return event as ToolEventBase & T;
}

/** Ends a lease; the last lease of a retired instance closes it. */
function release(entry: Entry): void {
  entry.leases -= 1;
  if (entry.leases === 0 && entry.retired) entry.finishRetirement?.();
}

/**
 * Runs an authorized call on its leased instance (no budget) and ends the lease when it settles,
 * with #leased's checks: not run once aborted, a foreign throw wrapped, the result's shape checked.
 */
function runLeased(
  entry: Entry,
  toolName: string,
  args: JsonObject,
  context: ToolContext,
  onResult: (result: unknown) => ToolResult = entry.onResult,
): Promise<ToolResult> {
  let pending: unknown;
  try {
    if (isAborted(context.signal)) {
      throw new ToolExecutionError(`Tool ${quote(toolName)} was not run: the call was aborted`, {
        details: { tool: toolName, reason: 'aborted' },
      });
    }
    pending = entry.tool.invoke(args, context);
  } catch (error) {
    release(entry);
    return Promise.reject(toolFailure(error, toolName, context.signal));
  }
  const signal = context.signal;
  // The entry's handlers end the lease (toolName is entry.name: the entry was found by it); only
  // a call with a signal needs its own, to tell an aborted call's failure from a throw.
  return Promise.resolve(pending).then(
    onResult,
    signal === undefined
      ? entry.onFailure
      : (error: unknown) => {
          release(entry);
          throw toolFailure(error, toolName, signal);
        },
  );
}

/** A tool's throw as the caller sees it: a ToolsError as it is, anything else wrapped. */
function toolFailure(error: unknown, toolName: string, signal: AbortSignal | undefined): unknown {
  if (ToolsError.isInstance(error)) return error;
  return new ToolExecutionError(`Tool ${quote(toolName)} failed`, {
    details: { tool: toolName, reason: isAborted(signal) ? 'aborted' : 'threw' },
    cause: error,
  });
}

/** The tool's result, when it has the shape of one. */
function checkedResult(result: unknown, toolName: string): ToolResult {
  if (
    typeof result !== 'object' ||
    result === null ||
    !Array.isArray((result as ToolResult).content)
  ) {
    throw new ToolExecutionError(`Tool ${quote(toolName)} returned an invalid result`, {
      details: { tool: toolName, reason: 'invalid-result' },
    });
  }
  return result as ToolResult;
}

/** Why a presented grant does not answer this `ask`, or undefined when it does. */
function grantRefusal(
  grant: PresentedGrant,
  entry: Entry,
  request: AuthorizationRequest,
): string | undefined {
  if (!grant.fresh) return 'approval-grant-used';
  const { record } = grant;
  if (
    record.toolName !== request.toolName ||
    // The registration it was granted for: a replacement is another entry, even with the same
    // tool or spec object (a wrapper forwarding the spec, `{ ...tool, invoke }`).
    record.entry !== entry ||
    record.runId !== request.context.runId ||
    record.session !== sessionOf(request.context) ||
    record.argsDigest !== digestJson(request.args)
  ) {
    return 'approval-grant-mismatch';
  }
  return undefined;
}

/** The flow guard's session of a call: the context's `session`, else its run id. */
function sessionOf(context: ToolContext): string {
  return context.session ?? context.runId;
}

const VERDICT_RANK = { allow: 0, ask: 1, deny: 2 } as const;

/** The decision after an enforced raise: the raise's verdict and reason, never a lower verdict. */
function raised(decision: PermissionDecision, flow: FlowRaise): PermissionDecision {
  if (VERDICT_RANK[flow.verdict] < VERDICT_RANK[decision.verdict]) return decision;
  return { verdict: flow.verdict, reason: flow.reason };
}

function newEntry(
  spec: ToolSpec,
  tool: Tool,
  check: ((value: JsonValue) => ValidationResult) | undefined,
): Entry {
  const plan = spec.operationContracts === undefined ? undefined : planOperationContracts(spec);
  const name = spec.name;
  const entry: Entry = {
    name,
    tool,
    spec,
    contract: spec.contract ?? plan?.worst ?? contractOf(spec),
    plan,
    check,
    onResult: (result) => {
      release(entry);
      return checkedResult(result, name);
    },
    onFailure: (error) => {
      release(entry);
      throw toolFailure(error, name, undefined);
    },
    leases: 0,
    starting: undefined,
    startError: undefined,
    retired: false,
    retirement: undefined,
    finishRetirement: undefined,
    recorder: undefined,
  };
  return entry;
}

function compose(
  middleware: readonly ToolMiddleware[],
  core: (call: ToolCall) => Promise<ToolResult>,
): (call: ToolCall) => Promise<ToolResult> {
  let next = core;
  for (let index = middleware.length - 1; index >= 0; index -= 1) {
    const layer = middleware[index] as ToolMiddleware;
    const inner = next;
    next = async (call) => {
      let called = false;
      return layer(call, () => {
        if (called) {
          return Promise.reject(
            new ConfigurationError('A middleware called next() twice', {
              details: { option: 'middleware' },
            }),
          );
        }
        called = true;
        return inner(call);
      });
    };
  }
  return next;
}

/** `sha256:<hex>` of the canonical JSON (object keys sorted) of a value. */
export function digestJson(value: JsonValue): string {
  return `sha256:${hash('sha256', canonicalJson(value), 'hex')}`;
}

/**
 * JSON with every object's keys sorted (by UTF-16 code units), built in one pass: no key list
 * mapped, no array of parts joined, no closure per level (the events path digests every call).
 */
function canonicalJson(value: JsonValue): string {
  if (typeof value === 'string') return jsonString(value);
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) {
    let text = '[';
    for (let index = 0; index < value.length; index += 1) {
      if (index > 0) text += ',';
      text += canonicalJson(value[index] as JsonValue);
    }
    return `${text}]`;
  }
  const object = value as JsonObject;
  const keys = Object.keys(object).sort();
  let text = '{';
  for (let index = 0; index < keys.length; index += 1) {
    const key = keys[index] as string;
    if (index > 0) text += ',';
    text += `${jsonString(key)}:${canonicalJson(object[key] as JsonValue)}`;
  }
  return `${text}}`;
}

/** Characters JSON.stringify escapes in a string (controls, quote, backslash, surrogates). */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what JSON escapes
const needsEscape = /["\\\u0000-\u001f\ud800-\udfff]/;

/** `JSON.stringify(text)`, without its generic path for a string that needs no escape. */
function jsonString(text: string): string {
  return needsEscape.test(text) ? JSON.stringify(text) : `"${text}"`;
}

function notFound(name: unknown): ToolNotFoundError {
  if (typeof name !== 'string') {
    return new ToolNotFoundError('A tool name must be a string', {
      details: { reason: 'name-not-string' },
    });
  }
  return new ToolNotFoundError(`No tool named ${quote(name)} is registered`, {
    details: { tool: name.slice(0, 256) },
  });
}

function authorizerFailed(name: string, cause: unknown): PermissionDeniedError {
  return new PermissionDeniedError(`Tool ${quote(name)} was denied: the authorizer failed`, {
    details: { tool: name, reason: 'authorizer-error' },
    cause,
  });
}

function startFailed(name: string, cause: unknown): ToolStartError {
  return new ToolStartError(`Tool ${quote(name)} failed to start`, {
    details: { tool: name },
    cause,
  });
}

function checkOptionalFunction(value: unknown, option: string): void {
  if (value !== undefined && typeof value !== 'function') {
    throw new ConfigurationError(`${option} must be a function`, { details: { option } });
  }
}

/** `spec.origin`: an object with a non-empty string `tool` and an optional string `server`. */
function checkOrigin(origin: unknown, name: string): void {
  const record = origin as { server?: unknown; tool?: unknown } | null;
  if (
    typeof record !== 'object' ||
    record === null ||
    typeof record.tool !== 'string' ||
    record.tool === '' ||
    (record.server !== undefined && typeof record.server !== 'string')
  ) {
    throw new ConfigurationError(
      `Tool ${quote(name)}: spec.origin must be { tool: string, server?: string }`,
      { details: { tool: name, option: 'spec.origin' } },
    );
  }
}

/** A tool name for a message: JSON-quoted, cut at 128 characters. */
function quote(name: string): string {
  return JSON.stringify(name.length > 128 ? `${name.slice(0, 128)}…` : name);
}

function compareNames(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}

function noop(): void {}

function isAborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}
