// DPoP (RFC 9449): one ES256 key pair per connection, proofs for token and MCP requests, and the
// latest server-provided nonce per origin.

import { webcrypto } from 'node:crypto';
import * as oauth from 'oauth4webapi';
import type { DpopKeyRecord } from '../store/connection-store.js';
import { checkNonce } from './dpop-nonce.js';
import { OAuthDpopError } from './errors.js';

/** The proof algorithm this client signs with. */
export const DPOP_ALGORITHM = 'ES256';

const EC = { name: 'ECDSA', namedCurve: 'P-256' } as const;
/** Most origins whose nonce is remembered per key (least recently used dropped first). */
const MAX_NONCE_ORIGINS = 100;

function base64url(bytes: Uint8Array | ArrayBuffer): string {
  return Buffer.from(bytes instanceof ArrayBuffer ? new Uint8Array(bytes) : bytes).toString(
    'base64url',
  );
}

function encodeJson(value: unknown): string {
  return base64url(Buffer.from(JSON.stringify(value), 'utf8'));
}

/** The RFC 9449 `htu`: the request URL without query and fragment. */
export function dpopTarget(url: string | URL): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

/**
 * A connection's DPoP key: signs proofs (fresh `jti`, `iat`, `htm`, `htu` without query or
 * fragment, `ath` for resource requests, the origin's latest nonce). The private key is a
 * non-extractable WebCrypto key; the JWK it came from lives only in the store's encrypted payload.
 */
export class DpopKey {
  /** The key pair (private key non-extractable), for oauth4webapi's DPoP handle. */
  readonly keyPair: webcrypto.CryptoKeyPair;
  /** The public JWK (`kty`, `crv`, `x`, `y`) put in every proof header. */
  readonly publicJwk: Readonly<Record<string, string>>;
  /** oauth4webapi's handle for token requests (caches the authorization server's nonces). */
  readonly handle: oauth.DPoPHandle;
  readonly #nonces = new Map<string, string>();

  private constructor(keyPair: webcrypto.CryptoKeyPair, publicJwk: Record<string, string>) {
    this.keyPair = keyPair;
    this.publicJwk = Object.freeze(publicJwk);
    this.handle = oauth.DPoP({}, keyPair as unknown as Parameters<typeof oauth.DPoP>[1]);
  }

  /** Creates a new ES256 key pair and the record to persist it with (secret). */
  static async generate(): Promise<{ readonly key: DpopKey; readonly record: DpopKeyRecord }> {
    const pair = await webcrypto.subtle.generateKey(EC, true, ['sign', 'verify']);
    const jwk = (await webcrypto.subtle.exportKey('jwk', pair.privateKey)) as Record<
      string,
      string
    >;
    const record: DpopKeyRecord = {
      privateJwk: Object.freeze({
        kty: 'EC',
        crv: 'P-256',
        x: jwk.x as string,
        y: jwk.y as string,
        d: jwk.d as string,
      }),
    };
    return { key: await DpopKey.fromRecord(record), record };
  }

  /**
   * Imports a stored key (cached per public key, so nonces survive between calls).
   * @throws {OAuthDpopError} `invalid-key` when the record is not an EC P-256 private JWK.
   */
  static async fromRecord(record: DpopKeyRecord): Promise<DpopKey> {
    const jwk = record?.privateJwk;
    if (
      typeof jwk !== 'object' ||
      jwk === null ||
      jwk.kty !== 'EC' ||
      jwk.crv !== 'P-256' ||
      typeof jwk.x !== 'string' ||
      typeof jwk.y !== 'string' ||
      typeof jwk.d !== 'string'
    ) {
      throw new OAuthDpopError('the stored DPoP key is not an EC P-256 private key', {
        reason: 'invalid-key',
      });
    }
    const cacheKey = `${jwk.x}.${jwk.y}`;
    const cached = CACHE.get(cacheKey);
    if (cached !== undefined) return cached;
    const publicJwk = { kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y };
    let pair: webcrypto.CryptoKeyPair;
    try {
      pair = {
        privateKey: await webcrypto.subtle.importKey('jwk', { ...publicJwk, d: jwk.d }, EC, false, [
          'sign',
        ]),
        publicKey: await webcrypto.subtle.importKey('jwk', publicJwk, EC, true, ['verify']),
      };
    } catch {
      // The key material is never echoed.
      throw new OAuthDpopError('the stored DPoP key could not be imported', {
        reason: 'invalid-key',
      });
    }
    const key = new DpopKey(pair, publicJwk);
    if (CACHE.size >= MAX_CACHED_KEYS) CACHE.delete(CACHE.keys().next().value as string);
    CACHE.set(cacheKey, key);
    return key;
  }

