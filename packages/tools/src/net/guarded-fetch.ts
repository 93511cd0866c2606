import type {
  Dispatcher,
  Headers as UndiciHeaders,
  HeadersInit as UndiciHeadersInit,
  RequestInit as UndiciRequestInit,
  Response as UndiciResponse,
} from 'undici';
import { lazyRequire } from '../internal/lazy-require.js';
import { ToolsError } from '../tools-error.js';
import { checkedUrl, type UrlPolicy, validateUrlPolicy } from './check-url.js';
import { FetchDeadline } from './fetch-deadline.js';
import {
  createGuardedDispatcher,
  type GuardedDispatcherOptions,
  guardedDispatcherFacts,
} from './guarded-dispatcher.js';
import { NetworkLimitError } from './network-limit-error.js';
import { NetworkOptionsError } from './network-options-error.js';
import { NetworkPolicyError } from './network-policy-error.js';

/** Default response byte limit of {@link guardedFetch}: 10 MiB. */
export const DEFAULT_MAX_RESPONSE_BYTES: number = 10 * 1024 * 1024;
/** Default total time limit of {@link guardedFetch}: 30 s (connect, redirects and body). */
export const DEFAULT_FETCH_TIMEOUT_MS = 30_000;
/** Largest `timeoutMs` (the longest delay a Node timer supports, about 24.8 days). */
export const MAX_TIMER_MS = 2_147_483_647;
/** Default redirect limit when redirects are followed. */
export const DEFAULT_MAX_REDIRECTS = 5;

/** Guard settings of one {@link guardedFetch} call. */
export interface GuardedFetchOptions {
  /**
   * A dispatcher made by `createGuardedDispatcher` (its `allowNonPublic` also decides IP-literal
   * URLs). Default: a shared guarded dispatcher that approves no non-public address.
   */
  readonly dispatcher?: Dispatcher;
  /** Allow `http:` to approved loopback hosts. Default `false`. */
  readonly allowHttpLoopback?: boolean;
  /** Ports allowed for `https:`. Default `[443]`. */
  readonly allowedPorts?: readonly number[] | 'any';
  /** Response byte limit, checked against `Content-Length` and while streaming. Default 10 MiB. */
  readonly maxResponseBytes?: number;
  /**
   * Total time limit in milliseconds: DNS, connect, every redirect hop and the response body
   * until its last byte has arrived (a body that has fully arrived can be read later). Default
   * 30,000; at most {@link MAX_TIMER_MS} (long-lived event streams need a large value).
   */
  readonly timeoutMs?: number;
  /** Most redirects followed when `redirect: 'follow'`. Default 5. */
  readonly maxRedirects?: number;
  /**
   * Extra rule for each redirect hop, after the URL rules passed: return exactly `true` to
   * follow `target`. Default: every hop that passes the URL rules is followed.
   */
  readonly allowRedirect?: (target: URL, from: URL) => boolean;
}

/**
 * `RequestInit` for {@link guardedFetch}: the standard (global) one, so the function is a
 * drop-in `fetch` for libraries such as the MCP SDK; `dispatcher` is refused (the guard chooses it);
 * plus `guard`. `redirect` defaults to `'manual'` (the 3xx response is returned); `'follow'`
 * re-checks every hop; `'error'` throws a `NetworkPolicyError` on a redirect.
 */
export type GuardedRequestInit = RequestInit & {
  readonly guard?: GuardedFetchOptions;
};

/** A fetch-compatible function bound to one guarded dispatcher and policy. */
export type GuardedFetch = (input: string | URL, init?: GuardedRequestInit) => Promise<Response>;

let sharedDispatcher: Dispatcher | undefined;

function defaultDispatcher(): Dispatcher {
  sharedDispatcher ??= createGuardedDispatcher();
  return sharedDispatcher;
}

function positiveInteger(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new NetworkOptionsError(`${name} must be a non-negative safe integer.`);
  }
  return value;
}

/** undici (CommonJS, tens of milliseconds to load), required on the first request. */
const undici = lazyRequire<typeof import('undici')>('undici');

const NO_INIT: RequestInit = Object.freeze({});
/**
 * The request headers when the caller gives none. A `Headers` instance, because undici's fetch
 * copies one without converting it as a record; private to this module and never changed.
 */
let identityHeaders: UndiciHeaders | undefined;
const IDENTITY_ONLY: Readonly<Record<string, string>> = Object.freeze({
  'accept-encoding': 'identity',
});
/** The shared identity headers, made on the first request. */
function identity(): UndiciHeaders {
  identityHeaders ??= new (undici().Headers)(IDENTITY_ONLY);
  return identityHeaders;
}
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const NULL_BODY_STATUSES = new Set([101, 103, 204, 205, 304]);
const CROSS_ORIGIN_DROPPED = ['authorization', 'cookie', 'proxy-authorization'];
const BODY_HEADERS = [
  'content-type',
  'content-length',
  'content-encoding',
  'content-language',
  'content-location',
];

