import { describe, expect, it } from 'vitest';
import { compileGlob } from './glob-pattern.js';

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
  ] as const)('%s against %s is %s', (pattern, path, expected) => {
    expect(compileGlob(pattern)(path)).toBe(expected);
  });

  it.each(['', '/etc/*', '../*', 'a/../b', 'a\\b', 'a//b', 'a\u0000', 5])(
    'refuses the pattern %j',
    (pattern) => {
      expect(() => compileGlob(pattern)).toThrow(/not allowed/);
    },
  );
});
