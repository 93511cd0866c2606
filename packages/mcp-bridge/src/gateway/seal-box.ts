import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { GatewayConfigError } from './errors.js';

/** The sealing keys: the current one seals and opens; previous ones only open (rotation). */
export interface ApprovalSealKeys {
  /** 32 bytes shared by every replica (`gateway.sealKey`, `TOOLFENCE_SEAL_KEY`). */
  readonly current: Uint8Array;
  /** Keys rotated out, still accepted to open what they sealed (`TOOLFENCE_SEAL_KEY_PREVIOUS`). */
  readonly previous?: readonly Uint8Array[];
}

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

interface SealKey {
  readonly id: string;
  readonly aead: Buffer;
}

function keyOf(raw: Uint8Array, at: string, info: string): SealKey {
  if (!(raw instanceof Uint8Array) || raw.length !== KEY_BYTES) {
    throw new GatewayConfigError(`${at} must be ${KEY_BYTES} bytes`, { details: { option: at } });
  }
  // Domain separation: the shared bytes are never the AEAD key themselves, and each use (an
  // approval, a session) derives its own, so a token of one kind never opens as another.
  const aead = Buffer.from(hkdfSync('sha256', raw, Buffer.alloc(0), info, KEY_BYTES));
  // The key's public name in a token: 64 bits of an HMAC, which says nothing of the key.
  const id = createHmac('sha256', raw).update(`key id: ${info}`).digest('base64url');
  return { id: id.slice(0, 11), aead };
}

/**
 * JSON sealed with AES-256-GCM into `<version>.<key id>.<base64url(iv | ciphertext | tag)>`:
 * a fresh 96-bit IV each time, the version and key id as associated data, the key derived with
 * HKDF-SHA256 from the shared 32 bytes and `info`. Opens under the current or a previous key.
 */
export class SealBox {
  readonly #version: string;
  readonly #current: SealKey;
  readonly #keys: ReadonlyMap<string, SealKey>;
  /** True when no key was given: a random key of this process seals. */
  readonly ephemeral: boolean;

  constructor(keys: ApprovalSealKeys | undefined, version: string, info: string) {
    this.#version = version;
    this.ephemeral = keys === undefined;
    this.#current = keyOf(keys?.current ?? randomBytes(KEY_BYTES), 'sealKey', info);
    const all = new Map<string, SealKey>([[this.#current.id, this.#current]]);
    for (const raw of keys?.previous ?? []) {
      const key = keyOf(raw, 'sealKeyPrevious', info);
      if (!all.has(key.id)) all.set(key.id, key);
    }
    this.#keys = all;
  }

  /** Seals `payload` (JSON) under the current key. */
  seal(payload: unknown): string {
    const header = `${this.#version}.${this.#current.id}`;
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#current.aead, iv);
    cipher.setAAD(Buffer.from(header, 'utf8'));
    const sealed = Buffer.concat([cipher.update(JSON.stringify(payload), 'utf8'), cipher.final()]);
    return `${header}.${Buffer.concat([iv, sealed, cipher.getAuthTag()]).toString('base64url')}`;
  }

  /**
   * The JSON object sealed in `token`; `unknown` for a well-formed token of a key this process
   * does not hold; `forged` for anything else (longer than `maxChars`, another version, altered,
   * not decrypting, not an object).
   */
  open(token: string, maxChars: number): Record<string, unknown> | 'unknown' | 'forged' {
    if (token.length > maxChars) return 'forged';
    const parts = token.split('.');
    if (parts.length !== 3 || parts[0] !== this.#version) return 'forged';
    const [version, id, body] = parts as [string, string, string];
    if (!/^[A-Za-z0-9_-]{11}$/.test(id) || !/^[A-Za-z0-9_-]+$/.test(body)) return 'forged';
    const key = this.#keys.get(id);
    if (key === undefined) return 'unknown';
    const bytes = Buffer.from(body, 'base64url');
    if (bytes.length <= IV_BYTES + TAG_BYTES) return 'forged';
    try {
      const decipher = createDecipheriv('aes-256-gcm', key.aead, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(`${version}.${id}`, 'utf8'));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      const text = Buffer.concat([
        decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
      const payload: unknown = JSON.parse(text);
      return typeof payload === 'object' && payload !== null && !Array.isArray(payload)
        ? (payload as Record<string, unknown>)
        : 'forged';
    } catch {
      return 'forged';
    }
  }
}
