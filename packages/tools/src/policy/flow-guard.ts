// The flow guard: session labels from results (exposed to untrusted content, holding private
// data) and the raise of a call to a sink. A policy concept: the registry consults it after its
// authorizer, and a gateway keeps one per downstream session the same way.
//
// Where this differs from the first sketch of the API, and why:
// - `check` and `record` take an optional fourth argument, the contract the call is judged by: a
//   tool with per-operation contracts (the filesystem tool) reads with one contract and writes
//   with another, and the registry knows which. Without it the spec's static contract is read
//   (`contractOf`), as a gateway does for a bridged tool.
// - A selector is a string or an object: a string reads as a policy rule's `tool` does (with `__`
//   the registry name `server__tool`, without it the tool's own name on any server); a server is
//   named as `{ server: 'github' }` (optionally with `tool`). A bare string cannot name a server,
//   because `memory` could be a server or a tool, and reading it as both would widen `notSinks`
//   and `permit`.
// - `trusted` is accepted besides `untrusted` and `sensitive`: an operator may vouch that an
//   undeclared tool (judged `untrusted` by the heuristic) exposes nothing.
// - `FlowRaise.enforced` says whether the raise changes the verdict (false in observe mode).
// - Operator overrides reach the guard two ways: the registry hands it the authorizer's effective
//   contract of the call (`Authorizer.effectiveContract`: RiskPolicy's `overrides`), and the
//   guard's own `overrides` option (same shape) serves setups whose authorizer has none.
import {
  type ContractOverride,
  defineOverride,
  type EffectiveContract,
  effectiveContract,
  type RiskLevel,
  type ToolContract,
} from '@toolfence/tool-contract';
import type { PermissionVerdict } from '../registry/authorization.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import { contractOf } from '../registry/contract-of.js';
import type {
  FlowBasis,
  FlowRaise,
  FlowSessionLabels,
  FlowSink,
  FlowSource,
  FlowTrust,
  SessionFlowGuard,
} from '../registry/flow-raise.js';
import { checkOptionKeys } from '../registry/option-keys.js';
import type { ToolContext, ToolResult, ToolSpec } from '../registry/tool.js';
import { effectiveCallContract, HeuristicMemory } from './effective-call-contract.js';
import {
  compileToolSelector,
  originOf,
  type ToolIdentity,
  type ToolSelector,
} from './tool-selector.js';

/** Names tools: a string as a policy rule's `tool` reads, or `{ server, tool? }`. */
export type FlowToolSelector = string | ToolSelector;

/** A flow the user permits: data from a source to a sink. */
export interface FlowPermit {
  /** The source (untrusted or private) the data comes from. */
  readonly from: FlowToolSelector;
  /** The sink it may reach. */
  readonly to: FlowToolSelector;
}

/** Options of {@link FlowGuard}. */
export interface FlowGuardOptions {
  /** `enforce` (default) raises verdicts; `observe` reports the raise and keeps the verdict. */
  readonly mode?: 'enforce' | 'observe';
  /** Tools that are sinks whatever their risk. Default none. */
  readonly sinks?: readonly FlowToolSelector[];
  /** Tools that are not sinks though their risk says so (`sinks` wins). Default none. */
  readonly notSinks?: readonly FlowToolSelector[];
  /** Tools whose results expose the session whatever they declare. Default none. */
  readonly untrusted?: readonly FlowToolSelector[];
  /** Tools whose results are private data whatever they declare. Default none. */
  readonly sensitive?: readonly FlowToolSelector[];
  /**
   * Tools the operator vouches for: their results neither expose nor carry private data
   * (`untrusted` and `sensitive` win). Default none.
   */
  readonly trusted?: readonly FlowToolSelector[];
  /** Flows the user explicitly permits, from a source to a sink. Default none. */
  readonly permit?: readonly FlowPermit[];
  /**
   * Operator overrides by tool name (the registry name, as `RiskPolicy`'s `overrides`; the same
   * tool-contract `ContractOverride` shape, so one object can serve both): their `risk` and
   * `contentTrust` win over what the call declares and over the authorizer's effective contract;
   * `veto: true` denies every call of the tool. The selectors above still win. Default none.
   */
  readonly overrides?: Readonly<Record<string, ContractOverride>>;
  /**
   * Labelled sessions kept (a session without labels takes no room). Beyond it the least recently
   * used is dropped; its id is remembered among the last `maxSessions` dropped ones, and such a
   * session is judged as exposed and holding private data until `endSession`. Default 10,000.
   */
  readonly maxSessions?: number;
  /**
   * Sources named per label and session. A further source is not named but still counts: the
   * label gets one unnamed entry (tool `*`, basis `unnamed`) that no `permit` covers, so a sink in
   * that session is raised as if an unpermitted source were named. Default 16.
   */
  readonly maxSourcesPerSession?: number;
}

