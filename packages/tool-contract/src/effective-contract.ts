import { ContractDefinitionError } from './contract-definition-error.js';
import { refuseUnknownFields } from './define-contract.js';
import { withHintFloor } from './hint-floor.js';
import { describeType } from './internal/rules.js';
import {
  type ContentTrustLevel,
  isContentTrustLevel,
  isRiskLevel,
  type RiskLevel,
  type ToolContract,
} from './taxonomy.js';

/**
 * An operator's catalog entry for one tool: it wins over the tool's declaration and over the
 * heuristic. Set only the facts you decide; `veto: true` blocks the tool outright.
 */
export interface ContractOverride {
  /** Block the tool whatever it declares. Default `false`. */
  readonly veto?: boolean;
  /** Why the override exists (kept for audit logs and status pages). */
  readonly reason?: string;
  /** Risk level to use instead of the declared or heuristic one. */
  readonly risk?: RiskLevel;
  /** Content-trust level to use instead of the declared or heuristic one. */
  readonly contentTrust?: ContentTrustLevel;
  /** Idempotence to use instead of the declared or heuristic value. */
  readonly idempotent?: boolean;
}

/** Which layer decided the effective contract. */
export type EffectiveSource = 'override' | 'declared' | 'heuristic';

/** What {@link effectiveContract} returns. */
export interface EffectiveContract {
  /** The contract to act on: the base (declared, else heuristic) with the override's facts on top. */
  readonly contract: ToolContract;
  /** `override` when an override set a fact or vetoed, else `declared` or `heuristic`. */
  readonly source: EffectiveSource;
  /** True when the override vetoes the tool: a gateway must not offer or call it. */
  readonly vetoed: boolean;
  /** The override's reason, when it gave one. */
  readonly reason?: string;
}

/** The three layers {@link effectiveContract} combines. */
export interface EffectiveContractInput {
  /** The tool's own declaration (`readContract(...).contract` when its source is `declared`). */
  readonly declared?: ToolContract | undefined;
  /** The operator's catalog override for this tool. */
  readonly override?: ContractOverride | undefined;
  /** The fallback guess (`heuristicContract(name, description)`); used when nothing is declared. */
  readonly heuristic?: ToolContract | undefined;
  /**
   * The tool's MCP `annotations`. Without a declaration, their standard hints raise the heuristic
   * base (`hintRiskFloor`: `destructiveHint: true` to `destructive`, `readOnlyHint: false`
   * to at least a write); they never lower it and never change a declaration.
   */
  readonly hints?: Readonly<Record<string, unknown>> | undefined;
}

/** Longest accepted override reason. */
const MAX_REASON_LENGTH = 1024;

const OVERRIDE_FIELDS: ReadonlySet<string> = new Set([
  'veto',
  'reason',
  'risk',
  'contentTrust',
  'idempotent',
]);

function invalid(code: string, field: string | undefined, message: string, value?: unknown): never {
  throw new ContractDefinitionError(message, {
    code,
    ...(field === undefined ? {} : { field }),
    details: { receivedType: describeType(value) },
  });
}

/**
 * Checks an operator override (typically loaded from a config file) and returns it frozen.
 *
 * @throws {ContractDefinitionError} `CONTRACT_INVALID_OVERRIDE` for a non-object, an unknown
 *   field, a non-boolean `veto` or a bad `reason`; `CONTRACT_UNKNOWN_RISK`,
 *   `CONTRACT_UNKNOWN_CONTENT_TRUST` or `CONTRACT_INVALID_IDEMPOTENT` for a bad fact.
 */
export function defineOverride(override: ContractOverride): ContractOverride {
  if (typeof override !== 'object' || override === null || Array.isArray(override)) {
    invalid(
      'CONTRACT_INVALID_OVERRIDE',
      undefined,
      'An override must be a plain object.',
      override,
    );
  }
  refuseUnknownFields(override, OVERRIDE_FIELDS, 'An override', 'CONTRACT_INVALID_OVERRIDE');
  const { veto, reason, risk, contentTrust, idempotent } = override as Record<string, unknown>;
  if (veto !== undefined && typeof veto !== 'boolean') {
    invalid('CONTRACT_INVALID_OVERRIDE', 'veto', 'veto must be a boolean.', veto);
  }
  if (reason !== undefined && (typeof reason !== 'string' || reason.length > MAX_REASON_LENGTH)) {
    invalid(
      'CONTRACT_INVALID_OVERRIDE',
      'reason',
      `reason must be a string of at most ${MAX_REASON_LENGTH} characters.`,
      reason,
    );
  }
  if (risk !== undefined && !isRiskLevel(risk)) {
    invalid('CONTRACT_UNKNOWN_RISK', 'risk', 'The override risk is not a known risk level.', risk);
  }
  if (contentTrust !== undefined && !isContentTrustLevel(contentTrust)) {
    invalid(
      'CONTRACT_UNKNOWN_CONTENT_TRUST',
      'contentTrust',
      'The override contentTrust is not a known content-trust level.',
      contentTrust,
    );
  }
  if (idempotent !== undefined && typeof idempotent !== 'boolean') {
    invalid(
      'CONTRACT_INVALID_IDEMPOTENT',
      'idempotent',
      'idempotent must be a boolean.',
      idempotent,
    );
  }
  return Object.isFrozen(override) ? override : Object.freeze({ ...override });
}

/** True when the override decides `field` itself (or vetoes the tool). */
export function overrideDecides(
  override: ContractOverride | undefined,
  field: 'risk' | 'contentTrust',
): boolean {
  return override !== undefined && (override.veto === true || override[field] !== undefined);
}

/**
 * Combines the layers with the precedence catalog override > declaration > heuristic raised by
 * the standard hints: the base is the declared contract, else the heuristic one with its risk
 * raised to the floor the tool's `hints` claim (the riskier of the two; see
 * `hintRiskFloor`); each fact the override sets replaces the base's; `veto: true` marks
 * the tool vetoed (the contract is still returned, for display). A declaration always beats the
 * heuristic and the hints, even when they are more cautious: the author knows (and `readContract`
 * already raised a declaration its own hints contradict); an operator who disagrees records an
 * override.
 *
 * @throws {ContractDefinitionError} `CONTRACT_MISSING_BASIS` when neither `declared` nor
 *   `heuristic` is given, or a validation code for an invalid override.
 */
export function effectiveContract(input: EffectiveContractInput): EffectiveContract {
  const { declared, heuristic } = input;
  const override = input.override === undefined ? undefined : defineOverride(input.override);
  const base =
    declared ?? (heuristic === undefined ? undefined : withHintFloor(heuristic, input.hints));
  if (base === undefined) {
    throw new ContractDefinitionError(
      'effectiveContract needs a declared or a heuristic contract to start from.',
      { code: 'CONTRACT_MISSING_BASIS' },
    );
  }
  const vetoed = override?.veto === true;
  const overrides =
    override !== undefined &&
    (vetoed ||
      override.risk !== undefined ||
      override.contentTrust !== undefined ||
      override.idempotent !== undefined);
  const contract: ToolContract = Object.freeze({
    ...base,
    ...(override?.risk === undefined ? {} : { risk: override.risk }),
    ...(override?.contentTrust === undefined ? {} : { contentTrust: override.contentTrust }),
    ...(override?.idempotent === undefined ? {} : { idempotent: override.idempotent }),
  });
  return Object.freeze({
    contract,
    source: overrides ? 'override' : declared === undefined ? 'heuristic' : 'declared',
    vetoed,
    ...(override?.reason === undefined ? {} : { reason: override.reason }),
  });
}
