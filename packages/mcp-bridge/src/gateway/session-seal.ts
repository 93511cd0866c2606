import { createHash, randomBytes } from 'node:crypto';
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
    return this.openSession(id, principal)?.state;
  }

  /**
   * The state sealed in `id` for `principal` and when the id expires; undefined when forged,
   * expired or another's.
   */
  openSession(id: string, principal: string): OpenedSession | undefined {
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
    return { state: state as LegacySessionState, expiresAt: e };
  }
}

/** A sealed session id opened: its state and its expiry. */
export interface OpenedSession {
  /** What its `initialize` said. */
  readonly state: LegacySessionState;
  /** When the id stops being valid, in milliseconds since the epoch. */
  readonly expiresAt: number;
}

/**
 * The flow session of a sealed legacy session: `connection:` and a digest of its id (never the
 * id), the same on every replica and after every resumption, so a resumed session continues the
 * labels this process holds for it.
 */
export function sealedFlowSession(id: string): string {
  return `connection:${createHash('sha256').update(id, 'utf8').digest('hex').slice(0, 32)}`;
}

/**
 * Keys remembered until their expiry, at most `max` of them: adding one more forgets the oldest
 * added (which is returned). The HTTP front keeps two, of sealed sessions' flow sessions: the
 * sessions this process held, and the sessions deleted here.
 */
export class RememberedSessions {
  readonly #expiries = new Map<string, number>();
  readonly #max: number;
  readonly #now: () => number;

  constructor(max: number, now: () => number = Date.now) {
    this.#max = max;
    this.#now = now;
  }

  /** Remembers `key` until `expiresAt` (ms); returns the key forgotten to make room, if one was. */
  add(key: string, expiresAt: number): string | undefined {
    this.#expiries.delete(key);
    this.#expiries.set(key, expiresAt);
    if (this.#expiries.size <= this.#max) return undefined;
    const oldest = this.#expiries.keys().next().value as string;
    this.#expiries.delete(oldest);
    return oldest;
  }

  /** True when `key` is remembered and not expired. */
  has(key: string): boolean {
    const expiresAt = this.#expiries.get(key);
    return expiresAt !== undefined && expiresAt > this.#now();
  }

  /** Forgets `key`; true when it was remembered. */
  delete(key: string): boolean {
    return this.#expiries.delete(key);
  }

  /** Forgets the expired keys and returns them. */
  sweep(): string[] {
    const now = this.#now();
    const expired: string[] = [];
    for (const [key, expiresAt] of this.#expiries) {
      if (expiresAt <= now) expired.push(key);
    }
    for (const key of expired) this.#expiries.delete(key);
    return expired;
  }

  /** Keys remembered (expired ones not swept yet included). */
  get size(): number {
    return this.#expiries.size;
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
