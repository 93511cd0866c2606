import { randomUUID, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createMcpHandler,
  WebStandardStreamableHTTPServerTransport,
} from '@modelcontextprotocol/server';
import { GatewayConfigError } from '../gateway/errors.js';
import {
  DEFAULT_HTTP_MAX_CALLS_PER_PRINCIPAL,
  DEFAULT_HTTP_MAX_CALLS_PER_SESSION,
  DEFAULT_HTTP_MAX_LISTEN_STREAMS,
  DEFAULT_HTTP_MAX_LISTEN_STREAMS_PER_PRINCIPAL,
  DEFAULT_HTTP_MAX_REMEMBERED_SESSIONS,
  DEFAULT_HTTP_MAX_SESSIONS_PER_PRINCIPAL,
  DEFAULT_HTTP_MAX_STATELESS_CALLS,
  DEFAULT_HTTP_SESSION_IDLE_MS,
} from '../gateway/gateway-config.js';
import { AUTH_INFO_CALLER_TOKEN_KEY, CallerToken } from '../gateway/identity/caller-token.js';
import {
  AUTH_INFO_PRINCIPAL_KEY,
  approvalPrincipal,
  principalOfAuthInfo,
} from '../gateway/identity/gateway-principal.js';
import type { GatewayResourceServer } from '../gateway/identity/resource-server.js';
import type { McpGateway } from '../gateway/mcp-gateway.js';
import { plainToolsCall } from '../gateway/plain-tools-call.js';
import type { ApprovalSealKeys } from '../gateway/seal-box.js';
import { loadServerSdk } from '../gateway/server-sdk.js';
import {
  DEFAULT_HTTP_SESSION_MAX_AGE_MS,
  RememberedSessions,
  SEALED_SESSION_VERSION,
  SessionSeal,
  sealedFlowSession,
  sessionStateOf,
} from '../gateway/session-seal.js';
import { HttpFastSession } from './http-fast-call.js';
import { replayHandshake } from './legacy-session-resume.js';
import { isLegacyEra } from './request-era.js';

/** Options of {@link serveGatewayHttp}. */
export interface GatewayHttpOptions {
  /** Address to listen on (`127.0.0.1`, `::1`, or another one when `token` is set). */
  readonly host: string;
  /** Port; 0 picks a free one. */
  readonly port: number;
  /** Every request must carry `Authorization: Bearer <token>` when set. */
  readonly token: string | undefined;
  /**
   * The gateway as an OAuth protected resource (`gateway.httpAuth`): serves its RFC 9728
   * metadata and checks every request's bearer token; the caller becomes the calls' principal.
   * Exclusive with `token`.
   */
  readonly auth?: GatewayResourceServer | undefined;
  /** Legacy (2025-11-25) sessions open at once; an initialize beyond it is answered 503. */
  readonly maxSessions: number;
  /** True when `host` is a loopback address (then the Host header is checked too). */
  readonly loopback: boolean;
  /**
   * Milliseconds a legacy session may stay idle (no request in flight, none started) before it
   * is closed; idle sessions are also closed before an initialize is refused for `maxSessions`.
   * Default {@link DEFAULT_HTTP_SESSION_IDLE_MS}.
   */
  readonly sessionIdleMs?: number | undefined;
  /**
   * `tools/call` requests one legacy session may have in flight; one more is answered at once
   * with a `GATEWAY_HTTP_BUSY` error. Default {@link DEFAULT_HTTP_MAX_CALLS_PER_SESSION}.
   */
  readonly maxCallsPerSession?: number | undefined;
  /**
   * `tools/call` requests of the stateless (2026-07-28) era in flight at once, all clients
   * together (they carry no session to tell them apart); one more is answered with
   * `GATEWAY_HTTP_BUSY`. Default {@link DEFAULT_HTTP_MAX_STATELESS_CALLS}.
   */
  readonly maxStatelessCalls?: number | undefined;
  /**
   * With `auth`: legacy sessions one principal (issuer and subject) may hold open on this
   * process; one more `initialize` of theirs is answered 429 with `GATEWAY_HTTP_BUSY` (after their
   * idle sessions are closed), a resumption 404. Without `auth` every caller is one principal and
   * only `maxSessions` applies. Default {@link DEFAULT_HTTP_MAX_SESSIONS_PER_PRINCIPAL}.
   */
  readonly maxSessionsPerPrincipal?: number | undefined;
  /**
   * With `auth`: `tools/call` requests one principal may have in flight, both eras together
   * (across their legacy sessions, within each one's `maxCallsPerSession`, and stateless, within
   * `maxStatelessCalls`); one more is answered `GATEWAY_HTTP_BUSY`. Without `auth` only the
   * per-session and stateless limits apply. Default {@link DEFAULT_HTTP_MAX_CALLS_PER_PRINCIPAL}.
   */
  readonly maxCallsPerPrincipal?: number | undefined;
  /**
   * `subscriptions/listen` streams open at once, all clients together; one more is answered
   * `GATEWAY_HTTP_BUSY`. Default {@link DEFAULT_HTTP_MAX_LISTEN_STREAMS}.
   */
  readonly maxListenStreams?: number | undefined;
  /**
   * With `auth`: `subscriptions/listen` streams one principal may hold open (within
   * `maxListenStreams`). Default {@link DEFAULT_HTTP_MAX_LISTEN_STREAMS_PER_PRINCIPAL}.
   */
  readonly maxListenStreamsPerPrincipal?: number | undefined;
  /**
   * The replicas' sealing key: with it a legacy session's id is its state sealed (the version,
   * capabilities and info its `initialize` gave, the principal, an expiry), so a request that a
   * balancer sends to another replica resumes the session there. Without it a session lives on
   * the replica that created it only.
   */
  readonly sealKeys?: ApprovalSealKeys | undefined;
  /**
   * Milliseconds a sealed session id is valid after its `initialize` (any replica, idle or
   * not). Default {@link DEFAULT_HTTP_SESSION_MAX_AGE_MS} (one day).
   */
  readonly sessionMaxAgeMs?: number | undefined;
  /**
   * With `sealKeys`: sealed session ids remembered until their max age, in each of two sets: the
   * sessions this process held (a resumed one continues the flow labels held here; one not
   * remembered is judged as a session whose labels were dropped: exposed and holding private
   * data) and the sessions deleted here (refused: 404). Beyond it the oldest is forgotten.
   * Default {@link DEFAULT_HTTP_MAX_REMEMBERED_SESSIONS}.
   */
  readonly maxRememberedSessions?: number | undefined;
  /** The web console, served at `/console` on the same listener (its own sign-in and checks). */
  readonly console?: ConsoleMount | undefined;
  /**
   * Serve a legacy session's plain `tools/call` POSTs on the fast path ({@link HttpFastSession}:
   * the same checks and answers, without the SDK transport's per-message work). Default true;
   * false sends every request through the SDK's transport (for comparison).
   */
  readonly plainCallFastPath?: boolean | undefined;
}

