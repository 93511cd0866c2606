/**
 * `@toolfence/tools/net`: the network guard shared by `HttpTool` and `@toolfence/mcp-bridge`.
 *
 * - `classifyAddress(address)` judges an IPv4/IPv6 literal against our dated snapshot of the
 *   IANA special-purpose registries (`ADDRESS_TABLE_DATE`): `{ allowed, range?, embedded? }`.
 * - `checkUrl(url, policy)` checks scheme (https; http only to approved loopback), userinfo,
 *   port, host-name canonical form and IP literals; returns a fresh canonical `URL`.
 * - `createGuardedDispatcher(options)` is an undici `Agent` that resolves, checks every answer,
 *   pins a checked address (SNI, certificate and `Host` keep the name) on every new connection.
 * - `guardedFetch(input, init)` / `createGuardedFetch(options)`: fetch through the guard with
 *   byte, time and redirect limits.
 * - Refusals throw `NetworkPolicyError` (`NET_POLICY_DENIED`, never a `TypeError`); a failed
 *   DNS lookup `NetworkResolutionError` (`NET_DNS_FAILED`, naming the host); exceeded
 *   limits `NetworkLimitError` (`NET_LIMIT_EXCEEDED`); bad options `NetworkOptionsError`
 *   (`NET_INVALID_OPTIONS`).
 */

// Address classification
export {
  ADDRESS_TABLE_DATE,
  type AddressTableAction,
  type AddressTableEntry,
  IPV4_ADDRESS_TABLE,
  IPV6_ADDRESS_TABLE,
} from './address-table.js';
// URL rules
export {
  type AllowNonPublic,
  checkUrl,
  MAX_URL_LENGTH,
  type NetworkTarget,
  type NonPublicAddress,
  type UrlPolicy,
} from './check-url.js';
export {
  type AddressClassification,
  classifyAddress,
  isLoopbackAddress,
} from './classify-address.js';
// Guarded undici dispatcher
export {
  createGuardedDispatcher,
  DEFAULT_CONNECT_TIMEOUT_MS,
  type GuardedDispatcherOptions,
  isGuardedDispatcher,
  type ResolvedAddress,
  type Resolver,
} from './guarded-dispatcher.js';
// Guarded fetch
export {
  type CreateGuardedFetchOptions,
  createGuardedFetch,
  DEFAULT_FETCH_TIMEOUT_MS,
  DEFAULT_MAX_REDIRECTS,
  DEFAULT_MAX_RESPONSE_BYTES,
  type GuardedFetch,
  type GuardedFetchOptions,
  type GuardedRequestInit,
  guardedFetch,
  MAX_TIMER_MS,
} from './guarded-fetch.js';
// Errors
export { type NetworkLimit, NetworkLimitError } from './network-limit-error.js';
export { NetworkOptionsError } from './network-options-error.js';
export { NetworkPolicyError, type NetworkPolicyReason } from './network-policy-error.js';
export {
  NetworkResolutionError,
  type NetworkResolutionErrorOptions,
} from './network-resolution-error.js';
