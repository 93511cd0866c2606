let cachedSecond = Number.NaN;
let cachedPrefix = '';

/**
 * `new Date(now).toISOString()`, from a prefix formatted once per second (`2026-12-01T12:34:56.`)
 * and the milliseconds: the audit stamps every call, and formatting a whole date each time costs
 * more than the rest of the stamp.
 */
export function isoTime(now: number): string {
  const second = Math.floor(now / 1000);
  if (second !== cachedSecond) {
    // Formatted first, cached after: a throw (an invalid time) leaves the cache as it was.
    cachedPrefix = new Date(second * 1000).toISOString().slice(0, -4);
    cachedSecond = second;
  }
  const millis = now - second * 1000;
  return `${cachedPrefix}${millis < 10 ? '00' : millis < 100 ? '0' : ''}${millis}Z`;
}
