import { AUTH_INFO_PRINCIPAL_KEY } from './identity/gateway-principal.js';

/**
 * The principal of every caller when the gateway knows one caller only (stdio, or `--http` with
 * the static bearer token): approvals are bound to it like to any other principal.
 */
export const GATEWAY_SINGLE_PRINCIPAL = 'toolfence|single-user';

/**
 * A validated caller (`issuer` and `subject`, from `gateway.httpAuth`) as approvals and sealed
 * sessions bind it: the JSON array of both (no separator an issuer could forge), or
 * {@link GATEWAY_SINGLE_PRINCIPAL} without one. Only its SHA-256 digest is sealed.
 */
export function approvalPrincipal(
  caller: { readonly issuer: string; readonly subject: string } | undefined,
): string {
  return caller === undefined
    ? GATEWAY_SINGLE_PRINCIPAL
    : JSON.stringify([caller.issuer, caller.subject]);
}

/**
 * Who is calling, as approvals bind it: the caller the HTTP front validated
 * (`authInfo.extra[AUTH_INFO_PRINCIPAL_KEY]`, see {@link approvalPrincipal}), else
 * `authInfo.extra.principal` when it is a non-empty string, else {@link GATEWAY_SINGLE_PRINCIPAL}.
 */
export function principalOf(
  authInfo: { readonly extra?: Record<string, unknown> } | undefined,
): string {
  const caller = authInfo?.extra?.[AUTH_INFO_PRINCIPAL_KEY] as
    | { readonly issuer?: unknown; readonly subject?: unknown }
    | undefined;
  if (
    typeof caller === 'object' &&
    caller !== null &&
    typeof caller.issuer === 'string' &&
    typeof caller.subject === 'string'
  ) {
    return approvalPrincipal({ issuer: caller.issuer, subject: caller.subject });
  }
  const principal = authInfo?.extra?.principal;
  return typeof principal === 'string' && principal !== '' ? principal : GATEWAY_SINGLE_PRINCIPAL;
}
