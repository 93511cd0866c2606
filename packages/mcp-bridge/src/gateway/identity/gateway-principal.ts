import type { Principal } from '@toolfence/tools';

/** Longest claim value kept in a principal, in characters; longer values are dropped. */
const MAX_CLAIM_CHARS = 256;
/** Most values kept of one list claim. */
const MAX_CLAIM_VALUES = 64;

/** The key of `AuthInfo.extra` the HTTP front carries the validated caller under. */
export const AUTH_INFO_PRINCIPAL_KEY = 'toolfencePrincipal';

function keptValue(value: unknown): string | readonly string[] | undefined {
  if (typeof value === 'string') return value.length <= MAX_CLAIM_CHARS ? value : undefined;
  if (!Array.isArray(value)) return undefined;
  const strings = value.filter(
    (item): item is string => typeof item === 'string' && item.length <= MAX_CLAIM_CHARS,
  );
  return Object.freeze(strings.slice(0, MAX_CLAIM_VALUES));
}

/**
 * The caller as policies, the audit log and traces see it: the token's issuer and subject, and
 * the selected claims (strings or lists of strings, bounded; `scope` split into a list). Never
 * the token itself.
 */
export function principalFromClaims(
  issuer: string,
  subject: string,
  payload: Readonly<Record<string, unknown>>,
  selected: readonly string[],
): Principal {
  const claims: Record<string, string | readonly string[]> = {};
  for (const name of selected) {
    if (!Object.hasOwn(payload, name)) continue;
    const raw = payload[name];
    const kept = keptValue(
      name === 'scope' && typeof raw === 'string' ? raw.split(' ').filter(Boolean) : raw,
    );
    if (kept !== undefined) claims[name] = kept;
  }
  return Object.freeze({ issuer, subject, claims: Object.freeze(claims) });
}

/**
 * The principal of every caller when the gateway knows one caller only (stdio, or `--http` with
 * the static bearer token): approvals are bound to it like to any other principal.
 */
export const GATEWAY_SINGLE_PRINCIPAL = 'toolfence|single-user';

/**
 * The one reader of the validated caller: the principal the HTTP front (`gateway.httpAuth`) put
 * on an `AuthInfo` (`extra[AUTH_INFO_PRINCIPAL_KEY]`), if any, when its `issuer` and `subject`
 * are strings. Whatever else is there (another transport's `extra`) is not a validated caller.
 */
export function principalOfAuthInfo(authInfo: unknown): Principal | undefined {
  const extra = (authInfo as { extra?: unknown } | null | undefined)?.extra;
  if (typeof extra !== 'object' || extra === null) return undefined;
  const principal = (extra as Record<string, unknown>)[AUTH_INFO_PRINCIPAL_KEY];
  if (typeof principal !== 'object' || principal === null) return undefined;
  const { issuer, subject } = principal as Partial<Principal>;
  return typeof issuer === 'string' && typeof subject === 'string'
    ? (principal as Principal)
    : undefined;
}

/** The principal the HTTP front put on a request (`ctx.http.authInfo.extra`), if any. */
export function principalOfRequest(context: unknown): Principal | undefined {
  return principalOfAuthInfo(
    (context as { http?: { authInfo?: unknown } } | null | undefined)?.http?.authInfo,
  );
}

/**
 * A validated caller (`issuer` and `subject`, from `gateway.httpAuth`) as approvals, sealed
 * sessions and the HTTP front's legacy sessions bind it: the JSON array of both (no separator an
 * issuer could forge), or {@link GATEWAY_SINGLE_PRINCIPAL} without one. Only its SHA-256 digest
 * is sealed.
 */
export function approvalPrincipal(
  caller: { readonly issuer: string; readonly subject: string } | undefined,
): string {
  return caller === undefined
    ? GATEWAY_SINGLE_PRINCIPAL
    : JSON.stringify([caller.issuer, caller.subject]);
}
