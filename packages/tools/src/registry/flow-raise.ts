// What the registry takes from a flow guard and hands on: the session labels, the raise of one
// call, and the two methods the registry calls. The guard itself is a policy (src/policy/).
import type { EffectiveContract, RiskLevel, ToolContract } from '@toolfence/tool-contract';
import type { PermissionVerdict } from './authorization.js';
import type { ToolContext, ToolResult, ToolSpec } from './tool.js';

/** What a source's content is: untrusted or injection-prone (exposes), or sensitive (private). */
export type FlowTrust = 'untrusted' | 'prompt-injection-prone' | 'sensitive';

/**
 * Where a fact about a tool comes from: its declared contract, a standard MCP hint
 * (`openWorldHint`, `destructiveHint`, `readOnlyHint`) of an undeclared tool, tool-contract's
 * name and description heuristic, the operator's configuration (`configured`: the guard's
 * options, or an override in the guard's or the policy's `overrides`), (`dropped`) a session
 * whose labels were dropped at the `maxSessions` limit and is judged as exposed and private, or
 * (`unnamed`, tool `*`) sources beyond `maxSourcesPerSession`, which still count and which no
 * `permit` covers.
 */
export type FlowBasis = 'declared' | 'hint' | 'heuristic' | 'configured' | 'dropped' | 'unnamed';

/** A tool whose result labelled a session. */
export interface FlowSource {
  /** The tool's registry name (for a gateway: the offered name `server__tool`). */
  readonly tool: string;
  /** The server the tool comes from (`spec.origin.server`), when known. */
  readonly server?: string;
  /** What its content is. */
  readonly trust: FlowTrust;
  /** Why the guard reads it so. */
  readonly basis: FlowBasis;
}

/** What a session holds. Labels only rise: a source is never removed but by `endSession`. */
export interface FlowSessionLabels {
  /** Sources of untrusted or prompt-injection-prone content the session has seen. */
  readonly exposedBy: readonly FlowSource[];
  /** Sources of sensitive (private) data the session holds. */
  readonly privateFrom: readonly FlowSource[];
}

/** The call a raise is about: a tool that can send data out or do harm. */
export interface FlowSink {
  /** The tool's registry name. */
  readonly tool: string;
  /** The server the tool comes from, when known. */
  readonly server?: string;
  /** The effective risk of the call. */
  readonly risk: RiskLevel;
  /**
   * Why it is a sink: its risk (`declared`, `hint`, `heuristic`), or the options or an operator
   * override (`configured`).
   */
  readonly basis: Exclude<FlowBasis, 'dropped' | 'unnamed'>;
}

/** The guard's answer for a call to a sink in an exposed session. Frozen, log-safe. */
export interface FlowRaise {
  /** `ask` (a person must approve this one call) or `deny`. Never below the policy's verdict. */
  readonly verdict: 'ask' | 'deny';
  /** A sentence a person and a model can act on: the sources, the private data and the sink. */
  readonly reason: string;
  /** The call's tool. */
  readonly sink: FlowSink;
  /** The session's labels when the call was checked. */
  readonly labels: FlowSessionLabels;
  /** True in `enforce` mode; false in `observe` mode (report it, keep the policy's verdict). */
  readonly enforced: boolean;
}

/**
 * What {@link ToolRegistry} calls on its `flowGuard` (`FlowGuard` implements it): `check` after
 * the authorizer's verdict, `record` after each result.
 */
export interface SessionFlowGuard {
  /** `enforce` raises verdicts; `observe` reports raises and keeps the verdict. */
  readonly mode: 'enforce' | 'observe';
  /**
   * The raise for a call in `session`, or undefined; never below `verdict`. The registry passes
   * the call's `context` last, so a host that wraps the guard can tell which call was judged and
   * read the raise the registry enforces instead of checking again (`FlowGuard` ignores it).
   * `effective` is the authorizer's effective contract of the call, when it gives one
   * (`Authorizer.effectiveContract`: an operator override applied), which the guard judges the
   * call by instead of the declaration.
   */
  check(
    session: string,
    spec: ToolSpec,
    verdict: PermissionVerdict,
    contract?: ToolContract,
    context?: ToolContext,
    effective?: EffectiveContract,
  ): FlowRaise | undefined;
  /** Records a call's result in `session` (labels only rise); `effective` as for `check`. */
  record(
    session: string,
    spec: ToolSpec,
    result: ToolResult,
    contract?: ToolContract,
    effective?: EffectiveContract,
  ): void;
}