/** What `serveGatewayHttp` needs of the web console (`GatewayConsole`). */
export interface ConsoleMount {
  handle(request: IncomingMessage, response: ServerResponse): Promise<void>;
  listening(host: string, port: number, loopback: boolean): void;
}

/** The wire code of the busy answer (in the JSON-RPC error's `data.code`). */
export const GATEWAY_HTTP_BUSY = 'GATEWAY_HTTP_BUSY';

/** A legacy session's bookkeeping: its transport, calls in flight, last activity. */
interface Session {
  readonly transport: WebStandardStreamableHTTPServerTransport;
  /** The transport its downstream server is connected to: the SDK's, with the fast path. */
  readonly fast: HttpFastSession;
  /** Requests (other than a GET stream) in flight. */
  requests: number;
  /** `tools/call` requests in flight. */
  calls: number;
  /** When the last request started or ended (ms since the epoch). */
  lastActive: number;
  /** The caller that opened it, as approvals bind it ({@link approvalPrincipal}). */
  readonly owner: string;
}

/** What the gateway's handlers are told of the caller: the principal, never the token. */
type CallerInfo = NonNullable<
  Parameters<WebStandardStreamableHTTPServerTransport['handleRequest']>[1]
>['authInfo'];

/** The number of requests of `method` in a parsed body (a message or a batch). */
function requestsIn(body: unknown, method: 'tools/call' | 'subscriptions/listen'): number {
  const messages = Array.isArray(body) ? body : [body];
  let count = 0;
  for (const message of messages) {
    if (
      typeof message === 'object' &&
      message !== null &&
      (message as { method?: unknown }).method === method
    ) {
      count++;
    }
  }
  return count;
}

/** Counters by principal; a principal whose count falls to zero takes no room. */
class PrincipalCounts {
  readonly #counts = new Map<string, number>();

  /** The count of `principal`. */
  get(principal: string): number {
    return this.#counts.get(principal) ?? 0;
  }

  /** Adds `amount` to `principal`'s count (a negative amount gives it back). */
  add(principal: string, amount: number): void {
    const next = this.get(principal) + amount;
    if (next > 0) this.#counts.set(principal, next);
    else this.#counts.delete(principal);
  }
}

/** Largest timer in Node (about 24.8 days); a later expiry is waited for in such steps. */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * Calls `end` at `expiresAt` (seconds since the epoch, a token's `exp`), unless `out` closed
 * first; at once when it has passed.
 */
function endAtExpiry(out: ServerResponse, expiresAt: number, end: () => void): void {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const arm = (): void => {
    const left = expiresAt * 1000 - Date.now();
    if (left <= 0) {
      end();
      return;
    }
    timer = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
    timer.unref();
  };
  out.once('close', () => clearTimeout(timer));
  arm();
}

/** The JSON-RPC id of a single parsed request, or null. */
function idOf(body: unknown): string | number | null {
  const id = (body as { id?: unknown } | null)?.id;
  return typeof id === 'string' || typeof id === 'number' ? id : null;
}

/** Largest request body accepted, in bytes (4 MiB, the SDK transports' own default). */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * The resumptions of sealed legacy sessions in progress, shared by the requests that ask for the
 * same session **as the same principal** (keyed by both): a request of another principal
 * presenting the id never joins the owner's resumption (it runs its own, which cannot open a
 * session sealed for someone else), nor the reverse.
 */
