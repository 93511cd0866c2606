import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  hkdfSync,
  randomBytes,
} from 'node:crypto';
import { GatewayConfigError } from './errors.js';

/** The version tag every sealed `requestState` starts with (`tfa2.<key id>.<sealed bytes>`). */
export const SEALED_APPROVAL_VERSION = 'tfa2';

/**
 * Default longest `requestState` the gateway tries to open, in characters: 4,096. A longer one is
 * refused as forged without being decrypted (the ones it seals are about 400).
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
  readonly tool: string;
  readonly pin: string;
  readonly argumentsDigest: string;
  /** Milliseconds since the epoch after which it is refused. */
  readonly expiresAt: number;
}

/** The sealing keys: the current one seals and opens; previous ones only open (rotation). */
export interface ApprovalSealKeys {
  /** 32 bytes shared by every replica (`gateway.sealKey`, `TOOLFENCE_SEAL_KEY`). */
  readonly current: Uint8Array;
  /** Keys rotated out, still accepted to open what they sealed (`TOOLFENCE_SEAL_KEY_PREVIOUS`). */
  readonly previous?: readonly Uint8Array[];
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
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const INFO = 'toolfence gateway approval seal v2';

interface SealKey {
  readonly id: string;
  readonly aead: Buffer;
}

function keyOf(raw: Uint8Array, at: string): SealKey {
  if (!(raw instanceof Uint8Array) || raw.length !== KEY_BYTES) {
    throw new GatewayConfigError(`${at} must be ${KEY_BYTES} bytes`, { details: { option: at } });
  }
  // Domain separation: the bytes a replica shares are never used as the AEAD key themselves, so
  // the same secret reused for something else cannot meet these ciphertexts.
  const aead = Buffer.from(hkdfSync('sha256', raw, Buffer.alloc(0), INFO, KEY_BYTES));
  // The key's public name in a token: 64 bits of an HMAC, which says nothing of the key.
  const id = createHmac('sha256', raw).update('toolfence approval key id').digest('base64url');
  return { id: id.slice(0, 11), aead };
}

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
  readonly #current: SealKey;
  readonly #keys: ReadonlyMap<string, SealKey>;
  readonly #ttlMs: number;
  readonly #maxChars: number;
  readonly #now: () => number;
  /** True when no key was given: a random key of this process seals. */
  readonly ephemeral: boolean;

  constructor(options: ApprovalSealOptions) {
    for (const key of Object.keys(options)) {
      if (!OPTION_KEYS.includes(key)) {
        throw new GatewayConfigError(
          `ApprovalSeal: unknown option "${key}" (accepted: ${OPTION_KEYS.join(', ')})`,
          { details: { option: key } },
        );
      }
    }
    this.ephemeral = options.keys === undefined;
    this.#current = keyOf(options.keys?.current ?? randomBytes(KEY_BYTES), 'sealKey');
    const keys = new Map<string, SealKey>([[this.#current.id, this.#current]]);
    for (const raw of options.keys?.previous ?? []) {
      const key = keyOf(raw, 'sealKeyPrevious');
      if (!keys.has(key.id)) keys.set(key.id, key);
    }
    this.#keys = keys;
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
    const payload = JSON.stringify({
      i: randomBytes(16).toString('base64url'),
      p: principalDigest(binding.principal),
      t: binding.tool,
      n: binding.pin,
      a: binding.argumentsDigest,
      e: this.#now() + this.#ttlMs,
    });
    const header = `${SEALED_APPROVAL_VERSION}.${this.#current.id}`;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#current.aead, iv);
    cipher.setAAD(Buffer.from(header, 'utf8'));
    const sealed = Buffer.concat([cipher.update(payload, 'utf8'), cipher.final()]);
    return `${header}.${Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url')}`;
  }

  /**
   * Opens a presented `requestState`: the approval, `unknown` (a well-formed token sealed under
   * a key this gateway does not hold: rotated out, or another deployment's) or `forged` (not a
   * sealed approval, too long, altered, or not decrypting). Expiry and binding are the caller's.
   */
  open(state: string): OpenedApproval | 'unknown' | 'forged' {
    if (state.length > this.#maxChars) return 'forged';
    const parts = state.split('.');
    if (parts.length !== 3 || parts[0] !== SEALED_APPROVAL_VERSION) return 'forged';
    const [version, id, body] = parts as [string, string, string];
    if (!/^[A-Za-z0-9_-]{11}$/.test(id) || !/^[A-Za-z0-9_-]+$/.test(body)) return 'forged';
    const key = this.#keys.get(id);
    if (key === undefined) return 'unknown';
    const bytes = Buffer.from(body, 'base64url');
    if (bytes.length <= IV_BYTES + TAG_BYTES) return 'forged';
    let text: string;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key.aead, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(`${version}.${id}`, 'utf8'));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      text = Buffer.concat([
        decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      return 'forged';
    }
    let payload: Record<string, unknown>;
    try {
      payload = JSON.parse(text) as Record<string, unknown>;
    } catch {
      return 'forged';
    }
    const { i, p, t, n, a, e } = payload ?? {};
    if (!isField(i) || !isField(p) || !isField(t) || !isField(n) || !isField(a)) return 'forged';
    if (typeof e !== 'number' || !Number.isSafeInteger(e)) return 'forged';
    return { id: i, principalDigest: p, tool: t, pin: n, argumentsDigest: a, expiresAt: e };
  }
}
