import { FileSystemAccessError } from './file-system-error.js';

/** Longest glob pattern accepted, in characters. */
export const MAX_GLOB_PATTERN_LENGTH = 1024;

/**
 * Compiles a root-relative glob (`*` any characters but `/`, `?` one character but `/`, `**` as a
 * whole segment any number of segments) into a matcher of `/`-separated relative paths. Every
 * other character is literal. Dotfiles match like any other name. Patterns with `..`, a leading
 * `/`, backslashes or control characters are refused.
 */
export function compileGlob(pattern: unknown): (relative: string) => boolean {
  if (
    typeof pattern !== 'string' ||
    pattern.length === 0 ||
    pattern.length > MAX_GLOB_PATTERN_LENGTH ||
    pattern.startsWith('/') ||
    pattern.includes('\\') ||
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are refused
    /[\u0000-\u001f\u007f]/.test(pattern) ||
    pattern.split('/').some((segment) => segment === '..' || segment === '' || segment === '.')
  ) {
    throw new FileSystemAccessError('The glob pattern is not allowed.', 'FS_INVALID_ARGUMENTS');
  }
  const parts = pattern.split('/');
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
