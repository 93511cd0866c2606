import { describe, expect, it } from 'vitest';
import { canonicalResourceUri } from './resource-uri.js';

describe('canonicalResourceUri', () => {
  it.each([
    'file:///home/u/notes.md',
    'custom://x/y',
    'custom://X/Y',
    'notes://9',
    'demo://resource/dynamic/text/7',
    'urn:a//b',
    'mailto:A@B',
    'custom://x/y?q=1#part',
    'file:///srv/My%20Docs/a.txt',
    'custom://x/a%2Fb',
  ])('keeps the ordinary URI %s as it is', (uri) => {
    expect(canonicalResourceUri(uri)).toBe(uri);
  });

  it.each([
    ['file:///h/./secret/key', 'file:///h/secret/key'],
    ['file:///h/x/../secret/key', 'file:///h/secret/key'],
    ['file:///h/x/%2e%2E/secret/key', 'file:///h/secret/key'],
    ['file:///h/x/.%2e/secret/key', 'file:///h/secret/key'],
    ['file:///h/%73ecret/key', 'file:///h/secret/key'],
    ['file:///h/%2573ecret/key', 'file:///h/%2573ecret/key'],
    ['file:////h/secret/key', 'file:///h/secret/key'],
    ['file:///h//secret///key', 'file:///h/secret/key'],
    ['file://localhost/h/secret/key', 'file:///h/secret/key'],
    ['FILE:///h/secret/key', 'file:///h/secret/key'],
    ['file:///h/sec\tret/key', 'file:///h/secret/key'],
    ['HTTPS://Example.COM/a/../b', 'https://example.com/b'],
    ['custom://%73x/%41%7e', 'custom://sx/A~'],
    ['custom://x/a%2fb', 'custom://x/a%2Fb'],
    ['custom://x//./..//y', 'custom://x/y'],
    ['notes://x/a b', 'notes://x/a%20b'],
    ['notes://faq\u202etxt', 'notes://faq%E2%80%AEtxt'],
  ])('writes %s as %s', (uri, canonical) => {
    expect(canonicalResourceUri(uri)).toBe(canonical);
    expect(canonicalResourceUri(canonical)).toBe(canonical);
  });

  it.each([
    ['not a URI', 'secret/key'],
    ['a host with a space', 'custom://a b/c'],
    ['an escaped "/" in a file path', 'file:///h/x/..%2Fsecret/key'],
    ['an escaped backslash in a file path', 'file:///h/x/..%5csecret'],
    ['an escaped NUL in a file path', 'file:///h/key%00.txt'],
  ])('has no canonical form for %s', (_label, uri) => {
    expect(canonicalResourceUri(uri)).toBeUndefined();
  });
});