/** The default limits of {@link FlowGuard}. */
export const DEFAULT_FLOW_GUARD_LIMITS: {
  /** Labelled sessions kept (see {@link FlowGuardOptions.maxSessions}). */
  readonly maxSessions: number;
  /** Sources named per label and session (see {@link FlowGuardOptions.maxSourcesPerSession}). */
  readonly maxSourcesPerSession: number;
} = Object.freeze({ maxSessions: 10_000, maxSourcesPerSession: 16 });

const OPTION_KEYS: readonly string[] = [
  'mode',
  'sinks',
  'notSinks',
  'untrusted',
  'sensitive',
  'trusted',
  'permit',
  'overrides',
  'maxSessions',
  'maxSourcesPerSession',
];

const SELECTOR_KEYS: readonly string[] = ['tool', 'server'];

const SINK_RISKS: ReadonlySet<RiskLevel> = new Set([
  'external-publication',
  'paid-operation',
  'destructive',
]);

const SINK_WORDS: Readonly<Record<string, string>> = {
  'external-publication': 'can publish or send data outside',
  'paid-operation': 'can spend money',
  destructive: 'can destroy data',
};

/** How many tool names a reason lists before `and N more`. */
const NAMES_IN_REASON = 3;

type Matcher = (identity: ToolIdentity) => boolean;

interface LabelEntry {
  readonly source: FlowSource;
  readonly identity: ToolIdentity;
}

interface SessionRecord {
  readonly exposed: LabelEntry[];
  readonly private: LabelEntry[];
  labels: FlowSessionLabels | undefined;
}

/** What the options and the heuristic say of a spec (cached per spec object). */
interface SpecFacts {
  readonly identity: ToolIdentity;
  readonly server: string | undefined;
  readonly untrusted: boolean;
  readonly sensitive: boolean;
  readonly trusted: boolean;
  readonly sink: boolean;
  readonly notSink: boolean;
  /** The guard's own override of the tool (`overrides[spec.name]`), if any. */
  readonly override: ContractOverride | undefined;
  /** `openWorldHint: true` in the spec's annotations. */
  readonly openWorld: boolean;
  /**
   * The judgement of calls by each contract seen: the authorizer's effective contract when the
   * registry passes one, else the call's contract (the static one under `undefined`).
   */
  readonly judged: Map<ToolContract | EffectiveContract | undefined, Judgement>;
  /** The key judged last and its judgement (most calls repeat it: no map lookup). */
  lastContract: ToolContract | EffectiveContract | undefined;
  lastJudgement: Judgement | undefined;
}

/** What calls to a tool with one contract are: sources and a sink, or none of them. */
interface Judgement {
  readonly exposes: FlowSource | undefined;
  readonly holds: FlowSource | undefined;
  readonly sink: FlowSink | undefined;
  /** An operator override vetoes the tool: every call is denied. */
  readonly vetoed: boolean;
}

/**
 * Where a fact of the contract a call is judged by comes from: an operator override
 * (`configured`), the call's declaration, or nothing declared (the heuristic and hints).
 */
type FactBasis = 'configured' | 'declared' | 'undeclared';

/** The contract a call is judged by, and where its risk and its content trust come from. */
interface Reading {
  readonly contract: ToolContract;
  readonly risk: FactBasis;
  readonly trust: FactBasis;
  readonly vetoed: boolean;
}

/** How many contracts per tool the guard remembers judgements for (per-operation contracts). */
const JUDGED_CONTRACTS = 16;

/** A label entry that stands for sources not named (`*`), of one trust and one basis. */
function starEntry(
  trust: 'prompt-injection-prone' | 'sensitive',
  basis: 'dropped' | 'unnamed',
): LabelEntry {
  return Object.freeze({
    source: Object.freeze({ tool: '*', trust, basis }),
    identity: Object.freeze({ name: '*' }),
  }) as LabelEntry;
}

