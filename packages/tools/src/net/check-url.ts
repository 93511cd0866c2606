import {
  classifyAddress,
  DOTTED_QUAD,
  isLoopbackAddress,
  parseAddressBytes,
} from './classify-address.js';
import { NetworkOptionsError } from './network-options-error.js';
import { NetworkPolicyError } from './network-policy-error.js';

/** The origin a connection goes to, as given (frozen) to {@link AllowNonPublic}. */
export interface NetworkTarget {
  /** `https:` or `http:`. */
  readonly protocol: string;
  /** Lowercase ASCII host name, or the IP literal without brackets. */
  readonly hostname: string;
  readonly port: number;
}

/** An address the classifier refused, as given (frozen) to {@link AllowNonPublic}. */
export interface NonPublicAddress {
  /** The address as resolved (or as written in the URL), canonical form. */
  readonly address: string;
  readonly family: 4 | 6;
  /** The matching table entry (for example `loopback`, `private-use`). */
  readonly range: string;
  /** For IPv4-mapped / NAT64 addresses, the embedded IPv4. */
  readonly embedded?: string;
}

/**
 * Consulted only for addresses the classifier refuses. Return exactly `true` to allow a
 * connection to that address; anything else (or a throw) keeps it refused. It receives frozen
 * copies, so it cannot change what the guard checks.
 */
export type AllowNonPublic = (target: NetworkTarget, address: NonPublicAddress) => boolean;

/** Rules for URLs, shared by {@link checkUrl}, `guardedFetch` and `HttpTool`. */
export interface UrlPolicy {
  /**
   * Allow `http:` to a loopback host (`127.0.0.0/8`, `[::1]`, `localhost`) the host approves
   * through `allowNonPublic`; any port. Default `false` (HTTPS only).
   */
  readonly allowHttpLoopback?: boolean;
  /** Ports allowed for `https:` (an absent port means 443). Default `[443]`; `'any'` allows 1-65535. */
  readonly allowedPorts?: readonly number[] | 'any';
  /** Approves otherwise refused addresses. Default: none approved. */
  readonly allowNonPublic?: AllowNonPublic;
}

/** Longest URL accepted, in characters. */
export const MAX_URL_LENGTH = 8192;

/** Validates a {@link UrlPolicy}; throws {@link NetworkOptionsError}. */
export function validateUrlPolicy(policy: UrlPolicy): void {
  if (typeof policy !== 'object' || policy === null) {
    throw new NetworkOptionsError('The URL policy must be an object.');
  }
  const { allowHttpLoopback, allowedPorts, allowNonPublic } = policy;
  if (allowHttpLoopback !== undefined && typeof allowHttpLoopback !== 'boolean') {
    throw new NetworkOptionsError('allowHttpLoopback must be a boolean.');
  }
  if (allowNonPublic !== undefined && typeof allowNonPublic !== 'function') {
    throw new NetworkOptionsError('allowNonPublic must be a function.');
  }
  if (allowedPorts !== undefined && allowedPorts !== 'any') {
    if (
      !Array.isArray(allowedPorts) ||
      allowedPorts.some(
        (port) => typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535,
      )
    ) {
      throw new NetworkOptionsError(
        "allowedPorts must be 'any' or an array of integers from 1 to 65535.",
      );
    }
  }
}

const HOST_LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;

