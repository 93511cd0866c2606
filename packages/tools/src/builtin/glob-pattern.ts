import { wildcardMatcher } from '../internal/wildcard.js';
import { FileSystemAccessError } from './file-system-error.js';

/** Longest glob pattern accepted, in characters. */
export const MAX_GLOB_PATTERN_LENGTH = 1024;

const ACCEPTED_GLOB_FORM =
  'Patterns are relative to path and use "/", "*", "?" and "**", for example "src/**/*.ts".';

/**
 * Compiles a root-relative glob (`*` any characters but `/`, `?` one character but `/`, `**` as a
 * whole segment any number of segments) into a matcher of `/`-separated relative paths. Every
 * other character is literal. Dotfiles match like any other name. `./` prefixes, `.` segments
 * and doubled or trailing separators are dropped first. Patterns with `..`, a leading `/`,
 * backslashes or control characters are refused with a message that says why.
 *
 * The matcher does not backtrack: a path is matched segment by segment (the pattern positions a
 * path can reach, one segment at a time), and a segment by the wildcard walk (`wildcardMatcher`), so its work is
 * bounded by the product of the pattern's and the path's lengths, whatever the pattern (a
 * regular expression of `*` runs could take exponential time on a name that does not match).
 */
export function compileGlob(pattern: unknown): (relative: string) => boolean {
  const refuse = (why: string): never => {
    throw new FileSystemAccessError(
      `The glob pattern is not allowed: ${why}. ${ACCEPTED_GLOB_FORM}`,
      'FS_INVALID_ARGUMENTS',
    );
  };
  if (typeof pattern !== 'string') return refuse('it must be a string');
  if (pattern.length > MAX_GLOB_PATTERN_LENGTH) {
    return refuse(`it is longer than ${MAX_GLOB_PATTERN_LENGTH} characters`);
  }
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are refused
  if (/[\u0000-\u001f\u007f]/.test(pattern)) return refuse('it contains a control character');
  if (pattern.startsWith('/')) return refuse('it is absolute; make it relative to path');
  if (pattern.includes('\\')) return refuse('it contains a backslash; use "/"');
  const parts = pattern.split('/').filter((segment) => segment !== '' && segment !== '.');
  if (parts.includes('..')) return refuse('it has a ".." segment');
  if (parts.length === 0) return refuse('it is empty');
  // `**` alone matches every path.
  if (parts.length === 1 && parts[0] === '**') return () => true;
  const compiled = parts.map((part) => (part === '**' ? ANY_SEGMENTS : wildcardMatcher(part)));
  return (relative) => matchSegments(compiled, relative.split('/'));
}

/** A `**` part: any number of whole segments. */
const ANY_SEGMENTS = Symbol('**');

type GlobPart = typeof ANY_SEGMENTS | ((name: string) => boolean);

/**
 * True when the path's `segments` match the pattern's `parts` in order: a name part matches one
 * segment, a `**` before the last part zero or more non-empty segments, a last `**` one or more
 * segments (whatever they hold). Tracks the set of segment positions each part can end at.
 */
function matchSegments(parts: readonly GlobPart[], segments: readonly string[]): boolean {
  const count = segments.length;
  let reached = new Uint8Array(count + 1);
  reached[0] = 1;
  for (let index = 0; index < parts.length; index++) {
    const part = parts[index] as GlobPart;
    const last = index === parts.length - 1;
    const next = new Uint8Array(count + 1);
    let any = false;
    for (let at = 0; at <= count; at++) {
      if (reached[at] === 0) continue;
      if (part === ANY_SEGMENTS) {
        // A last `**` follows a separator: it takes the rest, which must exist.
        if (last) {
          if (at < count) return true;
          continue;
        }
        next[at] = 1;
        any = true;
        for (let skip = at; skip < count && segments[skip] !== ''; skip++) next[skip + 1] = 1;
        continue;
      }
      if (at === count) continue;
      if (part(segments[at] as string)) {
        next[at + 1] = 1;
        any = true;
      }
    }
    if (!any) return false;
    reached = next;
  }
  return reached[count] === 1;
}
