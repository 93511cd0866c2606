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
  let source = '^';
  parts.forEach((part, index) => {
    const last = index === parts.length - 1;
    if (part === '**') {
      source += last ? '.*' : '(?:[^/]+/)*';
      return;
    }
    for (const character of part) {
      if (character === '*') source += '[^/]*';
      else if (character === '?') source += '[^/]';
      else source += character.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    }
    if (!last) source += '/';
  });
  source += '$';
  const expression = new RegExp(source, 'u');
  return (relative) => expression.test(relative);
}
