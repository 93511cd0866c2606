import { randomBytes } from 'node:crypto';
import { type ApprovalSealKeys, SealBox } from './seal-box.js';
import { principalDigest } from './sealed-approval.js';

/** The version tag of a sealed legacy session id (`tfs1.<key id>.<sealed bytes>`). */
export const SEALED_SESSION_VERSION = 'tfs1';

/**
 * Default milliseconds a sealed legacy session id stays valid after its `initialize`, on any
 * replica: 86,400,000 (one day). Past it the session is answered 404 and the client starts anew.
 */
export const DEFAULT_HTTP_SESSION_MAX_AGE_MS = 86_400_000;

/**
 * Longest session state sealed into an id, in characters of its JSON (the negotiated version,
 * the client's capabilities and info): 4,096. A client whose state is longer gets a session of
 * the replica it reached only (a random id, as without a key).
 */
export const MAX_SEALED_SESSION_STATE_CHARS = 4_096;

/** Longest session id opened, in characters (a sealed state of the limit above fits). */
const MAX_SESSION_ID_CHARS = 8_192;

/** What a legacy (2025-11-25) session is on any replica: what its `initialize` said. */
export interface LegacySessionState {
  /** The protocol version the client asked for in `initialize`. */
  readonly protocolVersion: string;
  /** The client's capabilities (elicitation, roots, ...). */
  readonly capabilities: Readonly<Record<string, unknown>>;
  /** The client's name and version. */
  readonly clientInfo: Readonly<Record<string, unknown>>;
}

/**
 * Seals a legacy session's state into its `Mcp-Session-Id`, so a replica that never saw the
 * session can take its next request: AES-256-GCM under the shared sealing key (its own derived
 * key, apart from approvals'), binding the principal and an expiry.
 */
export class SessionSeal {
  readonly #box: SealBox;
  readonly #maxAgeMs: number;
  readonly #now: () => number;

  constructor(keys: ApprovalSealKeys, maxAgeMs: number, now: () => number = Date.now) {
    this.#box = new SealBox(keys, SEALED_SESSION_VERSION, 'toolfence gateway legacy session v1');
    this.#maxAgeMs = maxAgeMs;
    this.#now = now;
  }

  /** The sealed session id, or undefined when the state is over the limit (a local session). */
  seal(principal: string, state: LegacySessionState): string | undefined {
    const shown = JSON.stringify(state);
    if (shown.length > MAX_SEALED_SESSION_STATE_CHARS) return undefined;
    return this.#box.seal({
      i: randomBytes(12).toString('base64url'),
      p: principalDigest(principal),
      s: state,
      e: this.#now() + this.#maxAgeMs,
    });
  }

  /** The state sealed in `id` for `principal`; undefined when forged, expired or another's. */
  open(id: string, principal: string): LegacySessionState | undefined {
    const payload = this.#box.open(id, MAX_SESSION_ID_CHARS);
    if (typeof payload === 'string') return undefined;
    const { p, s, e } = payload;
    if (p !== principalDigest(principal)) return undefined;
    if (typeof e !== 'number' || e <= this.#now()) return undefined;
    const state = s as Partial<LegacySessionState> | null;
    if (
      typeof state !== 'object' ||
      state === null ||
      typeof state.protocolVersion !== 'string' ||
      typeof state.capabilities !== 'object' ||
      state.capabilities === null ||
      typeof state.clientInfo !== 'object' ||
      state.clientInfo === null
    ) {
      return undefined;
    }
    return state as LegacySessionState;
  }
}

/** The session state an `initialize` request carries, or undefined when it is not one. */
export function sessionStateOf(body: unknown): LegacySessionState | undefined {
  const message = body as { method?: unknown; params?: Record<string, unknown> } | null;
  if (message?.method !== 'initialize' || typeof message.params !== 'object') return undefined;
  const { protocolVersion, capabilities, clientInfo } = message.params ?? {};
  if (typeof protocolVersion !== 'string') return undefined;
  return {
    protocolVersion,
    capabilities: (typeof capabilities === 'object' && capabilities !== null
      ? capabilities
      : {}) as Record<string, unknown>,
    clientInfo: (typeof clientInfo === 'object' && clientInfo !== null ? clientInfo : {}) as Record<
      string,
      unknown
    >,
  };
}
