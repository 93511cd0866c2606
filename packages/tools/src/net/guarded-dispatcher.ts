import { lookup } from 'node:dns/promises';
import type { Socket } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Agent, buildConnector, Dispatcher } from 'undici';
import { lazyRequire } from '../internal/lazy-require.js';
import {
  type AllowNonPublic,
  approveNonPublic,
  type NetworkTarget,
  type NonPublicAddress,
} from './check-url.js';
import { classifyAddress, isLoopbackAddress, parseAddressBytes } from './classify-address.js';
import { NetworkOptionsError } from './network-options-error.js';
import { NetworkPolicyError } from './network-policy-error.js';
import { NetworkResolutionError } from './network-resolution-error.js';

/** undici (CommonJS, tens of milliseconds to load), required on the first request. */
const undici = lazyRequire<typeof import('undici')>('undici');

/** One DNS answer. */
export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Resolves a host name to all its A and AAAA answers (default: `dns.lookup` with `all`). */
export type Resolver = (hostname: string) => Promise<readonly ResolvedAddress[]>;

/** Options of {@link createGuardedDispatcher}. */
export interface GuardedDispatcherOptions {
  /** Approves otherwise refused addresses (given frozen copies). Default: none approved. */
  readonly allowNonPublic?: AllowNonPublic;
  /** Time limit for one TCP (and TLS) connection attempt, in milliseconds. Default 10,000. */
  readonly connectTimeoutMs?: number;
  /** Replaces DNS resolution (tests simulate answers with it). Default: `dns.lookup(all)`. */
  readonly resolver?: Resolver;
  /** Extra trusted CA certificates (PEM), for private PKI and tests. Default: Node's store. */
  readonly ca?: string | readonly string[];
  /** Most DNS answers considered for one connection. Default 32. */
  readonly maxAddresses?: number;
}

/** Default connect timeout of a guarded dispatcher. */
export const DEFAULT_CONNECT_TIMEOUT_MS = 10_000;

interface DispatcherFacts {
  readonly allowNonPublic: AllowNonPublic | undefined;
}

const guardedDispatchers = new WeakMap<Dispatcher, DispatcherFacts>();

/** The facts of a dispatcher made by {@link createGuardedDispatcher}, else `undefined`. */
export function guardedDispatcherFacts(dispatcher: unknown): DispatcherFacts | undefined {
  return typeof dispatcher === 'object' && dispatcher !== null
    ? guardedDispatchers.get(dispatcher as Dispatcher)
    : undefined;
}

/** True for a dispatcher made by {@link createGuardedDispatcher}. */
export function isGuardedDispatcher(dispatcher: unknown): boolean {
  return guardedDispatcherFacts(dispatcher) !== undefined;
}

