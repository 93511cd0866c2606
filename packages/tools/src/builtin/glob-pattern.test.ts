import { describe, expect, it } from 'vitest';
import { compileGlob, MAX_GLOB_PATTERN_LENGTH } from './glob-pattern.js';

/**
 * The former compilation to a regular expression (exponential on some names that do not match):
 * the reference the matcher must agree with on every pattern and path.
 */
function referenceGlob(pattern: string): (relative: string) => boolean {
  const parts = pattern.split('/').filter((segment) => segment !== '' && segment !== '.');
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
  const expression = new RegExp(`${source}$`, 'u');
  return (relative) => expression.test(relative);
}

/** A small deterministic generator (mulberry32), so a failure names its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('compileGlob', () => {
  it.each([
    ['*.txt', 'a.txt', true],
    ['*.txt', 'dir/a.txt', false],
    ['**/*.txt', 'a.txt', true],
    ['**/*.txt', 'x/y/a.txt', true],
    ['src/**', 'src/a/b', true],
    ['src/**', 'other/a', false],
    ['a?c', 'abc', true],
    ['a?c', 'a/c', false],
    ['file(1).txt', 'file(1).txt', true],
    ['a+b', 'aab', false],
    ['.env', '.env', true],
    ['./src/*.ts', 'src/a.ts', true],
    ['src//*.ts', 'src/a.ts', true],
    ['src/', 'src', true],
    ['./**', 'a/b', true],
  ] as const)('%s against %s is %s', (pattern, path, expected) => {
    expect(compileGlob(pattern)(path)).toBe(expected);
  });

  it.each([
    ['', /empty/],
    ['./', /empty/],
    ['/etc/*', /absolute/],
    ['../*', /"\.\."/],
    ['a/../b', /"\.\."/],
    ['a\\b', /backslash/],
    ['a\u0000', /control character/],
    ['x'.repeat(1025), /longer than 1024/],
    [5, /must be a string/],
  ])('refuses the pattern %j and says why', (pattern, why) => {
    expect(() => compileGlob(pattern)).toThrow(/not allowed/);
    expect(() => compileGlob(pattern)).toThrow(why);
    expect(() => compileGlob(pattern)).toThrow(/for example "src\/\*\*\/\*\.ts"/);
  });

  it('agrees with the former regular expression on generated patterns and paths', () => {
    const next = random(41);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
    const patternPieces = ['a', 'b', '.', '*', '?', '**', '/', '/', 'é', '😀'];
    const pathPieces = ['a', 'b', 'ab', '.', 'é', '😀', '/', '/'];
    let compared = 0;
    for (let round = 0; round < 3000; round++) {
      let pattern = '';
      const length = 1 + Math.floor(next() * 8);
      for (let index = 0; index < length; index++) pattern += pick(patternPieces);
      if (pattern.startsWith('/')) pattern = pattern.slice(1);
      let matcher: (relative: string) => boolean;
      try {
        matcher = compileGlob(pattern);
      } catch {
        continue;
      }
      const reference = referenceGlob(pattern);
      for (let path = 0; path < 20; path++) {
        let relative = '';
        const pieces = 1 + Math.floor(next() * 7);
        for (let index = 0; index < pieces; index++) relative += pick(pathPieces);
        expect([pattern, relative, matcher(relative)]).toEqual([
          pattern,
          relative,
          reference(relative),
        ]);
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(40_000);
  });

  it.each([
    ['*'.repeat(40) + 'Z', 'a'.repeat(255)],
    ['*a'.repeat(200) + 'Z', 'a'.repeat(255)],
    [`${'**/'.repeat(100)}*Z`, `${'a/'.repeat(60)}${'a'.repeat(200)}`],
    [`${'?*'.repeat(300)}Z`, '😀'.repeat(400)],
  ])(
    'matches a pathological pattern %# without backtracking (a name that does not match)',
    (pattern, path) => {
      expect(pattern.length).toBeLessThanOrEqual(MAX_GLOB_PATTERN_LENGTH);
      // The former regular expression takes hours on each of these; the matcher answers at once.
      expect(compileGlob(pattern)(path)).toBe(false);
      expect(compileGlob(pattern)(`${path}Z`)).toBe(true);
    },
  );
});
