// Wildcard matching without backtracking, for every glob the package matches: the filesystem
// tool's `glob` names (one path segment at a time) and policy globs (tool selectors, `matches`).

/** A surrogate code unit: text with one is matched by code points, not code units. */
const SURROGATE = /[\ud800-\udfff]/;

/**
 * A matcher of whole texts against `pattern`: `*` any run of characters (none included), `?`
 * exactly one character (a code point: an astral character is one), anything else itself
 * (case-sensitive). The pattern is read once, here; each text by the two-pointer walk: on a
 * mismatch the last `*` takes one more character and the walk resumes after it, so the work is at
 * most `pattern.length * text.length` steps, never exponential (a regular expression of `*` runs
 * backtracks through every split of a text that does not match).
 */
export function wildcardMatcher(pattern: string): (text: string) => boolean {
  // The usual policy glob, a literal prefix then one `*` (`fs__*`, `read_*`): a prefix test.
  const star = pattern.indexOf('*');
  if (star === pattern.length - 1 && !pattern.includes('?')) {
    const prefix = pattern.slice(0, star);
    return (text) => text.startsWith(prefix);
  }
  // Without surrogates a code unit is a code point; with them, both are split into code points.
  if (SURROGATE.test(pattern)) {
    const points = Array.from(pattern);
    return (text) => walk(points, Array.from(text));
  }
  return (text) =>
    SURROGATE.test(text) ? walk(Array.from(pattern), Array.from(text)) : walk(pattern, text);
}

function walk(pattern: ArrayLike<string>, text: ArrayLike<string>): boolean {
  let p = 0;
  let t = 0;
  /** The last `*` seen, and where in the text its run ends so far. */
  let star = -1;
  let resume = 0;
  while (t < text.length) {
    const wanted = p < pattern.length ? pattern[p] : undefined;
    if (wanted === '*') {
      star = p;
      p += 1;
      resume = t;
    } else if (wanted !== undefined && (wanted === '?' || wanted === text[t])) {
      p += 1;
      t += 1;
    } else if (star !== -1) {
      p = star + 1;
      resume += 1;
      t = resume;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p += 1;
  return p === pattern.length;
}
