import type { Principal } from '@toolfence/tools';

import { GatewayTokenError } from './token-error.js';

/**
 * Default longest value of a kept claim, in characters (`gateway.httpAuth.principalClaimMaxChars`).
 * A token holding a longer one is refused, never cut.
 */
export const DEFAULT_PRINCIPAL_CLAIM_MAX_CHARS = 256;
/**
 * Default most values of one kept list claim (`gateway.httpAuth.principalClaimMaxValues`). A
 * token holding more is refused, never cut.
 */
export const DEFAULT_PRINCIPAL_CLAIM_MAX_VALUES = 256;

/** The bounds of the claims kept in a principal. */
export interface PrincipalClaimLimits {
  /** Longest value, in characters. */
  readonly maxChars: number;
  /** Most values of one list claim. */
  readonly maxValues: number;
}

const DEFAULT_LIMITS: PrincipalClaimLimits = Object.freeze({
  maxChars: DEFAULT_PRINCIPAL_CLAIM_MAX_CHARS,
  maxValues: DEFAULT_PRINCIPAL_CLAIM_MAX_VALUES,
});

/** The key of `AuthInfo.extra` the HTTP front carries the validated caller under. */
export const AUTH_INFO_PRINCIPAL_KEY = 'toolfencePrincipal';

/**
 * The claim as the principal keeps it: a string, or the strings of a list. A value over the
 * limits refuses the token ({@link GatewayTokenError}, reason `claim-limit`): a principal missing
 * a group would let a deny rule on that group (or a console admin check) see less than the token
 * says. Items that are not strings (numbers, objects) are not kept: a rule's values are strings,
 * so none of them could match one.
 */
function keptValue(
  name: string,
  value: unknown,
  limits: PrincipalClaimLimits,
): string | readonly string[] | undefined {
  const tooLong = () =>
    new GatewayTokenError(
      `The access token's "${name}" claim holds a value over ${limits.maxChars} characters, the longest this gateway keeps (gateway.httpAuth.principalClaimMaxChars): the token is refused rather than cut`,
      'claim-limit',
    );
  if (typeof value === 'string') {
    if (value.length > limits.maxChars) throw tooLong();
    return value;
  }
  if (!Array.isArray(value)) return undefined;
  const strings = value.filter((item): item is string => typeof item === 'string');
  if (strings.length > limits.maxValues) {
    throw new GatewayTokenError(
      `The access token's "${name}" claim holds ${strings.length} values, more than the ${limits.maxValues} this gateway keeps (gateway.httpAuth.principalClaimMaxValues): the token is refused rather than cut`,
      'claim-limit',
    );
  }
  if (strings.some((item) => item.length > limits.maxChars)) throw tooLong();
  return Object.freeze(strings);
}

/**
 * The token's scopes: `scope` (space-separated) or, when it has none, `scp` (a list or a
 * space-separated string). The one reading of a token's scopes: `requiredScopes` checks it, and
 * the principal's `scope` (and `scp`) claim is it, so a rule reads what the check read.
 */
export function scopesOf(payload: Readonly<Record<string, unknown>>): string[] {
  const raw = payload.scope ?? payload.scp;
  if (typeof raw === 'string') return raw.split(' ').filter((scope) => scope !== '');
  if (Array.isArray(raw)) return raw.filter((scope): scope is string => typeof scope === 'string');
  return [];
}

/** The claims read as the token's scopes ({@link scopesOf}) whichever of them the token carries. */
const SCOPE_CLAIMS: readonly string[] = Object.freeze(['scope', 'scp']);

/**
 * The caller as policies, the audit log and traces see it: the token's issuer and subject, and
 * the selected claims (strings or lists of strings). `scope` and `scp`, when selected, are both
 * the token's scopes as {@link scopesOf} reads them (`scope`, else `scp`; as a list), so a rule on
 * either sees what `requiredScopes` checked, whichever claim the issuer used. Never the token.
 * A selected claim over `limits` is never cut: it throws {@link GatewayTokenError} (the request
 * is answered 401), so a rule or an admin check never reads part of a claim as the whole.
 */
export function principalFromClaims(
  issuer: string,
  subject: string,
  payload: Readonly<Record<string, unknown>>,
  selected: readonly string[],
  limits: PrincipalClaimLimits = DEFAULT_LIMITS,
): Principal {
  const claims: Record<string, string | readonly string[]> = {};
  const scoped = SCOPE_CLAIMS.some((name) => Object.hasOwn(payload, name));
  for (const name of selected) {
    const scope = SCOPE_CLAIMS.includes(name);
    if (scope ? !scoped : !Object.hasOwn(payload, name)) continue;
    const kept = keptValue(name, scope ? scopesOf(payload) : payload[name], limits);
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