export class SharedResumptions<T> {
  readonly #running = new Map<string, Promise<T>>();

  /** The resumption of `sessionId` for `principal` in progress, or the one `start` begins. */
  run(sessionId: string, principal: string, start: () => Promise<T>): Promise<T> {
    // JSON: no separator the two values could forge.
    const key = JSON.stringify([sessionId, principal]);
    const running = this.#running.get(key);
    if (running !== undefined) return running;
    const started = start().finally(() => this.#running.delete(key));
    this.#running.set(key, started);
    return started;
  }

  /** Resumptions in progress. */
  get size(): number {
    return this.#running.size;
  }
}

function bearerMatches(header: string | undefined, token: string): boolean {
  // RFC 9110 (11.4): one or more spaces after the scheme.
  const match = /^Bearer +([^\s]+)$/i.exec(header ?? '');
  if (match === null) return false;
  const given = Buffer.from(match[1] as string, 'utf8');
  const expected = Buffer.from(token, 'utf8');
  return given.length === expected.length && timingSafeEqual(given, expected);
}

function rpcError(status: number, code: number, message: string): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json' },
  });
}

/**
 * Reads at most {@link MAX_BODY_BYTES}; `undefined` when the body is larger (the rest is then
 * dropped as it arrives, never held). Rejects when the request fails or closes before its end.
 */
function readBody(request: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (): void => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
      request.off('close', onClose);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        // The rest is read and dropped (the connection stays usable for the refusal).
        settle();
        request.resume();
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => {
      settle();
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size));
    };
    const onError = (error: Error): void => {
      settle();
      reject(error);
    };
    const onClose = (): void => {
      settle();
      reject(new Error('the request closed before its body ended'));
    };
    request.on('data', onData);
    request.once('end', onEnd);
    request.once('error', onError);
    request.once('close', onClose);
  });
}

/** The one SSE event the SDK's transport writes for a message (no event id: no event store). */
const SSE_PREFIX = Buffer.from('event: message\ndata: ');
const SSE_END = 0x0a;
const NOT_YET = Symbol('not yet');

/**
 * The JSON-RPC text of `chunk` when it is exactly one SSE event carrying one message, as the
 * SDK's transport writes it (`event: message`, one `data:` line, no id); otherwise undefined.
 */
function singleEventData(chunk: Uint8Array): Uint8Array | undefined {
  const end = chunk.length - 2;
  if (end <= SSE_PREFIX.length || chunk[end] !== SSE_END || chunk[end + 1] !== SSE_END) {
    return undefined;
  }
  for (let index = 0; index < SSE_PREFIX.length; index++) {
    if (chunk[index] !== SSE_PREFIX[index]) return undefined;
  }
  const data = chunk.subarray(SSE_PREFIX.length, end);
  return data.includes(SSE_END) ? undefined : data;
}

/**
 * Writes `response` to `out`, the head with the first bytes of the body (a reply and its end in
 * one write). A streamed reply whose stream ends with its first event, that event the answer
 * alone (nothing asked or told before it: no approval, no progress), leaves as `application/json`
 * with its length, which the client reads without an event-stream parser; a stream with anything
 * before its answer stays a stream. (The SDK's own JSON mode is not used: it drops the messages a
 * call sends before its answer, approval requests among them.)
 *
 * Sending the head of a streamed answer at once, before its body, as the SDK's Node transport
 * does, was measured slower on a loaded machine: the client wakes to read it while the upstream
 * server runs, and takes the CPU that server needed.
 */
async function writeResponse(
  response: Response,
  out: ServerResponse,
  ends?: AbortSignal,
): Promise<void> {
  const headers = Object.fromEntries(response.headers);
  if (response.body === null) {
    out.writeHead(response.status, headers);
    out.end();
    return;
  }
  const reader = response.body.getReader();
  const cancel = (): void => {
    reader.cancel().catch(() => undefined);
  };
  out.once('close', cancel);
  // Ended from here (its caller's token expired): the stream stops, and the answer ends cleanly.
  if (ends?.aborted === true) cancel();
  else ends?.addEventListener('abort', cancel, { once: true });
  const first = await reader.read();
  if (first.done) {
    out.writeHead(response.status, headers);
    out.end();
    return;
  }
  const data =
    response.status === 200 && headers['content-type'] === 'text/event-stream'
      ? singleEventData(first.value)
      : undefined;
  // The SDK closes an answer's stream in the same step that writes the answer: a stream already
  // closed here has nothing after it (a read of a closed stream is settled at once, and wins).
  let next: ReturnType<typeof reader.read> | undefined = reader.read();
  const after = data === undefined ? NOT_YET : await Promise.race([next, NOT_YET]);
  if (data !== undefined && typeof after !== 'symbol' && after.done) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(data.length);
    out.writeHead(200, headers);
    out.end(data);
    return;
  }
  out.writeHead(response.status, headers);
  out.write(first.value);
  for (;;) {
    const { done, value } = await (next ?? reader.read());
    next = undefined;
    if (done) break;
    out.write(value);
  }
  out.end();
}

