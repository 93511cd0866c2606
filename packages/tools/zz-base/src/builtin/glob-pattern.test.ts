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
});
