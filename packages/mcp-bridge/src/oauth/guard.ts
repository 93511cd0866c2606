import {
  checkUrl,
  createGuardedFetch,
  type AllowNonPublic as NetAllowNonPublic,
} from '@toolfence/tools/net';
import type { AllowNonPublic, FetchFunction } from './http.js';

/** Options of {@link guardedOAuthFetch}. */
export interface GuardedOAuthFetchOptions {
  readonly allowNonPublic: AllowNonPublic;
  readonly maxResponseBytes: number;
  readonly timeoutSeconds: number;
}

/** Maps the OAuth option to the network guard's callback. */
export function netAllowNonPublic(allow: AllowNonPublic): NetAllowNonPublic | undefined {
  if (allow === false) return undefined;
  if (allow === true) return () => true;
  return allow;
}

/**
 * The network guard for OAuth traffic: pinned, checked addresses, no proxy, identity encoding,
 * no redirects followed, the byte and time limits. `http:` only to approved loopback hosts.
 */
export function guardedOAuthFetch(options: GuardedOAuthFetchOptions): FetchFunction {
  const allowNonPublic = netAllowNonPublic(options.allowNonPublic);
  const fetch = createGuardedFetch({
    ...(allowNonPublic === undefined ? {} : { allowNonPublic }),
    allowHttpLoopback: allowNonPublic !== undefined,
    maxResponseBytes: options.maxResponseBytes,
    timeoutMs: Math.ceil(options.timeoutSeconds * 1000),
  });
  return (input, init) =>
    fetch(input, { ...(init as object), redirect: 'manual' }) as Promise<Response>;
}

/** Applies the guard's URL rules (scheme, userinfo, port, canonical host, IP literals). */
export function checkOAuthUrl(url: string, allow: AllowNonPublic): URL {
  const allowNonPublic = netAllowNonPublic(allow);
  return checkUrl(url, {
    ...(allowNonPublic === undefined ? {} : { allowNonPublic }),
    allowHttpLoopback: allowNonPublic !== undefined,
  });
}