/**
 * A signal that aborts when the client goes away before its answer is complete. Only the
 * stateless (2026-07-28) serving reads a request's signal (it ends the per-request server, and a
 * `subscriptions/listen` stream, with it); a legacy session's transport never does, so its
 * requests are built without one.
 */
function clientGone(out: ServerResponse): AbortController {
  const abort = new AbortController();
  // Aborting after a complete answer cancels nothing, and each abort builds an AbortError (with
  // its stack), a measurable share of a call's cost through the gateway.
  const cancel = (): void => {
    if (!out.writableFinished) abort.abort();
  };
  // The client may have gone while its body was read.
  if (out.closed) cancel();
  else out.once('close', cancel);
  return abort;
}

/**
 * Serves the gateway over Streamable HTTP at `http://<host>:<port>/mcp`, in both eras on the SDK
 * v2 server: a request carrying the 2026-07-28 `_meta` envelope is served statelessly (one
 * server instance per request, `createMcpHandler`; `subscriptions/listen` streams hear of tool
 * changes), and 2025-11-25 traffic gets sessions (`Mcp-Session-Id`, one gateway connection per
 * session, so approvals are asked of the session that made the call). Resolves once listening.
 */
export async function serveGatewayHttp(
  gateway: McpGateway,
  options: GatewayHttpOptions,
): Promise<{ readonly url: string; readonly close: () => Promise<void> }> {
  if (options.auth !== undefined && options.token !== undefined) {
    throw new GatewayConfigError(
      'serveGatewayHttp takes token (one shared bearer token) or auth (access tokens per caller), not both',
      { details: { at: 'auth' } },
    );
  }
  // The gateway's downstream servers need the SDK v2 server loaded before the first request
  // (this front serves before the gateway's start(), which loads it too).
  await loadServerSdk();
  const sessions = new Map<string, Session>();
  const idleMs = options.sessionIdleMs ?? DEFAULT_HTTP_SESSION_IDLE_MS;
  const maxCallsPerSession = options.maxCallsPerSession ?? DEFAULT_HTTP_MAX_CALLS_PER_SESSION;
  const maxStatelessCalls = options.maxStatelessCalls ?? DEFAULT_HTTP_MAX_STATELESS_CALLS;
  let statelessCalls = 0;
  // Per principal (issuer and subject) with `auth` only: without it every caller is one.
  const perPrincipal = options.auth !== undefined;
  const maxSessionsPerPrincipal =
    options.maxSessionsPerPrincipal ?? DEFAULT_HTTP_MAX_SESSIONS_PER_PRINCIPAL;
  const maxCallsPerPrincipal = options.maxCallsPerPrincipal ?? DEFAULT_HTTP_MAX_CALLS_PER_PRINCIPAL;
  const maxListenStreams = options.maxListenStreams ?? DEFAULT_HTTP_MAX_LISTEN_STREAMS;
  const maxListenStreamsPerPrincipal =
    options.maxListenStreamsPerPrincipal ?? DEFAULT_HTTP_MAX_LISTEN_STREAMS_PER_PRINCIPAL;
  const principalCalls = new PrincipalCounts();
  let listenStreams = 0;
  const principalListens = new PrincipalCounts();
  /** Sessions being opened (or resumed) per principal, not registered yet. */
  const opening = new PrincipalCounts();
  const portable =
    options.sealKeys === undefined
      ? undefined
      : new SessionSeal(
          options.sealKeys,
          options.sessionMaxAgeMs ?? DEFAULT_HTTP_SESSION_MAX_AGE_MS,
        );
  // Sealed sessions' flow sessions: those held here (their labels continue on resumption) and
  // those deleted here (never resumed again), each until the id's max age.
  const maxRemembered = options.maxRememberedSessions ?? DEFAULT_HTTP_MAX_REMEMBERED_SESSIONS;
  const heldHere = new RememberedSessions(maxRemembered);
  const deletedHere = new RememberedSessions(maxRemembered);
  /** The flow session of `sessionId` when it is a sealed id (with the key), else undefined. */
  const flowOf = (sessionId: string): string | undefined =>
    portable !== undefined && sessionId.startsWith(`${SEALED_SESSION_VERSION}.`)
      ? sealedFlowSession(sessionId)
      : undefined;
  /** Past their max age, sealed sessions end: their labels go, a deleted id is forgotten. */
  const sweepSealed = (): void => {
    for (const flow of heldHere.sweep()) gateway.endFlowSession(flow);
    deletedHere.sweep();
  };
  let allowedHosts: string[] = [];
  const modern = createMcpHandler(() => gateway.downstreamServer('modern'), {
    legacy: 'reject',
    maxRequestBodySize: MAX_BODY_BYTES,
  });
  const unsubscribe = gateway.onToolsChanged(() => modern.notify.toolsChanged());

  /** Closes the sessions idle for `idleMs` or longer; returns how many. */
  const evictIdle = (now: number): number => {
    let evicted = 0;
    for (const [id, session] of sessions) {
      if (session.requests === 0 && now - session.lastActive >= idleMs) {
        sessions.delete(id);
        session.transport.close().catch(() => undefined);
        evicted += 1;
      }
    }
    return evicted;
  };
  // Swept every idleMs (between 1 s and 1 min); an initialize that finds the sessions full
  // sweeps at once, so a short idleMs is exact where it matters without a hot timer.
  const sweep = setInterval(
    () => {
      evictIdle(Date.now());
      sweepSealed();
    },
    Math.max(1_000, Math.min(idleMs, 60_000)),
  );
  sweep.unref();

  /**
   * The busy answer to a request over its share: a JSON-RPC error naming the limit (`what` is
   * what is already running or open) and its option; the others go on.
   */
  const busy = (
    body: unknown,
    limit: number,
    option: string,
    what: string,
    status = 200,
    retry = 'retry when one has ended',
  ): Response =>
    new Response(
      JSON.stringify({
        jsonrpc: '2.0',
        id: idOf(body),
        error: {
          code: -32000,
          message: `${GATEWAY_HTTP_BUSY}: ${limit} ${what} (${option}); ${retry}`,
          data: { code: GATEWAY_HTTP_BUSY, limit, option },
        },
      }),
      { status, headers: { 'content-type': 'application/json' } },
    );

  /** The legacy sessions `owner` holds or is opening on this process. */
  const sessionsOf = (owner: string): number => {
    let count = opening.get(owner);
    for (const session of sessions.values()) if (session.owner === owner) count += 1;
    return count;
  };
  /**
   * True when `owner` may open one more legacy session under `maxSessionsPerPrincipal` (idle
   * sessions are closed before saying no); always true without `auth`.
   */
  const ownerMayOpen = (owner: string): boolean => {
    if (!perPrincipal || sessionsOf(owner) < maxSessionsPerPrincipal) return true;
    return evictIdle(Date.now()) > 0 && sessionsOf(owner) < maxSessionsPerPrincipal;
  };
  /** Counts a session of `owner` as opening until it registers or fails (idempotent release). */
  const claimOpening = (owner: string): (() => void) => {
    opening.add(owner, 1);
    let held = true;
    return () => {
      if (held) opening.add(owner, -1);
      held = false;
    };
  };

  /**
   * A session transport whose id comes from `id`, registered once its handshake is taken, and
   * its downstream server connected to it (through the fast path's transport).
   */
  const newTransport = async (
    id: () => string,
    owner: string,
    registered: () => void = () => undefined,
    flowSession?: string,
  ): Promise<WebStandardStreamableHTTPServerTransport> => {
    const downstream = gateway.legacyHttpSession(flowSession);
    const created: WebStandardStreamableHTTPServerTransport =
      new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: id,
        onsessioninitialized: (sessionId) => {
          registered();
          sessions.set(sessionId, {
            transport: created,
            fast,
            requests: 0,
            calls: 0,
            lastActive: Date.now(),
            owner,
          });
        },
        onsessionclosed: (sessionId) => {
          sessions.delete(sessionId);
        },
        maxRequestBodySize: MAX_BODY_BYTES,
      });
    const fast = new HttpFastSession(created, downstream.calls);
    fast.onclose = () => {
      if (created.sessionId !== undefined) sessions.delete(created.sessionId);
    };
    await downstream.server.connect(fast);
    return created;
  };

  // A sealed session this replica does not hold (created on another, or closed here when idle):
  // a new transport and downstream server are brought to the state its id seals.
  // Requests of one session and one principal arriving at once share one resumption.
  const resuming = new SharedResumptions<Session | undefined>();
  const resume = (
    sessionId: string,
    host: string,
    principal: string,
  ): Promise<Session | undefined> =>
    resuming.run(sessionId, principal, () => resumeOnce(sessionId, host, principal));
  const resumeOnce = async (
    sessionId: string,
    host: string,
    principal: string,
  ): Promise<Session | undefined> => {
    const opened = portable?.openSession(sessionId, principal);
    if (opened === undefined) return undefined;
    const { state, expiresAt } = opened;
    const flow = sealedFlowSession(sessionId);
    // Deleted here: ended, never resumed (another replica does not know: see the README).
    if (deletedHere.has(flow)) return undefined;
    if (sessions.size >= options.maxSessions && evictIdle(Date.now()) === 0) return undefined;
    if (!ownerMayOpen(principal)) return undefined;
    // Labels this process does not hold for it (held elsewhere, before a restart, forgotten):
    // judged as dropped (exposed and holding private data) until it ends, before any request.
    if (!heldHere.has(flow)) gateway.dropFlowSession(flow);
    heldHere.add(flow, expiresAt);
    const release = claimOpening(principal);
    try {
      const created = await newTransport(() => sessionId, principal, release, flow);
      if (!(await replayHandshake(created, sessionId, state, host))) {
        sessions.delete(sessionId);
        await created.close().catch(() => undefined);
        return undefined;
      }
      return sessions.get(sessionId);
    } finally {
      release();
    }
  };

  const legacy = async (
    request: Request,
    parsedBody: unknown,
    done: Promise<void>,
    authInfo: CallerInfo,
  ): Promise<Response> => {
    const sessionId = request.headers.get('mcp-session-id');
    const principal = approvalPrincipal(principalOfAuthInfo(authInfo));
    const found = sessionId === null ? undefined : sessions.get(sessionId);
    // A session is its opener's: another caller presenting its id is told it does not exist.
    const held = found !== undefined && found.owner === principal ? found : undefined;
    if (found !== undefined && held === undefined) {
      return rpcError(404, -32001, 'Session not found');
    }
    // A sealed id is checked on every request, held here or not: past its max age, or of
    // another principal, it is not found (a held copy is closed).
    if (
      held !== undefined &&
      portable !== undefined &&
      sessionId?.startsWith(`${SEALED_SESSION_VERSION}.`) === true &&
      portable.open(sessionId, principal) === undefined
    ) {
      sessions.delete(sessionId);
      await held.transport.close().catch(() => undefined);
      return rpcError(404, -32001, 'Session not found');
    }
    const resumed =
      sessionId === null
        ? undefined
        : (held ?? (await resume(sessionId, new URL(request.url).host, principal)));
    // Whatever was found or resumed serves only its owner.
    if (resumed !== undefined && resumed.owner !== principal) {
      return rpcError(404, -32001, 'Session not found');
    }
    const existing = resumed;
    if (existing !== undefined) {
      const calls = requestsIn(parsedBody, 'tools/call');
      if (calls > 0 && existing.calls + calls > maxCallsPerSession) {
        existing.lastActive = Date.now();
        return busy(
          parsedBody,
          maxCallsPerSession,
          'gateway.httpMaxCallsPerSession',
          'call(s) of this session are already running',
        );
      }
      // With `auth`, a principal's calls count across their sessions (and stateless calls).
      const caller = perPrincipal && calls > 0 ? principal : undefined;
      if (caller !== undefined && principalCalls.get(caller) + calls > maxCallsPerPrincipal) {
        existing.lastActive = Date.now();
        return busy(
          parsedBody,
          maxCallsPerPrincipal,
          'gateway.httpMaxCallsPerPrincipal',
          'call(s) of this principal are already running',
        );
      }
      if (caller !== undefined) {
        principalCalls.add(caller, calls);
        void done.then(() => principalCalls.add(caller, -calls));
      }
      // A GET is the session's listening stream: it may stay open, and does not keep the
      // session from expiring.
      const counted = request.method !== 'GET';
      existing.calls += calls;
      if (counted) existing.requests += 1;
      existing.lastActive = Date.now();
      void done.then(() => {
        existing.calls -= calls;
        if (counted) existing.requests -= 1;
        existing.lastActive = Date.now();
      });
      const answer = await existing.transport.handleRequest(request, {
        parsedBody,
        ...(authInfo === undefined ? {} : { authInfo }),
      });
      // DELETE ends a sealed session for good on this process: its id is refused from now on
      // (until its max age) and its labels end.
      const flow = sessionId === null ? undefined : flowOf(sessionId);
      if (request.method === 'DELETE' && answer.status === 200 && flow !== undefined) {
        const expiresAt = portable?.openSession(sessionId as string, principal)?.expiresAt;
        deletedHere.add(
          flow,
          expiresAt ?? Date.now() + (options.sessionMaxAgeMs ?? DEFAULT_HTTP_SESSION_MAX_AGE_MS),
        );
        heldHere.delete(flow);
        gateway.endFlowSession(flow);
      }
      return answer;
    }
    if (sessionId !== null) return rpcError(404, -32001, 'Session not found');
    if (request.method !== 'POST') {
      return rpcError(405, -32000, 'Start a session with an initialize POST');
    }
    if (sessions.size >= options.maxSessions && evictIdle(Date.now()) === 0) {
      return rpcError(503, -32000, 'Too many sessions (gateway.httpMaxSessions)');
    }
    if (!ownerMayOpen(principal)) {
      return busy(
        parsedBody,
        maxSessionsPerPrincipal,
        'gateway.httpMaxSessionsPerPrincipal',
        'legacy session(s) of this principal are already open',
        429,
        'end one (DELETE) or retry once one has been idle past gateway.httpSessionIdleMs',
      );
    }
    const release = claimOpening(principal);
    try {
      // With the sealing key the id is the session's state, sealed: any replica resumes it.
      const state = sessionStateOf(parsedBody);
      const sealed = state === undefined ? undefined : portable?.seal(principal, state);
      // A sealed session's flow session is its id's: its labels outlive an idle close.
      const flow = sealed === undefined ? undefined : sealedFlowSession(sealed);
      const created = await newTransport(
        () => sealed ?? randomUUID(),
        principal,
        () => {
          release();
          const expiresAt =
            sealed === undefined ? undefined : portable?.openSession(sealed, principal)?.expiresAt;
          if (flow !== undefined && expiresAt !== undefined) heldHere.add(flow, expiresAt);
        },
        flow,
      );
      const response = await created.handleRequest(request, {
        parsedBody,
        ...(authInfo === undefined ? {} : { authInfo }),
      });
      // A first request that did not start a session leaves nothing behind.
      if (created.sessionId === undefined || !sessions.has(created.sessionId)) {
        await created.close().catch(() => undefined);
      }
      return response;
    } finally {
      release();
    }
  };

  const stateless = async (
    request: Request,
    parsedBody: unknown,
    done: Promise<void>,
    authInfo: CallerInfo,
  ) => {
    const calls = requestsIn(parsedBody, 'tools/call');
    const listens = requestsIn(parsedBody, 'subscriptions/listen');
    // Each principal's share is checked before the shared one, so one principal never fills it.
    const principal = perPrincipal ? approvalPrincipal(principalOfAuthInfo(authInfo)) : undefined;
    if (calls > 0) {
      if (principal !== undefined && principalCalls.get(principal) + calls > maxCallsPerPrincipal) {
        return busy(
          parsedBody,
          maxCallsPerPrincipal,
          'gateway.httpMaxCallsPerPrincipal',
          'call(s) of this principal are already running',
        );
      }
      if (statelessCalls + calls > maxStatelessCalls) {
        return busy(
          parsedBody,
          maxStatelessCalls,
          'gateway.httpMaxStatelessCalls',
          'stateless call(s) of all clients are already running',
        );
      }
    }
    if (listens > 0) {
      if (
        principal !== undefined &&
        principalListens.get(principal) + listens > maxListenStreamsPerPrincipal
      ) {
        return busy(
          parsedBody,
          maxListenStreamsPerPrincipal,
          'gateway.httpMaxListenStreamsPerPrincipal',
          'subscriptions/listen stream(s) of this principal are already open',
          200,
          'close one and retry',
        );
      }
      if (listenStreams + listens > maxListenStreams) {
        return busy(
          parsedBody,
          maxListenStreams,
          'gateway.httpMaxListenStreams',
          'subscriptions/listen stream(s) of all clients are already open',
          200,
          'retry later',
        );
      }
    }
    statelessCalls += calls;
    listenStreams += listens;
    if (principal !== undefined) {
      principalCalls.add(principal, calls);
      principalListens.add(principal, listens);
    }
    void done.then(() => {
      statelessCalls -= calls;
      listenStreams -= listens;
      if (principal !== undefined) {
        principalCalls.add(principal, -calls);
        principalListens.add(principal, -listens);
      }
    });
    return modern.fetch(request, { parsedBody, ...(authInfo === undefined ? {} : { authInfo }) });
  };

  const fastPath = options.plainCallFastPath ?? true;
  /**
   * Serves `body` on its session's fast path when it is a plain `tools/call` that the legacy
   * serving would hand that session's transport and that transport would take (see
   * {@link HttpFastSession.accepts}); false leaves it to the SDK path, which answers it as before
   * (a session not held here or not the caller's, a sealed id no longer valid, a call over the
   * session's share: the busy answer).
   */
  const servedFast = (
    incoming: IncomingMessage,
    out: ServerResponse,
    body: unknown,
    authInfo: CallerInfo,
  ): boolean => {
    const sessionId = incoming.headers['mcp-session-id'];
    if (typeof sessionId !== 'string') return false;
    const session = sessions.get(sessionId);
    if (session === undefined || session.calls + 1 > maxCallsPerSession) return false;
    const call = plainToolsCall(body);
    if (call === undefined || !session.fast.accepts(call, incoming.headers)) return false;
    const principal = approvalPrincipal(principalOfAuthInfo(authInfo));
    if (session.owner !== principal) return false;
    if (perPrincipal && principalCalls.get(principal) + 1 > maxCallsPerPrincipal) return false;
    if (
      portable !== undefined &&
      sessionId.startsWith(`${SEALED_SESSION_VERSION}.`) &&
      portable.open(sessionId, principal) === undefined
    ) {
      return false;
    }
    session.calls += 1;
    session.requests += 1;
    session.lastActive = Date.now();
    if (perPrincipal) principalCalls.add(principal, 1);
    session.fast.serve(call, out, authInfo, () => {
      session.calls -= 1;
      session.requests -= 1;
      session.lastActive = Date.now();
      if (perPrincipal) principalCalls.add(principal, -1);
    });
    return true;
  };

  const handle = async (incoming: IncomingMessage, out: ServerResponse): Promise<void> => {
    // The endpoint itself is the hot path: only another target is parsed (and normalised).
    const pathname =
      incoming.url === '/mcp'
        ? '/mcp'
        : new URL(incoming.url ?? '/', 'http://gateway.invalid').pathname;
    if (
      options.console !== undefined &&
      (pathname === '/console' || pathname.startsWith('/console/'))
    ) {
      await options.console.handle(incoming, out);
      return;
    }
    if (options.auth?.isMetadataPath(pathname) === true && incoming.method === 'GET') {
      out.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' });
      out.end(JSON.stringify(options.auth.metadata()));
      return;
    }
    if (pathname !== '/mcp') {
      out.writeHead(404).end();
      return;
    }
    let authInfo: CallerInfo;
    if (options.auth !== undefined) {
      const caller = await options.auth.authenticate(incoming.headers.authorization);
      if (!caller.ok) {
        out.writeHead(caller.status, caller.headers);
        out.end(caller.body);
        return;
      }
      // The token itself stays here: handlers (and upstreams) see the principal only.
      authInfo = {
        token: '',
        clientId: caller.clientId,
        scopes: [...caller.scopes],
        ...(caller.expiresAt === undefined ? {} : { expiresAt: caller.expiresAt }),
        extra: {
          [AUTH_INFO_PRINCIPAL_KEY]: caller.principal,
          // Held (redacted when printed) for one use: the subject of a token exchange for an
          // upstream with `credentials`. It is never sent to an upstream.
          [AUTH_INFO_CALLER_TOKEN_KEY]: new CallerToken(
            /^Bearer +(\S+)/i.exec(String(incoming.headers.authorization))?.[1] ?? '',
            caller.expiresAt === undefined ? undefined : caller.expiresAt * 1000,
          ),
        },
      };
    }
    if (
      options.token !== undefined &&
      !bearerMatches(incoming.headers.authorization, options.token)
    ) {
      out.writeHead(401, { 'www-authenticate': 'Bearer', 'content-type': 'application/json' });
      out.end(JSON.stringify({ error: 'a bearer token is required' }));
      return;
    }
    // DNS rebinding: on loopback, the Host must name the address and port listened on.
    if (options.loopback && !allowedHosts.includes(incoming.headers.host ?? '')) {
      await writeResponse(rpcError(403, -32000, 'Invalid Host header'), out);
      return;
    }
    const method = incoming.method ?? 'GET';
    const body = method === 'POST' ? await readBody(incoming) : Buffer.alloc(0);
    if (body === undefined) {
      await writeResponse(rpcError(413, -32000, 'The request body is over 4 MiB'), out);
      return;
    }
    let parsedBody: unknown;
    if (body.length > 0) {
      try {
        parsedBody = JSON.parse(body.toString('utf8'));
      } catch {
        parsedBody = undefined;
      }
    }
    // The era is known before the web request is built (from what the SDK's classification
    // reads), so it is built once, with a signal only for the serving that reads one.
    const legacyEra = isLegacyEra(method, incoming.headers, parsedBody);
    // A plain call of an established session: served from Node's objects, no web request.
    if (
      legacyEra &&
      method === 'POST' &&
      fastPath &&
      servedFast(incoming, out, parsedBody, authInfo)
    ) {
      return;
    }
    // The caller's credential ends at the front door: nothing behind it sees the token.
    const headers: [string, string][] = [];
    for (const [name, value] of Object.entries(incoming.headers)) {
      if (name === 'authorization') continue;
      if (typeof value === 'string') headers.push([name, value]);
      else if (Array.isArray(value)) headers.push([name, value.join(', ')]);
    }
    if (parsedBody === undefined && method === 'POST') {
      await writeResponse(rpcError(400, -32700, 'Parse error: the body is not JSON'), out);
      return;
    }
    // The web request carries no body: every POST that reaches the SDK is handed its body parsed
    // (`parsedBody`; one that is not JSON is refused above), which the SDK then never reads.
    const gone = legacyEra ? undefined : clientGone(out);
    const request = new Request(`http://${incoming.headers.host ?? 'gateway.invalid'}/mcp`, {
      method,
      headers,
      ...(gone === undefined ? {} : { signal: gone.signal }),
    });
    // The request counts (toward its session's or the stateless share) until its response ends.
    const done = new Promise<void>((resolve) => out.once('close', () => resolve()));
    const response = legacyEra
      ? await legacy(request, parsedBody, done, authInfo)
      : await stateless(request, parsedBody, done, authInfo);
    // A stream that outlives its request (a `subscriptions/listen` stream, a legacy session's GET
    // stream) ends when the caller's token expires: the caller listens again with a fresh one.
    const expiresAt = authInfo?.expiresAt;
    let ends: AbortController | undefined;
    if (
      expiresAt !== undefined &&
      (legacyEra ? method === 'GET' : requestsIn(parsedBody, 'subscriptions/listen') > 0) &&
      !out.closed
    ) {
      const expiry = new AbortController();
      ends = expiry;
      endAtExpiry(out, expiresAt, () => {
        expiry.abort();
        gone?.abort();
      });
    }
    await writeResponse(response, out, ends?.signal);
  };
  const server = createServer((request, response) => {
    handle(request, response).catch(() => {
      if (!response.headersSent) response.writeHead(500);
      response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  allowedHosts = [`${shown}:${address.port}`, `localhost:${address.port}`];
  options.console?.listening(address.address, address.port, options.loopback);
  return {
    url: `http://${shown}:${address.port}/mcp`,
    close: async () => {
      unsubscribe();
      clearInterval(sweep);
      await modern.close().catch(() => undefined);
      await Promise.all([...sessions.values()].map((session) => session.transport.close()));
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
