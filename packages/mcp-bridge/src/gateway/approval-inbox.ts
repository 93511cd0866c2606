import { type ApprovalRequest, type JsonObject, principalOf } from '@toolfence/tools/core';

/** One `ask` as a person sees it in an approvals inbox (the gateway's web console). */
export interface InboxAsk {
  /** The offered tool name (`server__tool`). */
  readonly tool: string;
  /** The server's name in the config, when known. */
  readonly server: string | undefined;
  /** The tool's description as offered. */
  readonly description: string;
  /** The call's arguments (the registry's frozen snapshot), whole. */
  readonly arguments: JsonObject;
  /** The policy's reason for asking. */
  readonly reason: string | undefined;
  /**
   * The flow that raised the decision, when the approval request carries one (the flow guard's
   * words); absent otherwise.
   */
  readonly flow?: string;
  /** The pin of the definition the call runs against, when known. */
  readonly pin?: string;
  /**
   * Who made the call: the caller's issuer and subject as `gateway.httpAuth` validated them;
   * absent for a gateway without identity (stdio, a shared token).
   */
  readonly principal?: {
    /** The caller's token's `iss`. */
    readonly issuer: string;
    /** The caller's token's `sub`. */
    readonly subject: string;
  };
}

/**
 * The answer an inbox gives an ask: `approved` or `declined` by a person (or declined when it
 * stopped waiting); `full` at once when the inbox holds as many asks as it may, `principal-full`
 * when it holds as many of this caller's as one caller may have waiting.
 */
export type InboxAnswer = 'approved' | 'declined' | 'full' | 'principal-full';

/**
 * Where the gateway puts approvals besides the client: {@link ApprovalInbox.decide} holds an ask
 * the client cannot put to its user (no elicitation) until a person answers it or the approval
 * times out; {@link ApprovalInbox.observe} lists an ask the client is putting to its user,
 * read-only, until it is answered.
 */
export interface ApprovalInbox {
  /**
   * Waits for a person's answer to exactly this call. Resolves `declined` when `signal` aborts
   * (the approval timed out, or the call was cancelled), `full` at once when the inbox holds as
   * many asks as it may, `principal-full` when it holds as many of this caller's as it takes.
   */
  decide(ask: InboxAsk, signal: AbortSignal): Promise<InboxAnswer>;
  /** Lists an ask the client is putting to its user; the returned function removes it. */
  observe(ask: InboxAsk): () => void;
}

/**
 * The inbox's view of an approval request (the flow text when the request carries one, and the
 * caller's issuer and subject when the call context carries a principal).
 */
export function inboxAsk(
  request: ApprovalRequest,
  server: string | undefined,
  pin?: string,
): InboxAsk {
  const flow = (request as { readonly flow?: unknown }).flow;
  const flowText =
    typeof flow === 'string'
      ? flow
      : flow !== undefined && flow !== null
        ? (JSON.stringify(flow, null, 2) ?? undefined)
        : undefined;
  const principal = principalOf(request.context);
  return {
    tool: request.toolName,
    server,
    description: request.spec.description,
    arguments: request.args,
    reason: request.reason,
    ...(flowText === undefined ? {} : { flow: flowText }),
    ...(pin === undefined ? {} : { pin }),
    ...(principal === undefined
      ? {}
      : { principal: { issuer: principal.issuer, subject: principal.subject } }),
  };
}
