import { randomBytes } from 'node:crypto';

/** Default number of approvals asked through `input_required` and not yet answered. */
export const DEFAULT_MAX_PENDING_APPROVALS: number = 1000;

/** What one approval covers: one exact call. */
export interface ApprovalBinding {
  /** The offered name (`server__tool`). */
  readonly tool: string;
  /** The definition pin the user was shown. */
  readonly pin: string;
  /** `sha256:` digest of the canonical JSON of the arguments the user was shown. */
  readonly argumentsDigest: string;
}

/** Why a presented approval does not cover the call: see {@link ApprovalGrants.redeem}. */
export type ApprovalRefusal = 'unknown' | 'expired' | 'mismatch';

interface Pending extends ApprovalBinding {
  readonly expiresAt: number;
}

/**
 * The approvals the gateway asked for through an `input_required` result (MCP 2026-07-28), each
 * bound to one exact call. The `requestState` handed to the client is an opaque random handle
 * (256 bits) naming an entry held here, so nothing the client sends back can widen it: the entry
 * is taken out on first use (single use, whatever the outcome), refused after `ttlMs`, and
 * refused when the retried call's tool, pin or argument digest differ from what the user was
 * shown. At most `maxPending` entries are held; beyond it the oldest is dropped (that approval
 * then fails closed and the user is asked again).
 */
export class ApprovalGrants {
  readonly #pending = new Map<string, Pending>();
  readonly #ttlMs: number;
  readonly #maxPending: number;
  readonly #now: () => number;

  /** `ttlMs`: how long an asked approval may be answered; `maxPending`: entries held at most. */
  constructor(ttlMs: number, maxPending: number, now: () => number = Date.now) {
    this.#ttlMs = ttlMs;
    this.#maxPending = maxPending;
    this.#now = now;
  }

  /** Entries held (asked, not yet answered, not expired at the last prune). */
  get size(): number {
    return this.#pending.size;
  }

  /** Records an approval asked for `binding`; returns the opaque `requestState` handle. */
  issue(binding: ApprovalBinding): string {
    const now = this.#now();
    for (const [handle, entry] of this.#pending) {
      if (entry.expiresAt > now) break;
      this.#pending.delete(handle);
    }
    while (this.#pending.size >= this.#maxPending) {
      const oldest = this.#pending.keys().next().value as string;
      this.#pending.delete(oldest);
    }
    const handle = `tfa1.${randomBytes(32).toString('base64url')}`;
    this.#pending.set(handle, {
      tool: binding.tool,
      pin: binding.pin,
      argumentsDigest: binding.argumentsDigest,
      expiresAt: now + this.#ttlMs,
    });
    return handle;
  }

  /**
   * Takes the entry named by `handle` out (single use) and checks it covers `call`: `unknown`
   * (never issued, already used, or dropped), `expired`, `mismatch` (another tool, pin or
   * arguments), or `undefined` when it covers the call.
   */
  redeem(handle: string, call: ApprovalBinding): ApprovalRefusal | undefined {
    const entry = this.#pending.get(handle);
    if (entry === undefined) return 'unknown';
    this.#pending.delete(handle);
    if (entry.expiresAt <= this.#now()) return 'expired';
    if (
      entry.tool !== call.tool ||
      entry.pin !== call.pin ||
      entry.argumentsDigest !== call.argumentsDigest
    ) {
      return 'mismatch';
    }
    return undefined;
  }
}
