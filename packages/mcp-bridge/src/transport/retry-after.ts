/** Longest `Retry-After` taken as given: one day, in milliseconds (a longer one is cut to this). */
export const MAX_RETRY_AFTER_MS = 86_400_000;

/**
 * Parses an HTTP `Retry-After` value (RFC 9110 §10.2.3: delta-seconds or an HTTP-date) into
 * milliseconds from `now`, at most {@link MAX_RETRY_AFTER_MS}; `undefined` when absent or
 * malformed. A date in the past gives 0.
 */
export function parseRetryAfter(
  value: string | undefined,
  now: number = Date.now(),
): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d{1,12}$/.test(text)) return Math.min(Number(text) * 1000, MAX_RETRY_AFTER_MS);
  // An HTTP-date (IMF-fixdate, or the obsolete RFC 850 / asctime forms Date.parse also reads).
  if (text.length > 64 || !/^[A-Za-z]{3},? /.test(text)) return undefined;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.min(Math.max(0, date - now), MAX_RETRY_AFTER_MS);
}
