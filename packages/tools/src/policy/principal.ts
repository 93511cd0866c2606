import { ConfigurationError } from '../registry/configuration-error.js';
import { checkOptionKeys } from '../registry/option-keys.js';
import type { ToolContext } from '../registry/tool.js';

/**
 * The caller of a call, as a gateway validated it (an OAuth access token's issuer, subject and
 * selected claims). Log-safe: it never holds the token. A host passes it in the call's
 * `ToolContext.metadata` under {@link PRINCIPAL_METADATA_KEY}; whoever builds the context is
 * trusted to have validated it.
 */
export interface Principal {
  /** The token's exact `iss`. */
  readonly issuer: string;
  /** The token's `sub`. */
  readonly subject: string;
  /** Selected claims (for example `groups`, `roles`, `scope` split into a list): strings or lists of strings. */
  readonly claims: Readonly<Record<string, string | readonly string[]>>;
}

/** The `ToolContext.metadata` key that carries the call's {@link Principal}. */
export const PRINCIPAL_METADATA_KEY = 'principal';

/** The keys a {@link PrincipalMatcher} may have. */
export const PRINCIPAL_MATCHER_KEYS: readonly string[] = Object.freeze([
  'subject',
  'issuer',
  'claims',
]);

/**
 * Who a policy rule applies to. Every given condition must hold; a call without a principal
 * never matches. `subject` and `issuer` compare exactly with one of the values; each entry of
 * `claims` holds when the caller's claim (a string, or a list of strings) contains one of the
 * values (for example `{ "claims": { "groups": "engineering" } }`).
 */
export interface PrincipalMatcher {
  /** The caller's `sub` must be this value or one of these values. */
  readonly subject?: string | readonly string[];
  /** The caller's issuer must be this value or one of these values (exact). */
  readonly issuer?: string | readonly string[];
  /** Each named claim of the caller must contain this value or one of these values. */
  readonly claims?: Readonly<Record<string, string | readonly string[]>>;
}

function isStringRecordValue(value: unknown): value is string | readonly string[] {
  return (
    typeof value === 'string' ||
    (Array.isArray(value) && value.every((item) => typeof item === 'string'))
  );
}

/** The call's principal from `context.metadata.principal`, or undefined when it has none (or a malformed one). */
export function principalOf(context: ToolContext | undefined): Principal | undefined {
  const value = (context?.metadata as Record<string, unknown> | undefined)?.[
    PRINCIPAL_METADATA_KEY
  ];
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const { issuer, subject, claims } = value as Record<string, unknown>;
  if (typeof issuer !== 'string' || typeof subject !== 'string') return undefined;
  const checked: Record<string, string | readonly string[]> = {};
  if (typeof claims === 'object' && claims !== null && !Array.isArray(claims)) {
    for (const [name, claim] of Object.entries(claims)) {
      if (isStringRecordValue(claim)) checked[name] = claim;
    }
  }
  return { issuer, subject, claims: checked };
}

function valueList(value: unknown, at: string): readonly string[] {
  const list: readonly unknown[] = Array.isArray(value) ? value : [value];
  if (list.length === 0 || list.some((item) => typeof item !== 'string' || item === '')) {
    throw new ConfigurationError(`${at} must be a non-empty string or a non-empty list of them`, {
      details: { option: at },
    });
  }
  return list as readonly string[];
}

/**
 * Compiles a {@link PrincipalMatcher} (checked: unknown keys and empty values refused with
 * {@link ConfigurationError}) into a test of a call's principal.
 */
export function compilePrincipalMatcher(
  matcher: unknown,
  at: string,
): (principal: Principal | undefined) => boolean {
  if (typeof matcher !== 'object' || matcher === null || Array.isArray(matcher)) {
    throw new ConfigurationError(`${at} must be an object`, { details: { option: at } });
  }
  checkOptionKeys(
    matcher,
    PRINCIPAL_MATCHER_KEYS,
    at,
    (message, key) => new ConfigurationError(message, { details: { option: `${at}.${key}` } }),
  );
  const given = matcher as PrincipalMatcher;
  if (given.subject === undefined && given.issuer === undefined && given.claims === undefined) {
    throw new ConfigurationError(`${at} must give subject, issuer or claims`, {
      details: { option: at },
    });
  }
  const subjects =
    given.subject === undefined ? undefined : valueList(given.subject, `${at}.subject`);
  const issuers = given.issuer === undefined ? undefined : valueList(given.issuer, `${at}.issuer`);
  const claims: [string, readonly string[]][] = [];
  if (given.claims !== undefined) {
    if (typeof given.claims !== 'object' || given.claims === null || Array.isArray(given.claims)) {
      throw new ConfigurationError(`${at}.claims must be an object of claim names`, {
        details: { option: `${at}.claims` },
      });
    }
    const entries = Object.entries(given.claims);
    if (entries.length === 0) {
      throw new ConfigurationError(`${at}.claims must name at least one claim`, {
        details: { option: `${at}.claims` },
      });
    }
    for (const [name, values] of entries) {
      claims.push([name, valueList(values, `${at}.claims.${name}`)]);
    }
  }
  return (principal) => {
    if (principal === undefined) return false;
    if (subjects !== undefined && !subjects.includes(principal.subject)) return false;
    if (issuers !== undefined && !issuers.includes(principal.issuer)) return false;
    for (const [name, values] of claims) {
      if (!Object.hasOwn(principal.claims, name)) return false;
      const held = principal.claims[name];
      const list: readonly string[] = typeof held === 'string' ? [held] : (held ?? []);
      if (!values.some((value) => list.includes(value))) return false;
    }
    return true;
  };
}
