import type { PermissionVerdict } from './authorization.js';
import type { FlowRaise } from './flow-raise.js';

/**
 * What {@link ToolRegistry.authorize} found for one call, without running it: the authorizer's
 * verdict on the validated argument snapshot. Frozen; issued by one registry and only usable
 * with it.
 */
export interface CallAuthorization {
  /** The tool the call asks for. */
  readonly toolName: string;
  /** The authorizer's verdict: `allow`, `deny`, or `ask` (a human must approve first). */
  readonly verdict: PermissionVerdict;
  /** The authorizer's log-safe reason, if it gave one (the flow guard's, when it raised). */
  readonly reason: string | undefined;
  /**
   * The registry's flow guard's raise, when it raised the verdict or reports one (observe mode,
   * or the same `ask` the authorizer gave): name the flow in the host's approval prompt.
   */
  readonly flow?: FlowRaise;
}

/**
 * A human's yes to one exact call, obtained through the host's own approval flow (an agent
 * framework's human-in-the-loop) and turned into a token with {@link ToolRegistry.grantApproval}.
 * Opaque: it answers the authorizer's `ask` for a call with the same tool instance, run id and
 * argument digest, once. It is not a permission bypass: validation, the read-only scope, the
 * authorizer (a `deny` still denies) and budgets all still run.
 */
export interface ApprovalGrant {
  /** The tool the approval is for. */
  readonly toolName: string;
  /** `sha256:<hex>` of the canonical JSON of the argument snapshot the approval is bound to. */
  readonly argsDigest: string;
  /** The run id the approval is bound to. */
  readonly runId: string;
  /** The session the approval is bound to (the context's `session`). */
  readonly session: string;
}

/** Options of one {@link ToolRegistry.invoke} call. */
export interface InvokeOptions {
  /**
   * A single-use grant from {@link ToolRegistry.grantApproval}: answers the authorizer's `ask`
   * instead of the registry's `approval` callback. Consumed when `invoke` is called, whatever the
   * outcome; a grant that does not match the call denies it.
   */
  readonly approval?: ApprovalGrant;
}