const RETRYABLE_CONNECT_CODES = new Set([
  'ECONNREFUSED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'EADDRNOTAVAIL',
  'ECONNRESET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

const DNS_NAME = /^[a-z0-9_](?:[a-z0-9_.-]{0,251}[a-z0-9_])?$/;

async function defaultResolver(hostname: string): Promise<readonly ResolvedAddress[]> {
  const answers = await lookup(hostname, { all: true, verbatim: true });
  return answers.map((answer) => ({ address: answer.address, family: answer.family as 4 | 6 }));
}

function canonical(bytes: readonly number[]): string {
  return ipaddr.fromByteArray([...bytes]).toString();
}

function validateOptions(options: GuardedDispatcherOptions): void {
  if (typeof options !== 'object' || options === null) {
    throw new NetworkOptionsError('Guarded dispatcher options must be an object.');
  }
  const { allowNonPublic, connectTimeoutMs, resolver, ca, maxAddresses } = options;
  if (allowNonPublic !== undefined && typeof allowNonPublic !== 'function') {
    throw new NetworkOptionsError('allowNonPublic must be a function.');
  }
  if (resolver !== undefined && typeof resolver !== 'function') {
    throw new NetworkOptionsError('resolver must be a function.');
  }
  if (
    connectTimeoutMs !== undefined &&
    (typeof connectTimeoutMs !== 'number' ||
      !Number.isInteger(connectTimeoutMs) ||
      connectTimeoutMs < 1)
  ) {
    throw new NetworkOptionsError('connectTimeoutMs must be a positive integer.');
  }
  if (
    maxAddresses !== undefined &&
    (typeof maxAddresses !== 'number' || !Number.isInteger(maxAddresses) || maxAddresses < 1)
  ) {
    throw new NetworkOptionsError('maxAddresses must be a positive integer.');
  }
  if (
    ca !== undefined &&
    typeof ca !== 'string' &&
    !(Array.isArray(ca) && ca.every((item) => typeof item === 'string'))
  ) {
    throw new NetworkOptionsError('ca must be a PEM string or an array of PEM strings.');
  }
}

/**
 * Decides which addresses a connection may use: every answer is classified, one refused and
 * unapproved answer refuses the whole set, `http:` needs every answer to be an approved
 * loopback address. Exported for tests and for callers that dial sockets themselves.
 */
export function approveAddresses(
  target: NetworkTarget,
  answers: readonly ResolvedAddress[],
  allowNonPublic: AllowNonPublic | undefined,
): readonly string[] {
  if (answers.length === 0) {
    throw new NetworkPolicyError('The host name did not resolve to any address.', 'resolution');
  }
  const approved: string[] = [];
  for (const answer of answers) {
    const bytes =
      typeof answer === 'object' && answer !== null ? parseAddressBytes(answer.address) : undefined;
    if (bytes === undefined || bytes === 'zone-id') {
      throw new NetworkPolicyError('The resolver returned an unusable address.', 'resolution');
    }
    const address = canonical(bytes);
    const verdict = classifyAddress(address);
    if (!verdict.allowed) {
      const facts: NonPublicAddress = {
        address,
        family: bytes.length === 4 ? 4 : 6,
        range: verdict.range ?? 'invalid',
        ...(verdict.embedded === undefined ? {} : { embedded: verdict.embedded }),
      };
      if (!approveNonPublic({ allowNonPublic }, target, facts)) {
        throw new NetworkPolicyError(
          'The host resolves to an address that is not public.',
          'address',
          {
            details: { range: facts.range },
          },
        );
      }
    }
    if (!approved.includes(address)) approved.push(address);
  }
  if (target.protocol === 'http:' && !approved.every(isLoopbackAddress)) {
    throw new NetworkPolicyError(
      'Plain http is allowed only to approved loopback addresses.',
      'scheme',
    );
  }
  return approved;
}

function connectOnce(
  base: buildConnector.connector,
  options: buildConnector.Options,
): Promise<Socket> {
  return new Promise((resolve, reject) => {
    base(options, (error, socket) => {
      if (error !== null) reject(error);
      else resolve(socket);
    });
  });
}

/**
 * Creates an undici 7 `Agent` whose connect step enforces the network rules for every new
 * connection: it resolves the host name (or takes the IP literal), checks every A and AAAA
 * answer with `classifyAddress` (one refused, unapproved answer refuses them all; an empty or
 * failed lookup fails closed with `NetworkResolutionError`, `NET_DNS_FAILED`), connects to a checked address while TLS SNI, the certificate
 * check and `Host` keep the host name, and tries the next checked address only when the
 * connection itself failed (before any request byte was sent). Pooled connections were checked
 * when they were opened; each new one resolves and checks again.
 *
 * Use it as `dispatcher` with `undici.fetch`/`undici.request`, or through `guardedFetch`.
 */
export function createGuardedDispatcher(options: GuardedDispatcherOptions = {}): Agent {
  validateOptions(options);
  const allowNonPublic = options.allowNonPublic;
  const resolver = options.resolver ?? defaultResolver;
  const maxAddresses = options.maxAddresses ?? 32;
  const base = undici().buildConnector({
    timeout: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
    ...(options.ca === undefined ? {} : { ca: [options.ca].flat() as string[] }),
  });

  async function guardedConnect(connectOptions: buildConnector.Options): Promise<Socket> {
    const protocol = connectOptions.protocol;
    if (protocol !== 'https:' && protocol !== 'http:') {
      throw new NetworkPolicyError(
        'Only https and loopback http connections are allowed.',
        'scheme',
      );
    }
    if (connectOptions.socketPath !== undefined && connectOptions.socketPath !== null) {
      throw new NetworkPolicyError('Unix socket connections are refused.', 'address');
    }
    let hostname = String(connectOptions.hostname ?? '').toLowerCase();
    if (hostname.startsWith('[') && hostname.endsWith(']')) hostname = hostname.slice(1, -1);
    const port = Number(connectOptions.port || (protocol === 'https:' ? 443 : 80));
    if (!Number.isInteger(port) || port < 1 || port > 65535) {
      throw new NetworkPolicyError('The port is invalid.', 'port');
    }
    const target: NetworkTarget = { protocol, hostname, port };
    const literal = parseAddressBytes(hostname);
    if (literal === 'zone-id') {
      throw new NetworkPolicyError('Scoped (zone id) addresses are refused.', 'address');
    }
    let answers: readonly ResolvedAddress[];
    if (literal !== undefined) {
      answers = [{ address: hostname, family: literal.length === 4 ? 4 : 6 }];
    } else {
      if (!DNS_NAME.test(hostname) || hostname.includes('..')) {
        throw new NetworkPolicyError('The host name is not a canonical DNS name.', 'hostname');
      }
      try {
        answers = await resolver(hostname);
      } catch (error) {
        // A failed lookup is not a policy decision: its own code, naming the host.
        throw new NetworkResolutionError(hostname, (error as { code?: unknown } | null)?.code, {
          cause: error,
        });
      }
      if (!Array.isArray(answers)) {
        throw new NetworkPolicyError('The resolver returned no answer list.', 'resolution');
      }
      if (answers.length === 0) throw new NetworkResolutionError(hostname, undefined);
      answers = answers.slice(0, maxAddresses);
    }
    const addresses = approveAddresses(target, answers, allowNonPublic);
    let lastError: unknown;
    for (const address of addresses) {
      try {
        return await connectOnce(base, {
          ...connectOptions,
          hostname: address,
          servername: literal === undefined ? hostname : (connectOptions.servername ?? ''),
        });
      } catch (error) {
        lastError = error;
        const code = (error as { code?: unknown } | null)?.code;
        if (typeof code !== 'string' || !RETRYABLE_CONNECT_CODES.has(code)) throw error;
      }
    }
    throw lastError;
  }

  const connect: buildConnector.connector = (connectOptions, callback) => {
    guardedConnect(connectOptions).then(
      (socket) => callback(null, socket),
      (error: unknown) => callback(error instanceof Error ? error : new Error(String(error)), null),
    );
  };
  const agent = new (undici().Agent)({ connect });
  guardedDispatchers.set(agent, Object.freeze({ allowNonPublic }));
  return agent;
}
