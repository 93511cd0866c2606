import { describe, expect, it } from 'vitest';
import { isPathUnder, MAX_CHECKED_PATH_LENGTH, type PathRoot, pathRoot } from './path-under.js';

const PROJECT = pathRoot('/home/u/project') as PathRoot;

describe('isPathUnder (lexical, fails closed)', () => {
  // true: inside; false: outside; undefined: cannot be decided (an allow rule does not match, a
  // deny or ask rule does).
  it.each<[string, string, boolean | undefined]>([
    ['a file inside', '/home/u/project/src/a.ts', true],
    ['the folder itself', '/home/u/project', true],
    ['the folder with a trailing slash', '/home/u/project/', true],
    ['a dot segment', '/home/u/project/./a', true],
    ['double slashes inside', '/home/u/project//src//a', true],
    ['a leading double slash', '//home/u/project/a', true],
    ['.. that stays inside', '/home/u/project/src/../a', true],
    ['.. that climbs out', '/home/u/project/../secret', false],
    ['.. climbing out and back into a sibling', '/home/u/project/../project-evil/a', false],
    ['many .. above the root', '/home/u/project/../../../../etc/passwd', false],
    ['a prefix sibling', '/home/u/project-evil/a', false],
    ['a prefix sibling without a separator', '/home/u/projectx', false],
    ['the parent folder', '/home/u', false],
    ['another tree', '/etc/passwd', false],
    ['a relative path', 'project/a', undefined],
    ['a relative .. path', '../project/a', undefined],
    ['a home-relative path', '~/project/a', undefined],
    ['an empty string', '', undefined],
    ['a file: URL', 'file:///home/u/project/a', undefined],
    ['a NUL byte', '/home/u/project/a\0/../../x', undefined],
    ['a different case (case-insensitive file systems)', '/home/u/PROJECT/a', undefined],
    ['a different case of a sibling', '/home/u/Project-Evil/a', false],
    ['percent-encoded .. that climbs out', '/home/u/project/%2e%2e/secret', undefined],
    ['percent-encoded slash and ..', '/home/u/project%2f..%2f..%2fetc', false],
    ['double percent-encoding', '/home/u/project/%252e%252e/secret', undefined],
    ['malformed percent escapes', '/home/u/project/%e0%a4%a', undefined],
    ['backslash .. that climbs out', '/home/u/project/a\\..\\..\\secret', undefined],
    ['backslash separators only', '\\home\\u\\project\\a', undefined],
    ['NFD form of an NFC folder name', '/home/u/cafe\u0301/a', false],
    ['fullwidth solidus and dots (NFKC)', '/home/u/project/\uff0e\uff0e\uff0fsecret', undefined],
    ['fullwidth reverse solidus (NFKC)', '/home/u/project/\uff0e\uff0e\uff3csecret', undefined],
    ['a zero-width space inside the name', '/home/u/pro\u200bject/a', false],
    [
      'a path over the length limit',
      `/home/u/project/${'a'.repeat(MAX_CHECKED_PATH_LENGTH)}`,
      undefined,
    ],
  ])('%s', (_attack, value, expected) => {
    expect(isPathUnder(value, [PROJECT])).toBe(expected);
  });

  it('decides Unicode forms of a folder name only when every reading agrees', () => {
    const cafe = pathRoot('/home/u/caf\u00e9') as PathRoot;
    expect(isPathUnder('/home/u/caf\u00e9/a', [cafe])).toBe(true);
    // The NFD spelling names the same folder on a normalizing file system, another on ext4.
    expect(isPathUnder('/home/u/cafe\u0301/a', [cafe])).toBeUndefined();
  });

  it('treats / as a folder holding every absolute path', () => {
    expect(isPathUnder('/anything/at/all', [pathRoot('/') as PathRoot])).toBe(true);
  });

  it.each([
    ['relative', 'project'],
    ['home-relative', '~/project'],
    ['backslashes', 'C:\\Users\\u'],
    ['a NUL', '/home/\0'],
  ])('refuses a %s folder', (_label, root) => {
    expect(pathRoot(root)).toBeUndefined();
  });

  it('normalizes a folder once: trailing slash, dots and double slashes', () => {
    expect(pathRoot('/home//u/./project/')?.exact).toBe('/home/u/project');
    expect(pathRoot('/home/u/x/../project')?.exact).toBe('/home/u/project');
  });
});
