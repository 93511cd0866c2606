import {
  CONTENT_TRUST_LEVELS,
  type ContentTrustLevel,
  type ContractOverride,
  compareContentTrust,
  compareRisk,
  defineOverride,
  type EffectiveContract,
  isContentTrustLevel,
  isRiskLevel,
  RISK_LEVELS,
  type RiskLevel,
  type ToolContract,
} from '@toolfence/tool-contract';
import {
  type AskableTool,
  type AuthorizationRequest,
  type Authorizer,
  type PermissionDecision,
  type PermissionVerdict,
  permission,
} from '../registry/authorization.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import { checkOptionKeys } from '../registry/option-keys.js';
import { effectiveCallContract, HeuristicMemory } from './effective-call-contract.js';

/** Thresholds on one ordered scale: up to `allowUpTo` allow, up to `askUpTo` ask, above deny. */
export interface RiskThresholds<Level extends string> {
  /** Highest level that is allowed without asking. */
  readonly allowUpTo?: Level;
  /** Highest level that asks for approval (not below `allowUpTo`); anything above is denied. */
  readonly askUpTo?: Level;
}

/** Options of {@link RiskPolicy}. */
export interface RiskPolicyOptions {
  /** Risk thresholds. Default allow up to `read-only`, ask up to `destructive` (every write asks). */
  readonly risk?: RiskThresholds<RiskLevel>;
  /**
   * Content-trust thresholds. Default allow up to `untrusted`, ask up to
   * `prompt-injection-prone` (sensitive or injection-prone content asks).
   */
  readonly contentTrust?: RiskThresholds<ContentTrustLevel>;
  /**
   * Tools without a declared contract: `heuristic` (default) judges tool-contract's name and
   * description heuristic, which treats anything it cannot classify as `high-risk-write`, raised
   * by the tool's standard hints (the riskier of the two: `destructiveHint: true` is at least
   * `destructive`, `readOnlyHint: false` at least a write; `readOnlyHint: true` never lowers);
   * `ask` or `deny` decide every undeclared call outright.
   */
  readonly undeclared?: 'heuristic' | 'ask' | 'deny';
  /**
   * Treat a call whose effect (from the spec's effect descriptor) is `read` as `read-only` risk,
   * for example an HTTP tool's GET. Default true.
   */
  readonly readEffectIsReadOnly?: boolean;
  /**
   * Operator overrides by tool name (tool-contract's `ContractOverride`): they win over the
   * declaration and the heuristic; `veto: true` denies the tool outright. Default none.
   */
  readonly overrides?: Readonly<Record<string, ContractOverride>>;
}

/** The default risk thresholds of {@link RiskPolicy}. */
export const DEFAULT_RISK_THRESHOLDS: Required<RiskThresholds<RiskLevel>> = Object.freeze({
  allowUpTo: 'read-only',
  askUpTo: 'destructive',
});

/** The default content-trust thresholds of {@link RiskPolicy}. */
export const DEFAULT_CONTENT_TRUST_THRESHOLDS: Required<RiskThresholds<ContentTrustLevel>> =
  Object.freeze({ allowUpTo: 'untrusted', askUpTo: 'prompt-injection-prone' });

const VERDICT_RANK: Readonly<Record<PermissionVerdict, number>> = { allow: 0, ask: 1, deny: 2 };

/**
 * Decides from the tool's contract (declared, or tool-contract's heuristic for undeclared tools):
 * the stricter of the risk verdict and the content-trust verdict.
 */
export class RiskPolicy implements Authorizer {
  readonly #risk: Required<RiskThresholds<RiskLevel>>;
  readonly #trust: Required<RiskThresholds<ContentTrustLevel>>;
  readonly #undeclared: 'heuristic' | 'ask' | 'deny';
  readonly #readEffectIsReadOnly: boolean;
  readonly #overrides: ReadonlyMap<string, ContractOverride>;
  /**
   * The effective contract of an overridden tool's calls, per override and per the call's
   * declared contract (or spec, when it declares none): one object per pair, so the flow guard
   * that receives it judges it once.
   */
  readonly #effective = new WeakMap<ContractOverride, WeakMap<object, EffectiveContract>>();
  /** The heuristic's judgement by tool name, with the description it judged (a pure function). */
  readonly #heuristics = new HeuristicMemory();
  /** Whether a call of a tool without an override could get `ask` (see {@link RiskPolicy.mayAsk}). */
  readonly #mayAskAny: boolean;

