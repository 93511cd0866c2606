import type { ConnectionRecord } from '../store/connection-store.js';

/** The parameters of one `WWW-Authenticate: Bearer` challenge (RFC 6750 §3, RFC 9728 §5.1). */
export interface BearerChallenge {
  /** `error`, e.g. `invalid_token` or `insufficient_scope`. */
  readonly error?: string;
  /** Space-separated `scope` the resource requires. */
  readonly scope?: string;
  /** RFC 9728 `resource_metadata` URL. */
  readonly resourceMetadata?: string;
  /** `realm`, if given. */
  readonly realm?: string;
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+/;
const MAX_HEADER_LENGTH = 8192;

/**
 * Parses a `WWW-Authenticate` header value and returns the first `Bearer` challenge, or
 * `undefined` when there is none or the header is malformed. Other schemes are skipped.
 */
export function parseBearerChallenge(
  header: string | null | undefined,
): BearerChallenge | undefined {
  const challenge = parseChallenges(header, ['bearer']);
  if (challenge === undefined) return undefined;
  const { scheme: _scheme, ...bearer } = challenge;
  return bearer;
}

/**
 * The first `Bearer` challenge, else the first `DPoP` one (RFC 9449 §7.1), with its scheme
 * (lower case); `undefined` when there is neither or the header is malformed.
 */
export function parseAuthChallenge(
  header: string | null | undefined,
): (BearerChallenge & { readonly scheme: 'bearer' | 'dpop' }) | undefined {
  return parseChallenges(header, ['bearer', 'dpop']) as
    | (BearerChallenge & { readonly scheme: 'bearer' | 'dpop' })
    | undefined;
}

function parseChallenges(
  header: string | null | undefined,
  schemes: readonly string[],
): (BearerChallenge & { readonly scheme: string }) | undefined {
  if (typeof header !== 'string' || header.length > MAX_HEADER_LENGTH) return undefined;
  const challenges: { scheme: string; params: Map<string, string> }[] = [];
  let rest = header;
  let current: { scheme: string; params: Map<string, string> } | undefined;
  const skip = (): void => {
    rest = rest.replace(/^[\s,]+/, '');
  };
  skip();
  while (rest.length > 0) {
    const token = TOKEN.exec(rest)?.[0];
    if (token === undefined) return undefined;
    const after = rest.slice(token.length);
    const param = /^\s*=\s*/.exec(after);
    if (param !== null && current !== undefined && !/^\s*=\s*(?:[,\s]|$)/.test(after)) {
      rest = after.slice(param[0].length);
      let value: string;
      if (rest.startsWith('"')) {
        let index = 1;
        value = '';
        for (;;) {
          const char = rest[index];
          if (char === undefined) return undefined;
          if (char === '\\') {
            const next = rest[index + 1];
            if (next === undefined) return undefined;
            value += next;
            index += 2;
            continue;
          }
          if (char === '"') break;
          value += char;
          index += 1;
        }
        rest = rest.slice(index + 1);
      } else {
        const bare = TOKEN.exec(rest)?.[0];
        if (bare === undefined) return undefined;
        value = bare;
        rest = rest.slice(bare.length);
      }
      const name = token.toLowerCase();
      if (!current.params.has(name)) current.params.set(name, value);
    } else {
      // A new challenge: scheme, optionally followed by a token68 we ignore.
      current = { scheme: token.toLowerCase(), params: new Map() };
      challenges.push(current);
      rest = after;
      const token68 = /^\s+([A-Za-z0-9._~+/-]+=*)\s*(?:,|$)/.exec(rest);
      if (token68 !== null && !/^\s+[!#$%&'*+.^_`|~0-9A-Za-z-]+\s*=[^=]/.test(rest)) {
        rest = rest.slice(token68[0].length);
      }
    }
    skip();
  }
  let bearer: { scheme: string; params: Map<string, string> } | undefined;
  for (const scheme of schemes) {
    bearer ??= challenges.find((challenge) => challenge.scheme === scheme);
  }
  if (bearer === undefined) return undefined;
  const result: { -readonly [K in keyof BearerChallenge]: BearerChallenge[K] } & {
    scheme: string;
  } = { scheme: bearer.scheme };
  const error = bearer.params.get('error');
  const scope = bearer.params.get('scope');
  const resourceMetadata = bearer.params.get('resource_metadata');
  const realm = bearer.params.get('realm');
  if (error !== undefined) result.error = error;
  if (scope !== undefined) result.scope = scope;
  if (resourceMetadata !== undefined) result.resourceMetadata = resourceMetadata;
  if (realm !== undefined) result.realm = realm;
  return result;
}

/** Splits a space-separated scope string into unique scope tokens. */
export function scopeList(scope: string | undefined): string[] {
  if (scope === undefined) return [];
  return [...new Set(scope.split(' ').filter((item) => item.length > 0))];
}

/** Joins scope lists into one space-separated string (order kept, duplicates dropped). */
export function joinScopes(...scopes: (string | undefined)[]): string | undefined {
  const all = [...new Set(scopes.flatMap((scope) => scopeList(scope)))];
  return all.length === 0 ? undefined : all.join(' ');
}

/** Union of the stored scope and a challenged one (for step-up). */
export function widenScope(
  record: ConnectionRecord | undefined,
  scope: string | undefined,
): string | undefined {
  return joinScopes(record?.scope, record?.pending?.scope, scope);
}
