// What the registry asks an authorizer and what it accepts back. Policies implement `Authorizer`.
import type { EffectiveContract, ToolContract } from '@toolfence/tool-contract';
import type { JsonObject, ToolContext, ToolEffect, ToolSpec } from './tool.js';

const PERMISSION_VERDICTS_VALUES = ['allow', 'deny', 'ask'] as const;

/** The three answers an authorizer can give. */
export const PERMISSION_VERDICTS: typeof PERMISSION_VERDICTS_VALUES = Object.freeze(
  PERMISSION_VERDICTS_VALUES,
);

/** One of {@link PERMISSION_VERDICTS}. */
export type PermissionVerdict = (typeof PERMISSION_VERDICTS)[number];

/** An authorizer's answer: allow, deny, or ask a human (through the registry's `approval`). */
export interface PermissionDecision {
  /** `allow` runs the call, `deny` refuses it, `ask` defers to the registry's `approval`. */
  readonly verdict: PermissionVerdict;
  /** A short, log-safe reason (never argument values); reaches errors' `details.reason`. */
  readonly reason?: string;
}

/** Everything an authorizer may look at for one call. Arguments and context are frozen. */
export interface AuthorizationRequest {
  /** Registry name of the tool being called. */
  readonly toolName: string;
  /** The call's frozen argument snapshot (already validated against the input schema). */
  readonly args: JsonObject;
  /** The frozen per-call context (run, step, metadata, access scope, signal). */
  readonly context: ToolContext;
  /** The spec of the leased tool instance that will run if the call is allowed. */
  readonly spec: ToolSpec;
  /**
   * The contract of this call: for a tool with `spec.operationContracts`, the contract of the
   * operation the call performs; else the tool's declared contract (in the spec or its
   * annotations), if any.
   */
  readonly contract: ToolContract | undefined;
  /** The operation the call performs, for a tool with `spec.operationContracts`; else undefined. */
  readonly operation?: string | undefined;
  /** The effect of this call, from the spec's effect descriptor or the call's contract. */
  readonly effect: ToolEffect;
}

/** Decides whether one call may run. It may be async; throwing denies the call. */
export interface Authorizer {
  /** Returns the verdict for one call; a throw, rejection or malformed answer counts as deny. */
  authorize(request: AuthorizationRequest): PermissionDecision | Promise<PermissionDecision>;
  /**
   * Optional: whether some call of this tool could get an `ask` verdict. `false` is a promise that
   * none can (whatever the arguments, context and caller); an authorizer without this method, or
   * one that throws, counts as `true`. Framework adapters skip their approval preview for a tool
   * this is false for; every call is still authorized by `invoke`, so a wrong `false` sends an
   * `ask` to the registry's `approval` callback (or refuses the call), never runs it unasked.
   */
  mayAsk?(tool: AskableTool): boolean;
  /**
   * Optional: the effective contract this authorizer judges the call by when it differs from what
   * the call declares (tool-contract's `EffectiveContract`: an operator override laid over the
   * declaration or the heuristic), else undefined. The registry hands it to its flow guard, so the
   * guard labels sessions and finds sinks by the contract the policy reasoned with. `RiskPolicy`
   * and the combinators implement it; a throw denies the call (`flow-guard-error`).
   */
  effectiveContract?(request: AuthorizationRequest): EffectiveContract | undefined;
}

/** The tool {@link Authorizer.mayAsk} is asked about. */
export interface AskableTool {
  /** Registry name of the tool. */
  readonly toolName: string;
  /** The spec of the tool instance installed under that name. */
  readonly spec: ToolSpec;
}

/** Builds a {@link PermissionDecision}. */
export function permission(verdict: PermissionVerdict, reason?: string): PermissionDecision {
  return Object.freeze(reason === undefined ? { verdict } : { verdict, reason });
}

/** Checks that a value is a well-formed decision; anything else is treated as a deny. */
export function isPermissionDecision(value: unknown): value is PermissionDecision {
  if (typeof value !== 'object' || value === null) return false;
  // The three verdicts compared in place (PERMISSION_VERDICTS.includes costs a call per decision).
  const verdict = (value as { verdict?: unknown }).verdict;
  if (verdict !== 'allow' && verdict !== 'deny' && verdict !== 'ask') return false;
  const reason = (value as { reason?: unknown }).reason;
  return reason === undefined || typeof reason === 'string';
}
