/**
 * The principal of every caller when the gateway knows one caller only (stdio, or `--http` with
 * the static bearer token): approvals are bound to it like to any other principal.
 */
export const GATEWAY_SINGLE_PRINCIPAL = 'toolfence|single-user';

/**
 * Who is calling, as approvals bind it: `authInfo.extra.principal` (`issuer|subject`, set by the
 * layer that validated the caller's token) when it is a non-empty string, else
 * {@link GATEWAY_SINGLE_PRINCIPAL}. Only its SHA-256 digest is sealed, so its length is free.
 */
export function principalOf(
  authInfo: { readonly extra?: Record<string, unknown> } | undefined,
): string {
  const principal = authInfo?.extra?.principal;
  return typeof principal === 'string' && principal !== '' ? principal : GATEWAY_SINGLE_PRINCIPAL;
}
