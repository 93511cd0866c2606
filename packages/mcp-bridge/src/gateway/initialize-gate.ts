import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { isRecord } from '../is-record.js';
import { printableText } from '../printable-text.js';
import { type MessageExtra, WrappedTransport } from './wrapped-transport.js';

/** Where a downstream stdio connection stands, as {@link InitializeGate} reads it per request. */
export type GateState =
  /** No era chosen yet: no request has reached the SDK's `serveStdio`. */
  | 'opening'
  /** A 2025-11-25 connection whose client has not initialized (no `initialize` answered yet). */
  | 'uninitialized'
  /** Initialized (2025-11-25), or a 2026-07-28 connection: every request is served. */
  | 'open';

/** The `data.code` of the JSON-RPC error a request gets before its connection initialized. */
export const GATEWAY_NOT_INITIALIZED = 'GATEWAY_NOT_INITIALIZED';

/** The JSON-RPC code of that error: Invalid Request. */
const INVALID_REQUEST = -32600;

/** The `_meta` key that claims the 2026-07-28 era on a request (its per-request envelope). */
const ENVELOPE_CLAIM = 'io.modelcontextprotocol/protocolVersion';

/** Requests served before `initialize`: the handshake itself, `ping`, the 2026-07-28 probe. */
const BEFORE_INITIALIZE: ReadonlySet<string> = new Set(['initialize', 'ping', 'server/discover']);

/** True when `params._meta` claims the 2026-07-28 era (the SDK checks the envelope itself). */
function claimsModernEra(params: unknown): boolean {
  return isRecord(params) && isRecord(params._meta) && params._meta[ENVELOPE_CLAIM] !== undefined;
}

/**
 * The downstream stdio transport of a gateway connection, in front of the one it is given: until
 * the connection has initialized, a request other than `initialize`, `ping` (and the 2026-07-28
 * `server/discover` probe) is answered with a JSON-RPC error (`-32600`, `data.code`
 * `GATEWAY_NOT_INITIALIZED`) and goes no further, as MCP 2025-11-25 asks of a server. A
 * 2026-07-28 client sends no `initialize`: its requests carry the era's `_meta` envelope, and
 * once the connection is pinned to that era (or, opening, when the request claims it) they pass,
 * for the SDK to check. Notifications and responses always pass. Once open, a connection stays
 * open (the state is read no more).
 */
export class InitializeGate extends WrappedTransport {
  readonly #state: () => GateState;
  #open = false;

  /** A gate in front of `inner`; `state` says where the connection stands when a request comes. */
  constructor(inner: Transport, state: () => GateState) {
    super(inner);
    this.#state = state;
  }

  /** Passes `message` on when it may go on (see {@link InitializeGate}). */
  protected override inbound(message: JSONRPCMessage, extra: MessageExtra): void {
    if (this.#open || this.#admits(message)) this.onmessage?.(message, extra);
  }

  /** True when `message` may go on; a request that may not is answered here. */
  #admits(message: JSONRPCMessage): boolean {
    const request = message as { method?: unknown; id?: unknown; params?: unknown };
    if (typeof request.method !== 'string' || request.id === undefined) return true;
    const state = this.#state();
    if (state === 'open') {
      this.#open = true;
      return true;
    }
    if (BEFORE_INITIALIZE.has(request.method)) return true;
    if (state === 'opening' && claimsModernEra(request.params)) return true;
    const method = printableText(request.method, 64);
    this.inner
      .send({
        jsonrpc: '2.0',
        id: request.id as string | number,
        error: {
          code: INVALID_REQUEST,
          message: `The gateway answers ${method} only after initialize: send initialize, wait for its answer and send notifications/initialized first (only ping is answered before it). A 2026-07-28 client sends its _meta envelope on every request instead.`,
          data: { code: GATEWAY_NOT_INITIALIZED, method },
        },
      })
      .catch((error: unknown) => {
        this.onerror?.(error instanceof Error ? error : new Error(String(error)));
      });
    return false;
  }
}