  /** The RFC 7638 SHA-256 thumbprint of the public key (the token's `cnf.jkt`). */
  async thumbprint(): Promise<string> {
    return this.handle.calculateThumbprint();
  }

  /** Remembers a server's `DPoP-Nonce` for `url`'s origin (the latest one wins). */
  rememberNonce(url: string | URL, nonce: string | null | undefined): void {
    const value = checkNonce(nonce);
    if (value === undefined) return;
    const origin = new URL(url).origin;
    this.#nonces.delete(origin);
    if (this.#nonces.size >= MAX_NONCE_ORIGINS) {
      this.#nonces.delete(this.#nonces.keys().next().value as string);
    }
    this.#nonces.set(origin, value);
  }

  /** The latest nonce remembered for `url`'s origin. */
  nonce(url: string | URL): string | undefined {
    return this.#nonces.get(new URL(url).origin);
  }

  /**
   * A proof JWT for one request (RFC 9449 §4.2): `typ: dpop+jwt`, ES256, the public JWK; claims
   * `jti` (128 random bits), `htm`, `htu` (no query or fragment), `iat`, the origin's nonce, and
   * `ath` (SHA-256 of the access token) when one is presented.
   */
  async proof(method: string, url: string | URL, accessToken?: string): Promise<string> {
    const header = { typ: 'dpop+jwt', alg: DPOP_ALGORITHM, jwk: this.publicJwk };
    const payload: Record<string, unknown> = {
      jti: base64url(webcrypto.getRandomValues(new Uint8Array(16))),
      htm: method.toUpperCase(),
      htu: dpopTarget(url),
      iat: Math.floor(Date.now() / 1000),
    };
    const nonce = this.nonce(url);
    if (nonce !== undefined) payload.nonce = nonce;
    if (accessToken !== undefined) {
      payload.ath = base64url(
        await webcrypto.subtle.digest('SHA-256', Buffer.from(accessToken, 'ascii')),
      );
    }
    const input = `${encodeJson(header)}.${encodeJson(payload)}`;
    const signature = await webcrypto.subtle.sign(
      { name: 'ECDSA', hash: 'SHA-256' },
      this.keyPair.privateKey,
      Buffer.from(input, 'ascii'),
    );
    return `${input}.${base64url(signature)}`;
  }
}

const MAX_CACHED_KEYS = 256;
const CACHE = new Map<string, DpopKey>();

/**
 * Checks that a server's list of DPoP proof algorithms (when it gives one) includes ES256.
 * @throws {OAuthDpopError} `unsupported-algorithm` otherwise.
 */
export function checkDpopAlgorithms(listed: unknown): void {
  if (listed === undefined) return;
  if (!Array.isArray(listed) || !listed.includes(DPOP_ALGORITHM)) {
    throw new OAuthDpopError('the server does not accept ES256 DPoP proofs', {
      reason: 'unsupported-algorithm',
    });
  }
}

/**
 * Runs a token request (request and response processing) with the DPoP handle; a
 * `use_dpop_nonce` answer is retried once with the nonce the server gave (the handle keeps it
 * per origin). A second one in a row is {@link OAuthDpopError} `nonce-loop`.
 */
export async function withDpopNonceRetry<T>(
  key: DpopKey | undefined,
  run: () => Promise<T>,
): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (key === undefined || !oauth.isDPoPNonceError(error)) throw error;
  }
  try {
    return await run();
  } catch (error) {
    if (oauth.isDPoPNonceError(error)) {
      throw new OAuthDpopError(
        'the authorization server asked for a DPoP nonce twice in a row; giving up',
        { reason: 'nonce-loop' },
      );
    }
    throw error;
  }
}