function findGuardError(error: unknown, deadline: FetchDeadline): unknown {
  if (deadline.reason !== undefined) return deadline.reason;
  let current: unknown = error;
  for (let depth = 0; depth < 6 && typeof current === 'object' && current !== null; depth += 1) {
    if (ToolsError.isInstance(current)) return current;
    current = (current as { cause?: unknown }).cause;
  }
  return error;
}

function isReplayableBody(body: unknown): boolean {
  return (
    body === undefined ||
    body === null ||
    typeof body === 'string' ||
    body instanceof Uint8Array ||
    body instanceof ArrayBuffer ||
    body instanceof URLSearchParams
  );
}

/**
 * `fetch` through the network guard. Checks the URL with `checkUrl`, sends it through a guarded
 * dispatcher (never a proxy, never the global dispatcher), sends `Accept-Encoding: identity`,
 * follows redirects only with `redirect: 'follow'` (re-checking every hop and dropping
 * `Authorization`, `Cookie` and `Proxy-Authorization` across origins), refuses a response whose
 * `Content-Length` exceeds the byte limit and errors the body stream once more bytes arrive,
 * and cuts the call off after the total time limit (until the body's last byte has arrived).
 *
 * Throws `NetworkPolicyError` for refused URLs/addresses/redirects and `NetworkLimitError` for
 * exceeded limits (the body stream errors with it too); connection failures stay undici's
 * `TypeError('fetch failed')`.
 */
export function guardedFetch(
  input: string | URL,
  init: GuardedRequestInit = {},
): Promise<Response> {
  return fetchThroughGuard(input, init, undefined);
}

const NO_GUARD: GuardedFetchOptions = Object.freeze({});

/**
 * `guardedFetch`; with `defaults` (from `createGuardedFetch`), `init.guard` overrides them and
 * `defaults.dispatcher` is always used.
 */
