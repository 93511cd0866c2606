/**
 * Strict equality of two JSON values as `JSON.parse` makes them: the same primitives (`===`),
 * arrays of the same length with equal items, and objects of the ordinary prototype with the same
 * own keys (in any order) and equal values. Anything else (another prototype, symbols, accessors
 * from elsewhere) is unequal. The gateway's fast path uses it to recognise a 2026-07-28 request
 * envelope the SDK server has already accepted on the same connection.
 */
export function sameJsonValue(left: unknown, right: unknown, depth = 0): boolean {
  if (left === right) return true;
  if (typeof left !== 'object' || typeof right !== 'object' || left === null || right === null) {
    return false;
  }
  // Deeper than any envelope: the fast path declines, and the SDK decides.
  if (depth > 32) return false;
  if (Array.isArray(left)) {
    if (!Array.isArray(right) || left.length !== right.length) return false;
    if (Object.getPrototypeOf(left) !== Array.prototype) return false;
    if (Object.getPrototypeOf(right) !== Array.prototype) return false;
    for (let index = 0; index < left.length; index++) {
      if (!Object.hasOwn(left, index) || !Object.hasOwn(right, index)) return false;
      if (!sameJsonValue(left[index], right[index], depth + 1)) return false;
    }
    return true;
  }
  if (Array.isArray(right)) return false;
  if (Object.getPrototypeOf(left) !== Object.prototype) return false;
  if (Object.getPrototypeOf(right) !== Object.prototype) return false;
  const a = left as Record<string, unknown>;
  const b = right as Record<string, unknown>;
  let count = 0;
  for (const key in a) {
    if (!Object.hasOwn(a, key) || !Object.hasOwn(b, key)) return false;
    if (!sameJsonValue(a[key], b[key], depth + 1)) return false;
    count++;
  }
  for (const key in b) {
    if (!Object.hasOwn(b, key)) return false;
    count--;
  }
  return (
    count === 0 &&
    Object.getOwnPropertySymbols(a).length === 0 &&
    Object.getOwnPropertySymbols(b).length === 0
  );
}
