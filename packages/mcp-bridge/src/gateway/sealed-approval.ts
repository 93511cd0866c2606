import { createHash, randomBytes } from 'node:crypto';
import { GatewayConfigError } from './errors.js';
import { type ApprovalSealKeys, SealBox } from './seal-box.js';

export type { ApprovalSealKeys } from './seal-box.js';

/** The version tag every sealed `requestState` starts with (`tfa2.<key id>.<sealed bytes>`). */
export const SEALED_APPROVAL_VERSION = 'tfa2';

/**
 * Default longest `requestState` the gateway tries to open, in characters: 4,096. A longer one is
 * refused as forged without being decrypted (the ones it seals are about 460).
 */
export const DEFAULT_MAX_REQUEST_STATE_CHARS = 4_096;

/** Longest principal, tool name, pin or digest bound into a sealed approval, in characters. */
const MAX_FIELD_CHARS = 1_024;

/** What one approval covers: one exact call of one caller. */
export interface ApprovalBinding {
  /**
   * Who asked: `issuer|subject` of the caller's token, or the gateway's fixed principal when it
   * knows one caller only (the static bearer token, stdio). Sealed as its SHA-256 digest.
   */
  readonly principal: string;
  /** The offered name (`server__tool`). */
  readonly tool: string;
  /** The definition pin the user was shown. */
  readonly pin: string;
  /** `sha256:` digest of the canonical JSON of the arguments the user was shown. */
  readonly argumentsDigest: string;
}

/** A sealed approval as opened: its binding (principal as a digest), its id and its expiry. */
export interface OpenedApproval {
  /** Random 128-bit id: what single use is recorded under. */
  readonly id: string;
  /** `sha256:` digest of the principal it was given to. */
  readonly principalDigest: string;
  /** The offered name it was given for. */
  readonly tool: string;
  /** The definition pin the user was shown. */
  readonly pin: string;
  /** `sha256:` digest of the arguments the user was shown. */
  readonly argumentsDigest: string;
  /** Milliseconds since the epoch after which it is refused. */
  readonly expiresAt: number;
}

/** Options of {@link ApprovalSeal}. Unknown keys are refused. */
export interface ApprovalSealOptions {
  /** The keys; absent: a random key of this process alone (an approval is honoured only here). */
  readonly keys?: ApprovalSealKeys;
  /** Milliseconds an approval may be answered after it is asked. */
  readonly ttlMs: number;
  /** Longest `requestState` opened, in characters. Default {@link DEFAULT_MAX_REQUEST_STATE_CHARS}. */
  readonly maxRequestStateChars?: number;
  /** The clock (milliseconds since the epoch). Default `Date.now`. */
  readonly now?: () => number;
}

const OPTION_KEYS = ['keys', 'ttlMs', 'maxRequestStateChars', 'now'];

/** `sha256:` hex digest of a principal, as sealed. */
export function principalDigest(principal: string): string {
  return `sha256:${createHash('sha256').update(principal, 'utf8').digest('hex')}`;
}

function isField(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= MAX_FIELD_CHARS;
}

/**
 * Seals approvals into the `requestState` of an `input_required` result (MCP 2026-07-28), so
 * any replica holding the key can check a retry: AES-256-GCM under a key derived (HKDF-SHA256)
 * from the shared 32 bytes, with a fresh 96-bit IV per approval, the version and key id as
 * associated data, and inside: a random 128-bit id, the principal's digest, the tool, the
 * definition's pin, the arguments' digest and the expiry. Nothing the client sends back can be
 * altered or forged without the key; single use is the spent store's job (`ApprovalGrants`).
 */
export class ApprovalSeal {
  readonly #box: SealBox;
  readonly #ttlMs: number;
  readonly #maxChars: number;
  readonly #now: () => number;
  /** True when no key was given: a random key of this process seals. */
  readonly ephemeral: boolean;

  /**
   * A seal under `options.keys` (a random key of this process without), with `ttlMs` of life.
   * @throws {GatewayConfigError} for an unknown option, a key that is not 32 bytes, or a
   *   `maxRequestStateChars` under 64.
   */
  constructor(options: ApprovalSealOptions) {
    for (const key of Object.keys(options)) {
      if (!OPTION_KEYS.includes(key)) {
        throw new GatewayConfigError(
          `ApprovalSeal: unknown option "${key}" (accepted: ${OPTION_KEYS.join(', ')})`,
          { details: { option: key } },
        );
      }
    }
    this.#box = new SealBox(
      options.keys,
      SEALED_APPROVAL_VERSION,
      'toolfence gateway approval seal v2',
    );
    this.ephemeral = this.#box.ephemeral;
    this.#ttlMs = options.ttlMs;
    this.#maxChars = options.maxRequestStateChars ?? DEFAULT_MAX_REQUEST_STATE_CHARS;
    if (!Number.isSafeInteger(this.#maxChars) || this.#maxChars < 64) {
      throw new GatewayConfigError('maxRequestStateChars must be a whole number of at least 64', {
        details: { option: 'maxRequestStateChars' },
      });
    }
    this.#now = options.now ?? Date.now;
  }

  /** Seals one approval of `binding`, expiring `ttlMs` from now; returns the `requestState`. */
  seal(binding: ApprovalBinding): string {
    return this.#box.seal({
      i: randomBytes(16).toString('base64url'),
      p: principalDigest(binding.principal),
      t: binding.tool,
      n: binding.pin,
      a: binding.argumentsDigest,
      e: this.#now() + this.#ttlMs,
    });
  }

  /**
   * Opens a presented `requestState`: the approval, `unknown` (a well-formed token sealed under
   * a key this gateway does not hold: rotated out, or another deployment's) or `forged` (not a
   * sealed approval, too long, altered, or not decrypting). Expiry and binding are the caller's.
   */
  open(state: string): OpenedApproval | 'unknown' | 'forged' {
    const payload = this.#box.open(state, this.#maxChars);
    if (typeof payload === 'string') return payload;
    const { i, p, t, n, a, e } = payload;
    if (!isField(i) || !isField(p) || !isField(t) || !isField(n) || !isField(a)) return 'forged';
    if (typeof e !== 'number' || !Number.isSafeInteger(e)) return 'forged';
    return { id: i, principalDigest: p, tool: t, pin: n, argumentsDigest: a, expiresAt: e };
  }
}