const DROPPED_EXPOSED = starEntry('prompt-injection-prone', 'dropped');
const DROPPED_PRIVATE = starEntry('sensitive', 'dropped');
// A source beyond `maxSourcesPerSession`: counted, not named, and covered by no permit (which
// sources it stands for is not kept, so no permit can be known to cover them).
const UNNAMED_EXPOSED = starEntry('prompt-injection-prone', 'unnamed');
const UNNAMED_PRIVATE = starEntry('sensitive', 'unnamed');

const NO_LABELS: FlowSessionLabels = Object.freeze({
  exposedBy: Object.freeze([]),
  privateFrom: Object.freeze([]),
});

/**
 * Breaks the lethal trifecta at run time. It keeps labels per session from the results it is
 * shown ({@link record}): a result from a tool whose effective content trust is `untrusted` or
 * `prompt-injection-prone` marks the session exposed, one from a `sensitive` tool marks it as
 * holding private data. Before a call ({@link check}) it may raise the policy's verdict, never
 * lower it: a call to a sink (effective risk `external-publication`, `paid-operation` or
 * `destructive`, or a configured sink) in an exposed session is at least `ask`; in a session that
 * is exposed and holds private data it is `deny`, unless `permit` covers every private source
 * (and then `ask`, unless `permit` also covers every exposing source). Operator overrides change
 * what a tool is for the guard as they do for the policy: the authorizer's effective contract,
 * which the registry passes, and the guard's own `overrides` option. Content stays data: the
 * guard reads which tool returned a result, never what the result says.
 */
export class FlowGuard implements SessionFlowGuard {
  /** `enforce` or `observe`. */
  readonly mode: 'enforce' | 'observe';
  readonly #maxSessions: number;
  readonly #maxSources: number;
  readonly #sinks: readonly Matcher[];
  readonly #notSinks: readonly Matcher[];
  readonly #untrusted: readonly Matcher[];
  readonly #sensitive: readonly Matcher[];
  readonly #trusted: readonly Matcher[];
  readonly #permits: readonly { readonly from: Matcher; readonly to: Matcher }[];
  readonly #overrides: ReadonlyMap<string, ContractOverride>;
  /** Some override of the guard's vetoes a tool (check judges every call, labelled or not). */
  readonly #vetoes: boolean;
  readonly #sessions = new Map<string, SessionRecord>();
  /** Ids of the last `maxSessions` dropped sessions, oldest first. */
  readonly #dropped = new Set<string>();
  readonly #facts = new WeakMap<ToolSpec, SpecFacts>();
  readonly #heuristics = new HeuristicMemory();
  /** The session made most recently used last (its reorder and its lookup are skipped). */
  #recent: string | undefined;
  /** The record of {@link #recent} (undefined when it has none). */
  #recentRecord: SessionRecord | undefined;
  /** The spec whose facts were read last, and those facts (no WeakMap lookup for a repeat). */
  #lastSpec: ToolSpec | undefined;
  #lastFacts: SpecFacts | undefined;

