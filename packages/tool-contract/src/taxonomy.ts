import { ContractDefinitionError } from './contract-definition-error.js';

const RISK_LEVELS_VALUES = [
  'read-only',
  'low-risk-write',
  'high-risk-write',
  'external-publication',
  'paid-operation',
  'destructive',
] as const;

/**
 * Risk levels in ascending order: each level is riskier than the one before it.
 *
 * The order is what a risk policy compares: a tool at `paid-operation` demands at least the
 * approval a tool at `external-publication` demands, and `destructive` is the top.
 */
export const RISK_LEVELS: typeof RISK_LEVELS_VALUES = Object.freeze(RISK_LEVELS_VALUES);

/** {@link RISK_LEVELS} under the original Python package's name: the levels in ascending order. */
export const RISK_LEVEL_ORDER: typeof RISK_LEVELS = RISK_LEVELS;

/** One of {@link RISK_LEVELS}. */
export type RiskLevel = (typeof RISK_LEVELS)[number];

const CONTENT_TRUST_LEVELS_VALUES = [
  'trusted',
  'untrusted',
  'sensitive',
  'prompt-injection-prone',
] as const;

/**
 * Content-trust levels, in ascending order of the caution their content demands.
 *
 * Content trust is orthogonal to risk: a read-only tool can return hostile content. The order
 * ranks each level by the worst outcome if a gateway handled that content as if it were trusted:
 *
 * 1. `trusted`: written or vetted by the operator; nothing special to do.
 * 2. `untrusted`: third-party content that may be wrong; treat it as data, never as instructions.
 * 3. `sensitive`: secrets or personal data; mishandling leaks them, which cannot be undone, so it
 *    needs everything `untrusted` needs plus limits on where the content may flow.
 * 4. `prompt-injection-prone`: content an adversary can write (web pages, mail, issues) that is
 *    likely to carry instructions; it can hijack the agent into any action, including leaking
 *    sensitive content, so its worst case contains the ones before it.
 */
export const CONTENT_TRUST_LEVELS: typeof CONTENT_TRUST_LEVELS_VALUES = Object.freeze(
  CONTENT_TRUST_LEVELS_VALUES,
);

/** One of {@link CONTENT_TRUST_LEVELS}. */
export type ContentTrustLevel = (typeof CONTENT_TRUST_LEVELS)[number];

/** The facts a tool's author declares, frozen by `defineContract`. */
export interface ToolContract {
  /** How much harm a call can do; policies compare it by its rank in {@link RISK_LEVELS}. */
  readonly risk: RiskLevel;
  /** How far the tool's output can be trusted; see {@link CONTENT_TRUST_LEVELS}. */
  readonly contentTrust: ContentTrustLevel;
  /** True when repeating a call with the same arguments has no further effect, so it is safe to retry. */
  readonly idempotent: boolean;
  /** Semver of the tool's contract. */
  readonly version: string;
  /** ISO date (YYYY-MM-DD) from which the tool is deprecated. */
  readonly deprecatedSince?: string;
  /**
   * Set only by `readContract`: a declared `deprecated_since` that is not a `YYYY-MM-DD` date but
   * plain text (a version such as `2.0.0`, as the original Python package accepts), kept as
   * declared. The tool is deprecated; `deprecatedSince` stays unset, since it is always a date.
   */
  readonly deprecatedSinceText?: string;
  /** ISO date (YYYY-MM-DD) after which the tool may be removed. */
  readonly sunset?: string;
  /** Name of the tool that replaces this one. */
  readonly replacement?: string;
  /** Other names the tool answers to. */
  readonly aliases: readonly string[];
}

/** True when `value` is one of {@link RISK_LEVELS}. */
export function isRiskLevel(value: unknown): value is RiskLevel {
  return typeof value === 'string' && (RISK_LEVELS as readonly string[]).includes(value);
}

/** True when `value` is one of {@link CONTENT_TRUST_LEVELS}. */
export function isContentTrustLevel(value: unknown): value is ContentTrustLevel {
  return typeof value === 'string' && (CONTENT_TRUST_LEVELS as readonly string[]).includes(value);
}

const RISK_CODE = 'CONTRACT_UNKNOWN_RISK';
const TRUST_CODE = 'CONTRACT_UNKNOWN_CONTENT_TRUST';

function rankOf(levels: readonly string[], value: unknown, code: string, what: string): number {
  const rank = typeof value === 'string' ? levels.indexOf(value) : -1;
  if (rank < 0) {
    throw new ContractDefinitionError(`Expected one of the ${what} levels: ${levels.join(', ')}.`, {
      code,
    });
  }
  return rank;
}

/**
 * Orders two risk levels: negative when `a` is less risky than `b`, 0 when equal, positive when
 * `a` is riskier. Usable as an `Array.prototype.sort` comparator. Throws a `ContractDefinitionError`
 * (`CONTRACT_UNKNOWN_RISK`) for a value that is not a {@link RiskLevel}.
 */
export function compareRisk(a: RiskLevel, b: RiskLevel): number {
  return rankOf(RISK_LEVELS, a, RISK_CODE, 'risk') - rankOf(RISK_LEVELS, b, RISK_CODE, 'risk');
}

/**
 * Orders two content-trust levels by the caution their content demands (see
 * {@link CONTENT_TRUST_LEVELS}): negative when `a` demands less caution than `b`.
 */
export function compareContentTrust(a: ContentTrustLevel, b: ContentTrustLevel): number {
  return (
    rankOf(CONTENT_TRUST_LEVELS, a, TRUST_CODE, 'content-trust') -
    rankOf(CONTENT_TRUST_LEVELS, b, TRUST_CODE, 'content-trust')
  );
}

/** The riskier of two levels. */
export function maxRisk(a: RiskLevel, b: RiskLevel): RiskLevel {
  return compareRisk(a, b) >= 0 ? a : b;
}

/** The more cautious of two content-trust levels. */
export function maxContentTrust(a: ContentTrustLevel, b: ContentTrustLevel): ContentTrustLevel {
  return compareContentTrust(a, b) >= 0 ? a : b;
}
