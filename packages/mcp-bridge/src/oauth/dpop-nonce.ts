/** Longest accepted server nonce, in characters. */
const MAX_NONCE_LENGTH = 1024;

/**
 * A nonce value as RFC 9449 §8 allows it (`NQCHAR`, bounded), else `undefined`. Its own module so
 * the token provider checks a nonce without loading the DPoP signer (and oauth4webapi).
 */
export function checkNonce(value: string | null | undefined): string | undefined {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NONCE_LENGTH) {
    return undefined;
  }
  return /^[\x21\x23-\x5B\x5D-\x7E]+$/.test(value) ? value : undefined;
}