  /** Checks the options; throws {@link ConfigurationError} for an unknown key or a bad value. */
  constructor(options: FlowGuardOptions = {}) {
    checkOptionKeys(options, OPTION_KEYS, 'FlowGuard');
    const mode: unknown = options.mode ?? 'enforce';
    if (mode !== 'enforce' && mode !== 'observe') {
      throw new ConfigurationError("FlowGuard mode must be 'enforce' or 'observe'", {
        details: { option: 'mode' },
      });
    }
    this.mode = mode;
    this.#maxSessions = positiveInteger(
      options.maxSessions,
      DEFAULT_FLOW_GUARD_LIMITS.maxSessions,
      'maxSessions',
    );
    this.#maxSources = positiveInteger(
      options.maxSourcesPerSession,
      DEFAULT_FLOW_GUARD_LIMITS.maxSourcesPerSession,
      'maxSourcesPerSession',
    );
    this.#sinks = selectors(options.sinks, 'sinks');
    this.#notSinks = selectors(options.notSinks, 'notSinks');
    this.#untrusted = selectors(options.untrusted, 'untrusted');
    this.#sensitive = selectors(options.sensitive, 'sensitive');
    this.#trusted = selectors(options.trusted, 'trusted');
    const permit: unknown = options.permit ?? [];
    if (!Array.isArray(permit)) {
      throw new ConfigurationError('FlowGuard permit must be an array of { from, to }', {
        details: { option: 'permit' },
      });
    }
    this.#permits = permit.map((entry: unknown, index) => {
      const at = `permit[${index}]`;
      checkOptionKeys(
        entry,
        ['from', 'to'],
        `FlowGuard ${at}`,
        (message, key) => new ConfigurationError(message, { details: { option: `${at}.${key}` } }),
      );
      const { from, to } = entry as FlowPermit;
      return { from: selector(from, `${at}.from`), to: selector(to, `${at}.to`) };
    });
    this.#overrides = overridesOf(options.overrides);
    this.#vetoes = [...this.#overrides.values()].some((override) => override.veto === true);
  }

  /**
   * The raise for a call to `spec` in `session`, after the policy said `verdict`; undefined when
   * the flow rules ask nothing (the session is not exposed, the tool is not a sink, the policy
   * already denies, or `permit` covers every source). A raise never lowers `verdict`: it is `ask`
   * or `deny` and at least `verdict`. `contract` is the contract the call is judged by (default
   * the spec's static one, `contractOf(spec)`); `effective` is the authorizer's effective contract
   * of the call (an operator override applied), which wins over `contract` (the registry passes
   * it; `context` is not read). A tool an override vetoes is denied in any session.
   */
  check(
    session: string,
    spec: ToolSpec,
    verdict: PermissionVerdict,
    contract?: ToolContract,
    _context?: ToolContext,
    effective?: EffectiveContract,
  ): FlowRaise | undefined {
    if (verdict === 'deny') return undefined;
    if (this.#vetoes || effective?.vetoed === true) {
      const facts = this.#factsOf(spec);
      const judgement = this.#judge(spec, facts, contract, effective);
      if (judgement.vetoed)
        return this.#vetoRaise(session, spec, facts, judgement, contract, effective);
    }
    let record = this.#recordOf(session);
    if (record === undefined) {
      if (!this.#dropped.has(session)) return undefined;
      record = this.#open(session);
    }
    if (record.exposed.length === 0) return undefined;
    const facts = this.#factsOf(spec);
    const sink = this.#judge(spec, facts, contract, effective).sink;
    if (sink === undefined) return undefined;
    this.#touch(session, record);
    // A sink by the options is "marked"; one by its risk (an override's too) says what it can do.
    const does = facts.sink
      ? 'is marked as a sink'
      : (SINK_WORDS[sink.risk] ?? 'is marked as a sink');
    const sinkIdentity = facts.identity;
    const exposedUncovered = record.exposed.filter(
      (entry) => !this.#permitted(entry, sinkIdentity),
    );
    const privateUncovered = record.private.filter(
      (entry) => !this.#permitted(entry, sinkIdentity),
    );
    let raised: 'ask' | 'deny';
    if (privateUncovered.length > 0) raised = 'deny';
    else if (exposedUncovered.length > 0) raised = 'ask';
    else return undefined;
    const exposing = exposedUncovered.length > 0 ? exposedUncovered : record.exposed;
    return Object.freeze({
      verdict: raised,
      reason: raiseReason(raised, exposing, privateUncovered, sink, does),
      sink,
      labels: this.#labelsOf(record),
      enforced: this.mode === 'enforce',
    });
  }

  /**
   * Records a call's result (an error result too: the tool still returned content). A result from
   * an untrusted or prompt-injection-prone tool marks the session exposed, one from a sensitive
   * tool marks it private; labels only rise. `contract` and `effective` as for {@link check}.
   */
  record(
    session: string,
    spec: ToolSpec,
    result: ToolResult,
    contract?: ToolContract,
    effective?: EffectiveContract,
  ): void {
    if (typeof result !== 'object' || result === null) return;
    const facts = this.#factsOf(spec);
    const { exposes, holds } = this.#judge(spec, facts, contract, effective);
    if (exposes === undefined && holds === undefined) {
      // A clean result still marks a labelled session as in use.
      const known = this.#recordOf(session);
      if (known !== undefined) this.#touch(session, known);
      return;
    }
    const record = this.#open(session);
    if (exposes !== undefined) {
      this.#add(record, record.exposed, exposes, facts.identity, UNNAMED_EXPOSED);
    }
    if (holds !== undefined) {
      this.#add(record, record.private, holds, facts.identity, UNNAMED_PRIVATE);
    }
  }

  /** The session's labels (frozen; empty for a session the guard has not labelled). */
  labels(session: string): FlowSessionLabels {
    const record = this.#recordOf(session);
    if (record !== undefined) return this.#labelsOf(record);
    if (this.#dropped.has(session)) {
      return Object.freeze({
        exposedBy: Object.freeze([DROPPED_EXPOSED.source]),
        privateFrom: Object.freeze([DROPPED_PRIVATE.source]),
      });
    }
    return NO_LABELS;
  }

  /**
   * Judges `session` as one whose labels were dropped (as a session dropped at `maxSessions`):
   * exposed and holding private data, sources no `permit` covers, until {@link endSession}. For
   * a session that went on somewhere its labels were not kept (a resumed connection whose labels
   * this guard never saw). Labels it holds stay, the dropped entries are added to them; an
   * unlabelled one is remembered among the last `maxSessions` dropped ids, as an evicted one is.
   */
  dropSession(session: string): void {
    const record = this.#recordOf(session);
    if (record !== undefined) {
      if (!record.exposed.includes(DROPPED_EXPOSED)) record.exposed.push(DROPPED_EXPOSED);
      if (!record.private.includes(DROPPED_PRIVATE)) record.private.push(DROPPED_PRIVATE);
      record.labels = undefined;
      return;
    }
    this.#dropped.delete(session);
    this.#dropped.add(session);
    if (this.#dropped.size > this.#maxSessions) {
      const forgotten = this.#dropped.keys().next().value;
      if (forgotten !== undefined) this.#dropped.delete(forgotten);
    }
  }

  /** Forgets a session's labels (the conversation or connection ended). */
  endSession(session: string): void {
    this.#sessions.delete(session);
    this.#dropped.delete(session);
    if (this.#recent === session) {
      this.#recent = undefined;
      this.#recentRecord = undefined;
    }
  }

  /** The kept record of `session` (the most recent one without a map lookup). */
  #recordOf(session: string): SessionRecord | undefined {
    if (session === this.#recent && this.#recentRecord !== undefined) return this.#recentRecord;
    return this.#sessions.get(session);
  }

  /** Makes a kept session the most recently used. */
  #touch(session: string, record: SessionRecord): void {
    if (this.#recent === session && this.#recentRecord === record) return;
    this.#sessions.delete(session);
    this.#sessions.set(session, record);
    this.#recent = session;
    this.#recentRecord = record;
  }

  /**
   * The judgement of calls to `spec` by `contract`, or by the authorizer's `effective` contract
   * when given (cached per spec and contract).
   */
  #judge(
    spec: ToolSpec,
    facts: SpecFacts,
    contract: ToolContract | undefined,
    effective: EffectiveContract | undefined,
  ): Judgement {
    // The effective contract is computed from the call's contract, so it alone keys the judgement.
    const key = effective ?? contract;
    if (facts.lastJudgement !== undefined && facts.lastContract === key) {
      return facts.lastJudgement;
    }
    let judgement = facts.judged.get(key);
    if (judgement !== undefined) {
      facts.lastContract = key;
      facts.lastJudgement = judgement;
      return judgement;
    }
    const reading = this.#read(spec, facts, contract, effective);
    judgement = Object.freeze({
      exposes: this.#exposure(spec, facts, reading),
      holds: this.#privacy(spec, facts, reading),
      sink: this.#sinkOf(spec, facts, reading),
      vetoed: reading.vetoed,
    });
    if (facts.judged.size >= JUDGED_CONTRACTS) facts.judged.clear();
    facts.judged.set(key, judgement);
    facts.lastContract = key;
    facts.lastJudgement = judgement;
    return judgement;
  }

  /** The deny of a call to a tool an operator override vetoes (any session). */
  #vetoRaise(
    session: string,
    spec: ToolSpec,
    facts: SpecFacts,
    judgement: Judgement,
    contract: ToolContract | undefined,
    effective: EffectiveContract | undefined,
  ): FlowRaise {
    const risk = this.#read(spec, facts, contract, effective).contract.risk;
    const sink: FlowSink = Object.freeze(
      judgement.sink ??
        (facts.server === undefined
          ? { tool: spec.name, risk, basis: 'configured' as const }
          : { tool: spec.name, server: facts.server, risk, basis: 'configured' as const }),
    );
    return Object.freeze({
      verdict: 'deny',
      reason: `${JSON.stringify(spec.name)} is vetoed by an operator override, so the call is denied.`,
      sink,
      labels: this.labels(session),
      enforced: this.mode === 'enforce',
    });
  }

  /** The session's record, made the most recently used; a new one may drop the oldest. */
  #open(session: string): SessionRecord {
    let record = this.#recordOf(session);
    if (record !== undefined) {
      this.#touch(session, record);
      return record;
    }
    record = { exposed: [], private: [], labels: undefined };
    if (this.#dropped.delete(session)) {
      // Its labels were dropped: nobody knows what it saw, so it counts as both.
      record.exposed.push(DROPPED_EXPOSED);
      record.private.push(DROPPED_PRIVATE);
    }
    if (this.#sessions.size >= this.#maxSessions) {
      const oldest = this.#sessions.keys().next().value;
      if (oldest !== undefined) {
        this.#sessions.delete(oldest);
        if (oldest === this.#recent) {
          this.#recent = undefined;
          this.#recentRecord = undefined;
        }
        this.#dropped.add(oldest);
        if (this.#dropped.size > this.#maxSessions) {
          const forgotten = this.#dropped.keys().next().value;
          if (forgotten !== undefined) this.#dropped.delete(forgotten);
        }
      }
    }
    this.#sessions.set(session, record);
    this.#recent = session;
    this.#recentRecord = record;
    return record;
  }

  /**
   * Names `source` in `list`, once; beyond the limit the label gets `unnamed` once instead (the
   * source still counts, and no permit covers it).
   */
  #add(
    record: SessionRecord,
    list: LabelEntry[],
    source: FlowSource,
    identity: ToolIdentity,
    unnamed: LabelEntry,
  ): void {
    for (const entry of list) {
      if (entry.source === source) return;
      if (
        entry.source.tool === source.tool &&
        entry.source.server === source.server &&
        entry.source.trust === source.trust
      ) {
        return;
      }
    }
    if (list.length >= this.#maxSources) {
      if (list.includes(unnamed)) return;
      list.push(unnamed);
    } else {
      list.push({ source, identity });
    }
    record.labels = undefined;
  }

  #labelsOf(record: SessionRecord): FlowSessionLabels {
    record.labels ??= Object.freeze({
      exposedBy: Object.freeze(record.exposed.map((entry) => entry.source)),
      privateFrom: Object.freeze(record.private.map((entry) => entry.source)),
    });
    return record.labels;
  }

  #permitted(entry: LabelEntry, sink: ToolIdentity): boolean {
    if (entry === UNNAMED_EXPOSED || entry === UNNAMED_PRIVATE) return false;
    for (const permit of this.#permits) {
      if (permit.from(entry.identity) && permit.to(sink)) return true;
    }
    return false;
  }

  #factsOf(spec: ToolSpec): SpecFacts {
    if (spec === this.#lastSpec && this.#lastFacts !== undefined) return this.#lastFacts;
    let facts = this.#facts.get(spec);
    if (facts === undefined) facts = this.#newFacts(spec);
    this.#lastSpec = spec;
    this.#lastFacts = facts;
    return facts;
  }

  #newFacts(spec: ToolSpec): SpecFacts {
    const origin = originOf(spec.origin);
    const identity: ToolIdentity =
      origin === undefined ? { name: spec.name } : { name: spec.name, origin };
    const any = (matchers: readonly Matcher[]): boolean =>
      matchers.some((matches) => matches(identity));
    const annotations = spec.annotations as { readonly openWorldHint?: unknown } | undefined;
    const facts: SpecFacts = {
      identity,
      server: origin?.server,
      untrusted: any(this.#untrusted),
      sensitive: any(this.#sensitive),
      trusted: any(this.#trusted),
      sink: any(this.#sinks),
      notSink: any(this.#notSinks),
      override: this.#overrides.get(spec.name),
      openWorld:
        typeof annotations === 'object' &&
        annotations !== null &&
        Object.hasOwn(annotations, 'openWorldHint') &&
        annotations.openWorldHint === true,
      judged: new Map(),
      lastContract: undefined,
      lastJudgement: undefined,
    };
    this.#facts.set(spec, facts);
    return facts;
  }

  /**
   * The contract a call is judged by, as RiskPolicy reads it: the call's declared contract, else
   * tool-contract's heuristic raised by the standard hints; the authorizer's effective contract
   * (its override) over that, and the guard's own override last. A fact an override changed is
   * `configured`.
   */
  #read(
    spec: ToolSpec,
    facts: SpecFacts,
    contract: ToolContract | undefined,
    effective: EffectiveContract | undefined,
  ): Reading {
    const declared = contract ?? contractOf(spec);
    const base =
      declared ?? effectiveCallContract(spec, undefined, undefined, this.#heuristics).contract;
    const basis: FactBasis = declared === undefined ? 'undeclared' : 'declared';
    let current = base;
    let risk: FactBasis = basis;
    let trust: FactBasis = basis;
    let vetoed = false;
    if (effective !== undefined) {
      current = effective.contract;
      if (current.risk !== base.risk) risk = 'configured';
      if (current.contentTrust !== base.contentTrust) trust = 'configured';
      vetoed = effective.vetoed === true;
    }
    const override = facts.override;
    if (override !== undefined) {
      current = effectiveContract({ declared: current, override }).contract;
      if (override.risk !== undefined) risk = 'configured';
      if (override.contentTrust !== undefined) trust = 'configured';
      if (override.veto === true) vetoed = true;
    }
    return { contract: current, risk, trust, vetoed };
  }

  #exposure(spec: ToolSpec, facts: SpecFacts, reading: Reading): FlowSource | undefined {
    if (facts.untrusted) return this.#source(spec, facts, 'untrusted', 'configured');
    if (facts.trusted) return undefined;
    const trust = reading.contract.contentTrust;
    if (trust === 'untrusted' || trust === 'prompt-injection-prone') {
      const basis: FlowBasis =
        reading.trust === 'configured'
          ? 'configured'
          : reading.trust === 'declared'
            ? 'declared'
            : facts.openWorld
              ? 'hint'
              : 'heuristic';
      return this.#source(spec, facts, trust, basis);
    }
    // An undeclared tool that reaches an open world exposes, whatever its name suggests.
    if (reading.trust === 'undeclared' && facts.openWorld) {
      return this.#source(spec, facts, 'untrusted', 'hint');
    }
    return undefined;
  }

  #privacy(spec: ToolSpec, facts: SpecFacts, reading: Reading): FlowSource | undefined {
    if (facts.sensitive) return this.#source(spec, facts, 'sensitive', 'configured');
    if (facts.trusted) return undefined;
    if (reading.contract.contentTrust !== 'sensitive') return undefined;
    const basis: FlowBasis =
      reading.trust === 'configured'
        ? 'configured'
        : reading.trust === 'declared'
          ? 'declared'
          : 'heuristic';
    return this.#source(spec, facts, 'sensitive', basis);
  }

  #source(spec: ToolSpec, facts: SpecFacts, trust: FlowTrust, basis: FlowBasis): FlowSource {
    return Object.freeze(
      facts.server === undefined
        ? { tool: spec.name, trust, basis }
        : { tool: spec.name, server: facts.server, trust, basis },
    );
  }

  #sinkOf(spec: ToolSpec, facts: SpecFacts, reading: Reading): FlowSink | undefined {
    const risk = reading.contract.risk;
    let basis: FlowSink['basis'];
    if (facts.sink) basis = 'configured';
    else if (facts.notSink || !SINK_RISKS.has(risk)) return undefined;
    else if (reading.risk === 'configured') basis = 'configured';
    else if (reading.risk === 'declared') basis = 'declared';
    else {
      const guessed = this.#heuristics.judge(spec.name, spec.description).risk;
      basis = guessed === risk ? 'heuristic' : 'hint';
    }
    return Object.freeze(
      facts.server === undefined
        ? { tool: spec.name, risk, basis }
        : { tool: spec.name, server: facts.server, risk, basis },
    );
  }
}

