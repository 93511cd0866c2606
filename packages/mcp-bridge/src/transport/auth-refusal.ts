const REFUSALS = new WeakSet<object>();

/**
 * True for an error an `authProvider` raised while answering a 401/403: the server refused the
 * request, so it did not run. Its own module, so a client checks it without loading the HTTP
 * transport (a stdio-only client never does).
 */
export function isAuthRefusal(error: unknown): boolean {
  return typeof error === 'object' && error !== null && REFUSALS.has(error);
}

/** Marks `error` (an `authProvider`'s answer to a 401/403) as a refusal; see {@link isAuthRefusal}. */
export function markAuthRefusal(error: object): void {
  REFUSALS.add(error);
}