async function fetchThroughGuard(
  input: string | URL,
  init: GuardedRequestInit,
  defaults: GuardedFetchOptions | undefined,
): Promise<Response> {
  if (typeof init !== 'object' || init === null) {
    throw new NetworkOptionsError('init must be an object.');
  }
  if ('dispatcher' in init) {
    throw new NetworkOptionsError(
      'guardedFetch chooses its own dispatcher; pass guard.dispatcher.',
    );
  }
  const given = init.guard;
  const guard =
    defaults === undefined
      ? (given ?? NO_GUARD)
      : given === undefined
        ? defaults
        : { ...defaults, ...given, dispatcher: defaults.dispatcher };
  // The caller's other RequestInit members, if any (most calls pass none, or only `guard`).
  let requestInit: RequestInit = NO_INIT;
  for (const key in init) {
    if (key !== 'guard') {
      const { guard: _guard, ...rest } = init;
      requestInit = rest;
      break;
    }
  }
  const dispatcher = guard.dispatcher ?? defaultDispatcher();
  const facts = guardedDispatcherFacts(dispatcher);
  if (facts === undefined) {
    throw new NetworkOptionsError('guard.dispatcher must come from createGuardedDispatcher.');
  }
  const maxResponseBytes = positiveInteger(
    guard.maxResponseBytes,
    'maxResponseBytes',
    DEFAULT_MAX_RESPONSE_BYTES,
  );
  const timeoutMs = positiveInteger(guard.timeoutMs, 'timeoutMs', DEFAULT_FETCH_TIMEOUT_MS);
  if (timeoutMs < 1 || timeoutMs > MAX_TIMER_MS) {
    throw new NetworkOptionsError(`timeoutMs must be from 1 to ${MAX_TIMER_MS}.`);
  }
  const maxRedirects = positiveInteger(guard.maxRedirects, 'maxRedirects', DEFAULT_MAX_REDIRECTS);
  if (guard.allowRedirect !== undefined && typeof guard.allowRedirect !== 'function') {
    throw new NetworkOptionsError('allowRedirect must be a function.');
  }
  const redirectMode = requestInit.redirect ?? 'manual';
  if (redirectMode !== 'manual' && redirectMode !== 'follow' && redirectMode !== 'error') {
    throw new NetworkOptionsError("redirect must be 'manual', 'follow' or 'error'.");
  }
  const policy: { -readonly [K in keyof UrlPolicy]: UrlPolicy[K] } = {};
  if (guard.allowHttpLoopback !== undefined) policy.allowHttpLoopback = guard.allowHttpLoopback;
  if (guard.allowedPorts !== undefined) policy.allowedPorts = guard.allowedPorts;
  if (facts.allowNonPublic !== undefined) policy.allowNonPublic = facts.allowNonPublic;
  validateUrlPolicy(policy);
  // The canonical href goes to undici as text (it parses it once, as for a plain fetch).
  let href = checkedUrl(input, policy).href;

  // One timer for the whole call, released as soon as its response has fully arrived. It aborts
  // through the dispatcher, so the caller's signal (if any) goes to undici as it is.
  const deadline = new FetchDeadline(dispatcher, timeoutMs);

  // Without caller headers, one shared Headers instance avoids building one per request.
  let headers: UndiciHeaders | undefined;
  if (requestInit.headers !== undefined && requestInit.headers !== null) {
    headers = new (undici().Headers)(requestInit.headers as UndiciHeadersInit);
    headers.delete('host');
    headers.delete('proxy-authorization');
    headers.set('accept-encoding', 'identity');
  }
  let method = requestInit.method === undefined ? 'GET' : requestInit.method.toUpperCase();
  let body = requestInit.body;

  try {
    for (let hop = 0; ; hop += 1) {
      // Without caller init members the request is a GET without a body (a redirect keeps it
      // one), so only what differs from undici's defaults is passed.
      const hopInit: UndiciRequestInit =
        requestInit === NO_INIT
          ? {
              headers: headers ?? identity(),
              redirect: 'manual',
              dispatcher: deadline as unknown as Dispatcher,
            }
          : {
              ...(requestInit as unknown as UndiciRequestInit),
              method,
              headers: headers ?? identity(),
              body: (body ?? null) as NonNullable<UndiciRequestInit['body']> | null,
              redirect: 'manual',
              dispatcher: deadline as unknown as Dispatcher,
            };
      const response = await deadline.fetch(href, hopInit);
      // The limit passed between the response and here: the call is over (its body may be cut).
      if (deadline.reason !== undefined) throw deadline.reason;
      const location =
        redirectMode === 'manual' || !REDIRECT_STATUSES.has(response.status)
          ? null
          : response.headers.get('location');
      if (location === null) {
        // An undici Response: the same API as the global one (a different class in Node 20).
        const limited = limitResponse(
          response,
          href,
          hop > 0,
          maxResponseBytes,
          deadline,
          method === 'HEAD',
        );
        // From here the timer runs only until the body's last byte arrives from the network.
        deadline.returned();
        return limited as unknown as Response;
      }
      await response.body?.cancel().catch(() => undefined);
      if (redirectMode === 'error') {
        throw new NetworkPolicyError('The server answered with a redirect.', 'redirect');
      }
      if (hop >= maxRedirects) {
        throw new NetworkLimitError('Too many redirects.', 'redirects', {
          details: { maxRedirects },
        });
      }
      let next: URL;
      try {
        next = new URL(checkedUrl(new URL(location, href), policy).href);
      } catch (error) {
        throw NetworkPolicyError.isInstance(error)
          ? new NetworkPolicyError(`A redirect was refused: ${error.message}`, 'redirect', {
              details: { rule: error.reason, hop: hop + 1 },
            })
          : new NetworkPolicyError('A redirect location is not a valid URL.', 'redirect');
      }
      if (guard.allowRedirect !== undefined) {
        let allowed = false;
        try {
          allowed = guard.allowRedirect(new URL(next.href), new URL(href)) === true;
        } catch {
          allowed = false;
        }
        if (!allowed) {
          throw new NetworkPolicyError('A redirect was refused by allowRedirect.', 'redirect', {
            details: { hop: hop + 1 },
          });
        }
      }
      headers ??= new (undici().Headers)(IDENTITY_ONLY);
      if (next.origin !== new URL(href).origin) {
        for (const name of CROSS_ORIGIN_DROPPED) headers.delete(name);
      }
      const status = response.status;
      if (
        (status === 303 && method !== 'GET' && method !== 'HEAD') ||
        ((status === 301 || status === 302) && method === 'POST')
      ) {
        method = 'GET';
        body = undefined;
        for (const name of BODY_HEADERS) headers.delete(name);
      } else if (!isReplayableBody(body)) {
        throw new NetworkPolicyError(
          'A streamed request body cannot follow a redirect.',
          'redirect',
        );
      }
      href = next.href;
    }
  } catch (error) {
    deadline.release();
    throw findGuardError(error, deadline);
  }
}

const DECIMAL = /^\d+$/;