/** The guard's `overrides` option, each entry checked by tool-contract's `defineOverride`. */
function overridesOf(value: unknown): ReadonlyMap<string, ContractOverride> {
  const overrides = new Map<string, ContractOverride>();
  if (value === undefined) return overrides;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new ConfigurationError('FlowGuard overrides must be an object keyed by tool name', {
      details: { option: 'overrides' },
    });
  }
  for (const [tool, override] of Object.entries(value)) {
    try {
      overrides.set(tool, defineOverride(override as ContractOverride));
    } catch (error) {
      throw new ConfigurationError(
        `FlowGuard overrides[${JSON.stringify(tool)}] is not a valid override`,
        { details: { option: `overrides.${tool}`, tool }, cause: error },
      );
    }
  }
  return overrides;
}

function positiveInteger(value: unknown, fallback: number, option: string): number {
  const resolved = value ?? fallback;
  if (typeof resolved !== 'number' || !Number.isSafeInteger(resolved) || resolved < 1) {
    throw new ConfigurationError(`FlowGuard ${option} must be a positive integer`, {
      details: { option },
    });
  }
  return resolved;
}

function selectors(value: unknown, option: string): readonly Matcher[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) {
    throw new ConfigurationError(
      `FlowGuard ${option} must be an array of tool selectors ('tool', 'server__tool' or { server, tool })`,
      { details: { option } },
    );
  }
  return value.map((item: unknown, index) => selector(item, `${option}[${index}]`));
}

