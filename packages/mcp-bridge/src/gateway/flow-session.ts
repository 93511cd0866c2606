// The gateway's flow guard: one `FlowGuard` (from @toolfence/tools) for the whole gateway, whose
// labels are kept per downstream session. A session is a stdio client's connection, a legacy
// HTTP session, or, for stateless 2026-07-28 requests over HTTP (which carry no session), the
// principal that sent them: every conversation of one principal shares its labels.
import { createHash, randomUUID } from 'node:crypto';
import {
  ConfigurationError,
  FlowGuard,
  type FlowGuardOptions,
  type FlowRaise,
  type FlowSessionLabels,
  type FlowSource,
  type PermissionVerdict,
  type SessionFlowGuard,
  type ToolContext,
} from '@toolfence/tools/core';
import type { AuditFlow } from './audit-log.js';
import { canonicalJson } from './canonical-json.js';
import { GatewayConfigError } from './errors.js';
import type { GatewayFlowSettings } from './flow-config.js';
import { approvalPrincipal, principalOfAuthInfo } from './identity/gateway-principal.js';

/** The flow session of stateless requests that carry no principal (the gateway's one token). */
export const SHARED_PRINCIPAL_SESSION = 'principal:gateway';

/** The rank of a verdict: a raise is never below the policy's. */
const RANK: Readonly<Record<PermissionVerdict, number>> = { allow: 0, ask: 1, deny: 2 };

/** What an `AuthInfo` (the SDK's validated token) tells of its principal. */
interface PrincipalInfo {
  readonly clientId?: unknown;
  readonly extra?: unknown;
}

/**
 * The flow session of a stateless request: one per principal. Without validated authentication
 * (the gateway's single bearer token, or a loopback gateway without one) every stateless caller is
 * one principal. With it, the principal is the validated caller (the HTTP front's
 * `gateway.httpAuth`, read by {@link principalOfAuthInfo}) as approvals bind it
 * ({@link approvalPrincipal}: issuer and subject, whichever app they use); for an `AuthInfo` of a
 * transport of your own (`downstreamServer`), `extra.principal` or `extra.sub` and client id. The
 * two kinds never share a session, and the session id is a digest of them, never the token.
 */
export function principalSession(authInfo: PrincipalInfo | undefined): string {
  if (authInfo === undefined || authInfo === null) return SHARED_PRINCIPAL_SESSION;
  const caller = principalOfAuthInfo(authInfo);
  if (caller !== undefined) return sessionOf({ validated: approvalPrincipal(caller) });
  const extra = (
    typeof authInfo.extra === 'object' && authInfo.extra !== null ? authInfo.extra : {}
  ) as Record<string, unknown>;
  const subject =
    typeof extra.principal === 'string'
      ? extra.principal
      : typeof extra.sub === 'string'
        ? extra.sub
        : '';
  const client = typeof authInfo.clientId === 'string' ? authInfo.clientId : '';
  if (subject === '' && client === '') return SHARED_PRINCIPAL_SESSION;
  return sessionOf([client, subject]);
}

/** The session id of a principal's JSON shape (an object and an array never collide). */
function sessionOf(shape: unknown): string {
  const digest = createHash('sha256').update(JSON.stringify(shape)).digest('hex');
  return `principal:${digest.slice(0, 32)}`;
}

/** The flow session of one downstream connection (a stdio client, a legacy HTTP session). */
export function connectionSession(): string {
  return `connection:${randomUUID()}`;
}

/** The names of a label's sources, for the audit line (offered names, `dropped` for lost labels). */
function sourceNames(sources: readonly FlowSource[]): string[] {
  return [
    ...new Set(sources.map((source) => (source.basis === 'dropped' ? '(dropped)' : source.tool))),
  ];
}

/** The audit record of a raise: what the guard raised to, and the labels and sink that decided. */
export function auditFlow(flow: FlowRaise): AuditFlow {
  return {
    verdict: flow.verdict,
    enforced: flow.enforced,
    sink: flow.sink.tool,
    exposedBy: sourceNames(flow.labels.exposedBy),
    privateFrom: sourceNames(flow.labels.privateFrom),
  };
}

/** The decision a call was judged by: the policy's, raised by an enforced (or observed) raise. */
export function raisedVerdict(
  policy: PermissionVerdict,
  flow: FlowRaise | undefined,
  observe: boolean,
): PermissionVerdict {
  if (flow === undefined || !(flow.enforced || observe)) return policy;
  return RANK[flow.verdict] > RANK[policy] ? flow.verdict : policy;
}

/**
 * The gateway's flow guard and its sessions. Disabled (`flow.enabled: false`), it checks and
 * records nothing. The gateway's observe mode makes the guard observe too.
 */
export class GatewayFlow {
  /** The guard the registry consults, or undefined when the flow guard is off. */
  readonly guard: FlowGuard | undefined;
  readonly #key: string;

  /** Builds the guard from the policy file's `flow` section; throws `GATEWAY_CONFIG` for bad options. */
  constructor(settings: GatewayFlowSettings | undefined, observe: boolean) {
    const given = settings ?? {};
    this.#key = canonicalJson({ settings: given, observe });
    if (given.enabled === false) {
      this.guard = undefined;
      return;
    }
    const { enabled: _enabled, ...rest } = given;
    const options: FlowGuardOptions = {
      ...rest,
      mode: observe ? 'observe' : (given.mode ?? 'enforce'),
    };
    try {
      this.guard = new FlowGuard(options);
    } catch (error) {
      if (!ConfigurationError.isInstance(error)) throw error;
      const option = (error.details as { option?: unknown } | undefined)?.option;
      throw new GatewayConfigError(`flow: ${error.message}`, {
        details: { option: typeof option === 'string' ? `flow.${option}` : 'flow' },
        cause: error,
      });
    }
  }

  /** True when `settings` (and observe mode) are the ones this guard was built from. */
  sameAs(settings: GatewayFlowSettings | undefined, observe: boolean): boolean {
    return canonicalJson({ settings: settings ?? {}, observe }) === this.#key;
  }

  /**
   * The guard as the registry consults it, telling `read` each raise it gives and the call it was
   * for (the registry's context), so the gateway audits the raise the registry enforced without
   * checking the guard a second time. Undefined when the flow guard is off.
   */
  reading(
    read: (context: ToolContext | undefined, flow: FlowRaise) => void,
  ): SessionFlowGuard | undefined {
    const guard = this.guard;
    if (guard === undefined) return undefined;
    return Object.freeze({
      mode: guard.mode,
      check: (session, spec, verdict, contract, context) => {
        const flow = guard.check(session, spec, verdict, contract);
        if (flow !== undefined) read(context, flow);
        return flow;
      },
      record: (session, spec, result, contract) => guard.record(session, spec, result, contract),
    } satisfies SessionFlowGuard);
  }

  /** The session's labels (empty when the guard is off or has not labelled it). */
  labels(session: string): FlowSessionLabels {
    return this.guard?.labels(session) ?? { exposedBy: [], privateFrom: [] };
  }

  /** Forgets a session's labels: its downstream connection closed. */
  end(session: string | undefined): void {
    if (session !== undefined) this.guard?.endSession(session);
  }
}