function isIdentity(encoding: string | null): boolean {
  return (
    encoding === null || encoding.trim() === '' || encoding.trim().toLowerCase() === 'identity'
  );
}

function limitResponse(
  response: UndiciResponse,
  href: string,
  redirected: boolean,
  maxResponseBytes: number,
  deadline: FetchDeadline,
  head: boolean,
): UndiciResponse {
  // A response to HEAD, or of a status without a body, has none: its Content-Length describes
  // what a GET would return, not bytes that come (RFC 9110, 9.3.2 and 8.6).
  const bodiless = head || NULL_BODY_STATUSES.has(response.status);
  const declared = response.headers.get('content-length');
  const sized = declared !== null && DECIMAL.test(declared);
  if (!bodiless && sized && Number(declared) > maxResponseBytes) {
    response.body?.cancel().catch(() => undefined);
    throw new NetworkLimitError('The response is larger than its byte limit.', 'response-bytes', {
      details: { maxResponseBytes },
    });
  }
  const source = response.body;
  if (
    source !== null &&
    !bodiless &&
    deadline.idle &&
    (sized || deadline.receivedBytes <= maxResponseBytes) &&
    isIdentity(response.headers.get('content-encoding'))
  ) {
    // The whole body has already arrived (no hop is on the wire), so it cannot run past the
    // time limit; and without a content coding its size is what came off the wire: at most the
    // Content-Length checked above (undici never delivers more), or the bytes just counted. A
    // body still arriving, or one that needs decoding, goes through the counting stream below,
    // which also reports the deadline's error.
    if (redirected) {
      Object.defineProperty(response, 'redirected', { value: true, enumerable: true });
    }
    return response;
  }
  let wrapped: UndiciResponse;
  if (source === null || bodiless) {
    source?.cancel().catch(() => undefined);
    deadline.release();
    wrapped = new (undici().Response)(null, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  } else {
    const reader = source.getReader();
    let total = 0;
    const stream = new ReadableStream<Uint8Array>(
      {
        async pull(streamController) {
          try {
            const { done, value } = await reader.read();
            if (done) {
              deadline.release();
              streamController.close();
              return;
            }
            total += value.byteLength;
            if (total > maxResponseBytes) {
              deadline.release();
              reader.cancel().catch(() => undefined);
              streamController.error(
                new NetworkLimitError(
                  'The response is larger than its byte limit.',
                  'response-bytes',
                  {
                    details: { maxResponseBytes },
                  },
                ),
              );
              return;
            }
            streamController.enqueue(value);
          } catch (error) {
            deadline.release();
            streamController.error(findGuardError(error, deadline));
          }
        },
        cancel(reason) {
          deadline.release();
          return reader.cancel(reason);
        },
      },
      { highWaterMark: 0 },
    );
    wrapped = new (undici().Response)(stream, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  }
  Object.defineProperty(wrapped, 'url', { value: href, enumerable: true });
  Object.defineProperty(wrapped, 'redirected', { value: redirected, enumerable: true });
  return wrapped;
}

/** Options of {@link createGuardedFetch}: a dispatcher's options plus the fetch guard's. */
export type CreateGuardedFetchOptions = GuardedDispatcherOptions &
  Omit<GuardedFetchOptions, 'dispatcher'> & { readonly dispatcher?: Dispatcher };

/**
 * A fetch-compatible function with its own guarded dispatcher (or the given one) and default
 * guard settings, for libraries that take a `fetch` option (the MCP SDK's transports and OAuth
 * helpers). Per-call `init.guard` values override the defaults, except the dispatcher.
 */
export function createGuardedFetch(options: CreateGuardedFetchOptions = {}): GuardedFetch {
  const {
    allowNonPublic,
    connectTimeoutMs,
    resolver,
    ca,
    maxAddresses,
    dispatcher: given,
    ...guardDefaults
  } = options;
  const dispatcher =
    given ??
    createGuardedDispatcher({
      ...(allowNonPublic === undefined ? {} : { allowNonPublic }),
      ...(connectTimeoutMs === undefined ? {} : { connectTimeoutMs }),
      ...(resolver === undefined ? {} : { resolver }),
      ...(ca === undefined ? {} : { ca }),
      ...(maxAddresses === undefined ? {} : { maxAddresses }),
    });
  if (guardedDispatcherFacts(dispatcher) === undefined) {
    throw new NetworkOptionsError('dispatcher must come from createGuardedDispatcher.');
  }
  const defaults: GuardedFetchOptions = Object.freeze({ ...guardDefaults, dispatcher });
  // A missing or null init is an empty one, as for `fetch`.
  return (input, init) => fetchThroughGuard(input, init ?? NO_INIT, defaults);
}