function selector(value: unknown, option: string): Matcher {
  if (typeof value === 'string') {
    if (value === '') {
      throw new ConfigurationError(`FlowGuard ${option} must not be empty`, {
        details: { option },
      });
    }
    return compileToolSelector({ tool: value });
  }
  checkOptionKeys(
    value,
    SELECTOR_KEYS,
    `FlowGuard ${option}`,
    (message, key) => new ConfigurationError(message, { details: { option: `${option}.${key}` } }),
  );
  const { tool, server } = value as ToolSelector;
  for (const [key, field] of [
    ['tool', tool],
    ['server', server],
  ] as const) {
    if (field !== undefined && (typeof field !== 'string' || field === '')) {
      throw new ConfigurationError(`FlowGuard ${option}.${key} must be a non-empty string`, {
        details: { option: `${option}.${key}` },
      });
    }
  }
  if (tool === undefined && server === undefined) {
    throw new ConfigurationError(`FlowGuard ${option} needs a tool, a server or both`, {
      details: { option },
    });
  }
  return compileToolSelector({ tool, server });
}

function nameOf(source: FlowSource): string {
  if (source.basis === 'dropped') {
    return 'an earlier part of this session (its labels were dropped at the session limit, or are not held by this process)';
  }
  if (source.basis === 'unnamed') {
    return 'further sources not named (beyond maxSourcesPerSession; no permit covers them)';
  }
  return JSON.stringify(source.tool);
}