/** The host exactly as written between `//` and the path (userinfo and port removed), lowercased. */
function rawHost(text: string): { host: string; hadAt: boolean } | undefined {
  const match = /^[a-zA-Z][a-zA-Z0-9+.-]*:[/\\]{2}([^/?#\\]*)/.exec(text.trim());
  if (match === null) return undefined;
  let authority = match[1] ?? '';
  const at = authority.lastIndexOf('@');
  const hadAt = at !== -1;
  if (hadAt) authority = authority.slice(at + 1);
  if (authority.startsWith('[')) {
    return { host: authority.slice(0, authority.indexOf(']') + 1).toLowerCase(), hadAt };
  }
  const colon = authority.indexOf(':');
  return { host: (colon === -1 ? authority : authority.slice(0, colon)).toLowerCase(), hadAt };
}

function deny(message: string, reason: ConstructorParameters<typeof NetworkPolicyError>[1]): never {
  throw new NetworkPolicyError(message, reason);
}

/**
 * Asks the host whether a refused address may be used. Fail closed: only a literal `true`
 * return approves; a throw refuses.
 */
export function approveNonPublic(
  policy: { readonly allowNonPublic?: AllowNonPublic | undefined },
  target: NetworkTarget,
  address: NonPublicAddress,
): boolean {
  return askAllowNonPublic(
    policy.allowNonPublic,
    Object.freeze({ ...target }),
    Object.freeze({ ...address }),
  );
}

/** {@link approveNonPublic} with arguments that are frozen already (shared across calls). */
function askAllowNonPublic(
  callback: AllowNonPublic | undefined,
  target: NetworkTarget,
  address: NonPublicAddress,
): boolean {
  if (callback === undefined) return false;
  try {
    return callback(target, address) === true;
  } catch {
    return false;
  }
}

/** A canonical, unbracketed host name; `undefined` when it is not an IP literal. */
export function literalFamily(hostname: string): 4 | 6 | undefined {
  const bytes = parseAddressBytes(hostname);
  if (bytes === undefined || bytes === 'zone-id') return undefined;
  return bytes.length === 4 ? 4 : 6;
}

/**
 * Checks a URL against the network rules and returns a fresh, canonical `URL`:
 * absolute `https:` only (or `http:` to an approved loopback host with `allowHttpLoopback`),
 * no userinfo (not even an empty `@`), an allowed port, a canonical host name (lowercase ASCII
 * after IDNA, no trailing dot, no empty or over-long labels, no single-label name except
 * `localhost`), IPv4 literals only in dotted-decimal form, and IP literals judged by
 * {@link classifyAddress} (refused ones only if `allowNonPublic` approves them).
 *
 * Throws {@link NetworkPolicyError}; never a `TypeError`.
 */
export function checkUrl(url: string | URL, policy: UrlPolicy = {}): URL {
  validateUrlPolicy(policy);
  return checkUrlWithValidPolicy(url, policy);
}

/** {@link checkUrl} for a policy the caller already validated (internal hot path). */
export function checkUrlWithValidPolicy(url: string | URL, policy: UrlPolicy): URL {
  return new URL(checkedUrl(url, policy).href);
}

/** What a URL's text alone says (no policy): cached per text, since callers repeat URLs. */
export interface UrlFacts {
  /** The canonical URL (`new URL(text).href`). */
  readonly href: string;
  readonly protocol: 'https:' | 'http:';
  /** Lowercase host name, or the IP literal without brackets. */
  readonly hostname: string;
  readonly port: number;
  /** 4 or 6 for an IP literal, else undefined. */
  readonly family: 4 | 6 | undefined;
  /** `http:` to `localhost` or a loopback IP literal. */
  readonly loopbackHost: boolean;
  /**
   * For an IP literal the classifier refuses: the frozen target and address given to
   * `allowNonPublic` (the classification depends on the text alone; the approval is asked on
   * every call). `undefined` for host names and for public literals.
   */
  readonly refused: NonPublicRequest | undefined;
}

/** The frozen arguments of one `allowNonPublic` question. */
export interface NonPublicRequest {
  readonly target: NetworkTarget;
  readonly address: NonPublicAddress;
}

/** Most URL texts whose facts are kept (least recently used first out). */
const MAX_CACHED_URLS = 256;
const factsByText = new Map<string, UrlFacts>();

/**
 * {@link checkUrl}'s rules for a validated policy, returning the URL's facts (the canonical
 * `href` among them) instead of a new `URL`. The policy-free part (parsing, userinfo, host
 * syntax, port syntax) is cached per URL text; the policy (scheme, ports, address approval,
 * which calls `allowNonPublic`) is judged on every call.
 */
export function checkedUrl(url: string | URL, policy: UrlPolicy): UrlFacts {
  const text = url instanceof URL ? url.href : url;
  if (typeof text !== 'string' || text.length === 0 || text.length > MAX_URL_LENGTH) {
    deny('The URL is missing or too long.', 'invalid-url');
  }
  let facts = factsByText.get(text);
  if (facts === undefined) {
    facts = urlFacts(text);
    // URLs with a query or fragment (which may carry tokens) are never kept.
    if (!facts.href.includes('?') && !facts.href.includes('#')) {
      if (factsByText.size >= MAX_CACHED_URLS) {
        factsByText.delete(factsByText.keys().next().value as string);
      }
      factsByText.set(text, facts);
    }
  }
  judgeUrl(facts, policy);
  return facts;
}

/** The policy-free checks of a URL text; throws {@link NetworkPolicyError}. */
function urlFacts(text: string): UrlFacts {
  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    deny('The URL is not an absolute URL.', 'invalid-url');
  }
  const protocol = parsed.protocol;
  if (protocol !== 'https:' && protocol !== 'http:') {
    deny('Only https URLs are allowed.', 'scheme');
  }
  const raw = rawHost(text);
  if (raw === undefined) deny('The URL has no authority.', 'invalid-url');
  if (raw.hadAt || parsed.username !== '' || parsed.password !== '') {
    deny('URLs with credentials (userinfo) are refused.', 'userinfo');
  }
  let hostname = parsed.hostname;
  if (hostname.length === 0) deny('The URL has no host.', 'hostname');
  const bracketed = hostname.startsWith('[');
  if (bracketed) hostname = hostname.slice(1, -1);
  const family = bracketed ? 6 : DOTTED_QUAD.test(hostname) ? 4 : undefined;
  if (family === 4 && raw.host !== hostname) {
    deny('IPv4 addresses must be written in dotted-decimal form.', 'hostname');
  }
  if (family === undefined) {
    if (hostname.length > 253 || hostname.endsWith('.')) {
      deny('The host name is not canonical.', 'hostname');
    }
    const labels = hostname.split('.');
    if (labels.some((label) => !HOST_LABEL.test(label))) {
      deny('The host name is not a canonical DNS name.', 'hostname');
    }
    if (labels.length === 1 && hostname !== 'localhost') {
      deny('Single-label host names are refused.', 'hostname');
    }
  }
  const defaultPort = protocol === 'https:' ? 443 : 80;
  const port = parsed.port === '' ? defaultPort : Number(parsed.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) deny('The port is invalid.', 'port');
  const loopbackHost =
    protocol === 'http:' &&
    (hostname === 'localhost' || (family !== undefined && isLoopbackAddress(hostname)));
  let refused: NonPublicRequest | undefined;
  if (family !== undefined) {
    const verdict = classifyAddress(hostname);
    if (!verdict.allowed) {
      refused = Object.freeze({
        target: Object.freeze({ protocol, hostname, port }),
        address: Object.freeze({
          address: hostname,
          family,
          range: verdict.range ?? 'invalid',
          ...(verdict.embedded === undefined ? {} : { embedded: verdict.embedded }),
        }),
      });
    }
  }
  return Object.freeze({
    href: parsed.href,
    protocol,
    hostname,
    port,
    family,
    loopbackHost,
    refused,
  });
}

const HTTPS_PORT_ONLY: readonly number[] = Object.freeze([443]);

/** The policy's checks of a URL's facts; throws {@link NetworkPolicyError}. */
function judgeUrl(facts: UrlFacts, policy: UrlPolicy): void {
  const { protocol, port } = facts;
  if (protocol === 'http:') {
    if (policy.allowHttpLoopback !== true || !facts.loopbackHost) {
      deny('Only https URLs are allowed.', 'scheme');
    }
  } else {
    const allowedPorts = policy.allowedPorts ?? HTTPS_PORT_ONLY;
    if (allowedPorts !== 'any' && !allowedPorts.includes(port)) {
      deny('The port is not allowed.', 'port');
    }
  }
  const refused = facts.refused;
  if (
    refused !== undefined &&
    !askAllowNonPublic(policy.allowNonPublic, refused.target, refused.address)
  ) {
    deny('The address is not publicly routable.', 'address');
  }
  // `http://localhost` is resolved and checked (loopback and approved) when connecting.
}
