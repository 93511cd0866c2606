// The `pathUnder` condition of a rule: is a path argument inside one of the given folders? The
// check is lexical (no file is touched, so a symlink inside a folder that points out of it is not
// seen) and fails closed: the answer is `undefined` (cannot be decided) unless every plausible
// reading of the argument gives the same answer.

/** Longest path argument `pathUnder` decides, in characters; a longer one cannot be decided. */
export const MAX_CHECKED_PATH_LENGTH = 4096;

/** How many rounds of percent-decoding are tried (`%252e` is `%2e` after one round). */
const DECODE_ROUNDS = 3;

const PERCENT_ESCAPE = /%[0-9A-Fa-f]{2}/;

/** A folder of a `pathUnder` condition, normalized once. */
export interface PathRoot {
  /** As given, normalized lexically (no `.`, `..`, `//` or trailing slash). */
  readonly exact: string;
  /** The same after Unicode compatibility normalization (NFKC) and lower case. */
  readonly loose: string;
}

/**
 * Normalizes an absolute POSIX path lexically: empty and `.` segments are dropped, `..` removes
 * the segment before it (never above `/`). Undefined for a path that is not absolute.
 */
function lexical(path: string): string | undefined {
  if (!path.startsWith('/')) return undefined;
  const parts: string[] = [];
  for (const segment of path.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') parts.pop();
    else parts.push(segment);
  }
  return `/${parts.join('/')}`;
}

/** Printable ASCII without capitals: NFKC and lower case leave it as it is. */
const ALREADY_LOOSE = /^[\x20-\x40\x5b-\x7e]*$/;

function loosen(path: string): string {
  return ALREADY_LOOSE.test(path) ? path : path.normalize('NFKC').toLowerCase();
}

/** Checks and normalizes a `pathUnder` folder; undefined when it is not an absolute path. */
export function pathRoot(root: string): PathRoot | undefined {
  if (root.includes('\0') || root.includes('\\')) return undefined;
  const exact = lexical(root);
  const loose = lexical(loosen(root));
  if (exact === undefined || loose === undefined) return undefined;
  return { exact, loose };
}

function inside(path: string, root: string): boolean {
  return root === '/' || path === root || path.startsWith(`${root}/`);
}

/** The readings of an argument a server might act on: as written, percent-decoded, `\` as `/`. */
function readings(value: string): Set<string> | undefined {
  const found = new Set<string>([value]);
  let current = value;
  for (let round = 0; round < DECODE_ROUNDS && PERCENT_ESCAPE.test(current); round += 1) {
    try {
      current = decodeURIComponent(current);
    } catch {
      // Malformed escapes: a server that decodes would refuse or read something else.
      return undefined;
    }
    found.add(current);
  }
  for (const reading of [...found]) {
    if (reading.includes('\\')) found.add(reading.replaceAll('\\', '/'));
  }
  return found;
}

/**
 * True when `value` is inside one of `roots` (a root itself counts), false when it is outside,
 * undefined when it cannot be decided: a relative path, a `file:` URL, a NUL, a path longer than
 * {@link MAX_CHECKED_PATH_LENGTH}, malformed percent escapes, or readings that disagree (percent-
 * decoded, backslashes as separators, or compared without case and with NFKC: a case-insensitive
 * or normalizing file system could resolve it elsewhere).
 */
export function isPathUnder(value: string, roots: readonly PathRoot[]): boolean | undefined {
  if (value.length > MAX_CHECKED_PATH_LENGTH || value.includes('\0')) return undefined;
  const all = readings(value);
  if (all === undefined) return undefined;
  let answer: boolean | undefined;
  for (const reading of all) {
    const loose = loosen(reading);
    const variants: [string, boolean][] = [
      [reading, false],
      [loose, true],
    ];
    // NFKC turns a fullwidth reverse solidus into `\`.
    if (loose.includes('\\')) variants.push([loose.replaceAll('\\', '/'), true]);
    for (const [variant, isLoose] of variants) {
      const path = lexical(variant);
      if (path === undefined) return undefined;
      const here = roots.some((root) => inside(path, isLoose ? root.loose : root.exact));
      if (answer === undefined) answer = here;
      else if (answer !== here) return undefined;
    }
  }
  return answer;
}