function nameList(entries: readonly LabelEntry[]): string {
  const names = [...new Set(entries.map((entry) => nameOf(entry.source)))];
  if (names.length <= NAMES_IN_REASON) {
    return names.length === 1
      ? (names[0] as string)
      : `${names.slice(0, -1).join(', ')} and ${names.at(-1) as string}`;
  }
  return `${names.slice(0, NAMES_IN_REASON).join(', ')} and ${names.length - NAMES_IN_REASON} more`;
}

function raiseReason(
  verdict: 'ask' | 'deny',
  exposing: readonly LabelEntry[],
  privateData: readonly LabelEntry[],
  sink: FlowSink,
  does: string,
): string {
  const sinkName = JSON.stringify(sink.tool);
  const read = `This session read untrusted content from ${nameList(exposing)}`;
  if (verdict === 'ask') {
    return `${read}; ${sinkName} ${does}, so a person must approve this one call.`;
  }
  const from = privateData.find(
    (entry) => entry.source.basis !== 'dropped' && entry.source.basis !== 'unnamed',
  );
  const how =
    from === undefined
      ? 'end the session to start clean'
      : `ask the user to permit the flow from ${JSON.stringify(from.source.tool)} to ${sinkName}`;
  return `${read} and holds private data from ${nameList(privateData)}; ${sinkName} ${does} and could leak it, so the call is denied. Continue without it or ${how}.`;
}