  /** Merges the options with the defaults and checks them; throws {@link ConfigurationError}. */
  constructor(options: RiskPolicyOptions = {}) {
    checkOptionKeys(
      options,
      ['risk', 'contentTrust', 'undeclared', 'readEffectIsReadOnly', 'overrides'],
      'RiskPolicy',
    );
    for (const option of ['risk', 'contentTrust'] as const) {
      if (options[option] !== undefined) {
        checkOptionKeys(options[option], ['allowUpTo', 'askUpTo'], `RiskPolicy ${option}`);
      }
    }
    this.#risk = checkThresholds(
      { ...DEFAULT_RISK_THRESHOLDS, ...options.risk },
      'risk',
      isRiskLevel,
      compareRisk,
    );
    this.#trust = checkThresholds(
      { ...DEFAULT_CONTENT_TRUST_THRESHOLDS, ...options.contentTrust },
      'contentTrust',
      isContentTrustLevel,
      compareContentTrust,
    );
    const undeclared: unknown = options.undeclared ?? 'heuristic';
    if (undeclared !== 'heuristic' && undeclared !== 'ask' && undeclared !== 'deny') {
      throw new ConfigurationError("undeclared must be 'heuristic', 'ask' or 'deny'", {
        details: { option: 'undeclared' },
      });
    }
    this.#undeclared = undeclared;
    const readEffect: unknown = options.readEffectIsReadOnly ?? true;
    if (typeof readEffect !== 'boolean') {
      throw new ConfigurationError('readEffectIsReadOnly must be a boolean', {
        details: { option: 'readEffectIsReadOnly' },
      });
    }
    this.#readEffectIsReadOnly = readEffect;
    const overrides = new Map<string, ContractOverride>();
    if (options.overrides !== undefined) {
      if (typeof options.overrides !== 'object' || options.overrides === null) {
        throw new ConfigurationError('overrides must be an object keyed by tool name', {
          details: { option: 'overrides' },
        });
      }
      for (const [tool, override] of Object.entries(options.overrides)) {
        try {
          overrides.set(tool, defineOverride(override));
        } catch (error) {
          throw new ConfigurationError(
            `overrides[${JSON.stringify(tool)}] is not a valid override`,
            {
              details: { option: 'overrides', tool },
              cause: error,
            },
          );
        }
      }
    }
    this.#overrides = overrides;
    this.#mayAskAny =
      this.#undeclared === 'ask' || this.#asksAmong(RISK_LEVELS, CONTENT_TRUST_LEVELS);
  }

  /**
   * Whether some call of the tool could get an `ask` verdict (see `Authorizer.mayAsk`): false for
   * a tool an override vetoes, and when no pair of a risk level and a content-trust level the
   * tool's calls could have asks under the thresholds (any level, unless an override fixes it;
   * with `readEffectIsReadOnly`, `read-only` too); true when `undeclared` is `ask` and no
   * override of the tool sets a fact.
   */
  mayAsk(tool: AskableTool): boolean {
    const override = this.#overrides.get(tool?.toolName);
    if (override === undefined) return this.#mayAskAny;
    if (override.veto === true) return false;
    // An override that sets no fact leaves an undeclared call undeclared.
    const setsAFact =
      override.risk !== undefined ||
      override.contentTrust !== undefined ||
      override.idempotent !== undefined;
    if (this.#undeclared === 'ask' && !setsAFact) return true;
    const risks: readonly RiskLevel[] =
      override.risk === undefined
        ? RISK_LEVELS
        : this.#readEffectIsReadOnly
          ? [override.risk, 'read-only']
          : [override.risk];
    const trusts: readonly ContentTrustLevel[] =
      override.contentTrust === undefined ? CONTENT_TRUST_LEVELS : [override.contentTrust];
    return this.#asksAmong(risks, trusts);
  }

  /** Whether some pair of the levels gets `ask`: the stricter of the two scales' verdicts. */
  #asksAmong(risks: readonly RiskLevel[], trusts: readonly ContentTrustLevel[]): boolean {
    for (const risk of risks) {
      const byRisk = verdictOf(risk, this.#risk, compareRisk);
      for (const trust of trusts) {
        const byTrust = verdictOf(trust, this.#trust, compareContentTrust);
        if ((VERDICT_RANK[byTrust] > VERDICT_RANK[byRisk] ? byTrust : byRisk) === 'ask') {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * The effective contract {@link authorize} judges the call by, when an operator override of the
   * tool sets a fact or vetoes it (override over the declaration, else over the heuristic raised
   * by the hints); undefined otherwise (the call is then judged by what it declares, as the flow
   * guard reads it too). The registry hands it to its flow guard (`Authorizer.effectiveContract`),
   * so an override reaches the guard's labels and sinks. The same object for every call with the
   * same declared contract.
   */
  effectiveContract(request: AuthorizationRequest): EffectiveContract | undefined {
    const override = this.#overrides.get(request.toolName);
    if (override === undefined) return undefined;
    let byBase = this.#effective.get(override);
    if (byBase === undefined) {
      byBase = new WeakMap();
      this.#effective.set(override, byBase);
    }
    const key: object = request.contract ?? request.spec;
    let effective = byBase.get(key);
    if (effective === undefined) {
      effective = effectiveCallContract(request.spec, request.contract, override, this.#heuristics);
      byBase.set(key, effective);
    }
    return effective.source === 'override' ? effective : undefined;
  }

  /**
   * Returns the stricter of the risk and content-trust verdicts for the call's effective contract
   * (override, else declaration, else heuristic); a vetoed tool is denied.
   */
  authorize(request: AuthorizationRequest): PermissionDecision {
    const declared = request.contract;
    const override = this.#overrides.get(request.toolName);
    if (declared === undefined && override === undefined && this.#undeclared !== 'heuristic') {
      return permission(this.#undeclared, 'undeclared tool');
    }
    // The standard hints raise the guess for an undeclared tool (destructiveHint: true is at
    // least destructive, readOnlyHint: false at least a write); they never lower it.
    const effective = effectiveCallContract(request.spec, declared, override, this.#heuristics);
    if (effective.vetoed) return permission('deny', 'vetoed by an operator override');
    const contract: ToolContract = effective.contract;
    const source = effective.source;
    if (source === 'heuristic' && this.#undeclared !== 'heuristic') {
      return permission(this.#undeclared, 'undeclared tool');
    }
    const risk: RiskLevel =
      this.#readEffectIsReadOnly && request.effect === 'read' ? 'read-only' : contract.risk;
    const byRisk = verdictOf(risk, this.#risk, compareRisk);
    const byTrust = verdictOf(contract.contentTrust, this.#trust, compareContentTrust);
    const verdict = VERDICT_RANK[byTrust] > VERDICT_RANK[byRisk] ? byTrust : byRisk;
    const reason =
      verdict === byRisk
        ? `${source} risk ${risk}`
        : `${source} content trust ${contract.contentTrust}`;
    return permission(verdict, reason);
  }
}

function verdictOf<Level extends string>(
  level: Level,
  thresholds: Required<RiskThresholds<Level>>,
  compare: (a: Level, b: Level) => number,
): PermissionVerdict {
  if (compare(level, thresholds.allowUpTo) <= 0) return 'allow';
  if (compare(level, thresholds.askUpTo) <= 0) return 'ask';
  return 'deny';
}

function checkThresholds<Level extends string>(
  thresholds: RiskThresholds<Level>,
  option: string,
  isLevel: (value: unknown) => boolean,
  compare: (a: Level, b: Level) => number,
): Required<RiskThresholds<Level>> {
  const levels = option === 'risk' ? RISK_LEVELS : CONTENT_TRUST_LEVELS;
  for (const key of ['allowUpTo', 'askUpTo'] as const) {
    if (!isLevel(thresholds[key])) {
      throw new ConfigurationError(`${option}.${key} must be one of ${levels.join(', ')}`, {
        details: { option: `${option}.${key}` },
      });
    }
  }
  const checked = thresholds as Required<RiskThresholds<Level>>;
  if (compare(checked.askUpTo, checked.allowUpTo) < 0) {
    throw new ConfigurationError(`${option}.askUpTo must not be below ${option}.allowUpTo`, {
      details: { option: `${option}.askUpTo` },
    });
  }
  return Object.freeze({ ...checked });
}
