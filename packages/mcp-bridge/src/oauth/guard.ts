import type {
  createGuardedDispatcher,
  AllowNonPublic as NetAllowNonPublic,
} from '@toolfence/tools/net';
import { networkGuard } from '../transport/network-guard.js';

/** A `fetch`-shaped function (the WHATWG signature oauth4webapi and undici use). */
export type FetchFunction = (input: string, init: RequestInit) => Promise<Response>;

/**
 * Which non-public addresses an OAuth exchange may reach: the network guard's callback (the same
 * one `McpClient` takes), or `true` to approve every non-public address. Either way `http:` is
 * then allowed to approved loopback hosts only. Default `false`: public HTTPS only.
 */
export type AllowNonPublic = boolean | NetAllowNonPublic;

/** Options of {@link guardedOAuthFetch}. */
export interface GuardedOAuthFetchOptions {
  readonly allowNonPublic: AllowNonPublic;
  readonly maxResponseBytes: number;
  /** TCP and TLS connect limit in milliseconds, enforced by the guarded dispatcher. */
  readonly connectTimeoutMs: number;
  /** Limit of the exchange once connected, in milliseconds. */
  readonly readTimeoutMs: number;
}

/** Maps the OAuth option to the network guard's callback. */
export function netAllowNonPublic(allow: AllowNonPublic): NetAllowNonPublic | undefined {
  if (allow === false) return undefined;
  if (allow === true) return approveAll;
  return allow;
}

const approveAll: NetAllowNonPublic = () => true;

type Dispatcher = ReturnType<typeof createGuardedDispatcher>;

// One guarded dispatcher (connection pool) per policy and connect limit, shared by every OAuth
// call with them.
const publicOnly = new Map<number, Dispatcher>();
const byPolicy = new WeakMap<NetAllowNonPublic, Map<number, Dispatcher>>();

function dispatcherFor(
  allowNonPublic: NetAllowNonPublic | undefined,
  connectTimeoutMs: number,
): Dispatcher {
  let pools = allowNonPublic === undefined ? publicOnly : byPolicy.get(allowNonPublic);
  if (pools === undefined) {
    pools = new Map();
    byPolicy.set(allowNonPublic as NetAllowNonPublic, pools);
  }
  let dispatcher = pools.get(connectTimeoutMs);
  if (dispatcher === undefined) {
    dispatcher = networkGuard().createGuardedDispatcher({
      ...(allowNonPublic === undefined ? {} : { allowNonPublic }),
      connectTimeoutMs,
    });
    pools.set(connectTimeoutMs, dispatcher);
  }
  return dispatcher;
}

/**
 * The network guard for OAuth traffic: pinned, checked addresses, no proxy, identity encoding,
 * no redirects followed, the byte and time limits. `http:` only to approved loopback hosts.
 */
export function guardedOAuthFetch(options: GuardedOAuthFetchOptions): FetchFunction {
  const allowNonPublic = netAllowNonPublic(options.allowNonPublic);
  const connectTimeoutMs = Math.ceil(options.connectTimeoutMs);
  const dispatcher = dispatcherFor(allowNonPublic, connectTimeoutMs);
  const guard = {
    dispatcher,
    allowHttpLoopback: allowNonPublic !== undefined,
    // Like McpClient: any port (authorization servers often listen on 8443); addresses are
    // still checked on every connection.
    allowedPorts: 'any' as const,
    maxResponseBytes: options.maxResponseBytes,
    timeoutMs: connectTimeoutMs + Math.ceil(options.readTimeoutMs),
  };
  const { guardedFetch } = networkGuard();
  return (input, init) =>
    guardedFetch(input, { ...(init as object), redirect: 'manual', guard }) as Promise<Response>;
}

/** Applies the guard's URL rules (scheme, userinfo, port, canonical host, IP literals). */
export function checkOAuthUrl(url: string, allow: AllowNonPublic): URL {
  const allowNonPublic = netAllowNonPublic(allow);
  return networkGuard().checkUrl(url, {
    ...(allowNonPublic === undefined ? {} : { allowNonPublic }),
    allowHttpLoopback: allowNonPublic !== undefined,
    allowedPorts: 'any',
  });
}
