/**
 * Risk levels in ascending order: each level is riskier than the one before it.
 * (Owned by the tool-contract issue; this file pins the names other packages build on.)
 */
export const RISK_LEVELS = [
  'read-only',
  'low-risk-write',
  'high-risk-write',
  'external-publication',
  'paid-operation',
  'destructive',
] as const;

/** One of {@link RISK_LEVELS}. */
export type RiskLevel = (typeof RISK_LEVELS)[number];

/** Content-trust levels, in ascending order of the caution their content demands. */
export const CONTENT_TRUST_LEVELS = [
  'trusted',
  'untrusted',
  'sensitive',
  'prompt-injection-prone',
] as const;

/** One of {@link CONTENT_TRUST_LEVELS}. */
export type ContentTrustLevel = (typeof CONTENT_TRUST_LEVELS)[number];

/** The facts a tool's author declares, frozen by `defineContract`. */
export interface ToolContract {
  readonly risk: RiskLevel;
  readonly contentTrust: ContentTrustLevel;
  readonly idempotent: boolean;
  /** Semver of the tool's contract. */
  readonly version: string;
  /** ISO date (YYYY-MM-DD) from which the tool is deprecated. */
  readonly deprecatedSince?: string;
  /** ISO date (YYYY-MM-DD) after which the tool may be removed. */
  readonly sunset?: string;
  /** Name of the tool that replaces this one. */
  readonly replacement?: string;
  /** Other names the tool answers to. */
  readonly aliases: readonly string[];
}
