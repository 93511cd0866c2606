import { type ApprovalSpentStore, MemorySpentApprovals } from './approval-spent-store.js';
import { type ApprovalBinding, type ApprovalSeal, principalDigest } from './sealed-approval.js';

export type { ApprovalBinding } from './sealed-approval.js';

/**
 * @deprecated Approvals are sealed into `requestState` and no longer held by the gateway; the
 * option `maxPendingApprovals` is accepted and has no effect. Removed in the next minor.
 */
export const DEFAULT_MAX_PENDING_APPROVALS: number = 1000;

/**
 * Why a presented approval does not cover the call (the order the gateway checks in is in the
 * README).
 * `unknown`: none presented, or sealed under a key this gateway does not hold; `forged`: not a
 * sealed approval, altered, or not decrypting; `expired`; `other-principal`: given to another
 * caller; `replayed`: presented before (on any replica); `mismatch`: another tool, pin or
 * arguments; `unavailable`: single use cannot be recorded (store unreachable or full).
 */
export type ApprovalRefusal =
  | 'unknown'
  | 'forged'
  | 'expired'
  | 'other-principal'
  | 'replayed'
  | 'mismatch'
  | 'unavailable';

/**
 * The approvals the gateway asks for through an `input_required` result (MCP 2026-07-28), each
 * bound to one exact call of one caller. The `requestState` handed to the client is sealed
 * ({@link ApprovalSeal}): any replica with the key checks a retry without having asked, and
 * single use is recorded in the spent store shared by the replicas (memory for one gateway).
 */
export class ApprovalGrants {
  readonly #seal: ApprovalSeal;
  readonly #spent: ApprovalSpentStore;
  readonly #now: () => number;

  constructor(
    seal: ApprovalSeal,
    spent: ApprovalSpentStore = new MemorySpentApprovals(),
    now: () => number = Date.now,
  ) {
    this.#seal = seal;
    this.#spent = spent;
    this.#now = now;
  }

  /** Where single use is recorded. */
  get store(): ApprovalSpentStore {
    return this.#spent;
  }

  /** Seals an approval asked for `binding`; returns the `requestState`. */
  issue(binding: ApprovalBinding): string {
    return this.#seal.seal(binding);
  }

  /**
   * Checks a presented `requestState` covers `call`, and spends it: refused as `unknown`,
   * `forged`, `expired` or `other-principal` (nothing is spent: it is not this caller's); then
   * spent in the shared store (`replayed` when it was spent before, `unavailable` when the store
   * cannot record it), whatever the outcome below; then `mismatch` for another tool, pin or
   * arguments. `undefined`: it covers the call, and no other presentation will.
   */
  async redeem(state: unknown, call: ApprovalBinding): Promise<ApprovalRefusal | undefined> {
    if (typeof state !== 'string') return 'unknown';
    const opened = this.#seal.open(state);
    if (typeof opened === 'string') return opened;
    if (opened.expiresAt <= this.#now()) return 'expired';
    if (opened.principalDigest !== principalDigest(call.principal)) return 'other-principal';
    let first: boolean;
    try {
      first = await this.#spent.spend(opened.id, opened.expiresAt);
    } catch {
      return 'unavailable';
    }
    if (!first) return 'replayed';
    if (
      opened.tool !== call.tool ||
      opened.pin !== call.pin ||
      opened.argumentsDigest !== call.argumentsDigest
    ) {
      return 'mismatch';
    }
    return undefined;
  }
}
