import { UriTemplate } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import {
  type CompiledUriTemplate,
  canonicalResourceUri,
  compileUriTemplate,
  uriTemplateMatches,
} from './resource-uri.js';

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

describe('uriTemplateMatches', () => {
  const templates = [
    'x://{a}',
    'x://{a*}/z',
    'file:///{+path}',
    'file:///{+path}.txt',
    'x://{+a}{+b}z',
    'x://h{/p}{/q*}',
    'x://h{.ext}',
    'x://h{?a,b}',
    'x://h{?a}{&b}',
    'x://{#f}',
    'x://a/{b},{c}/d',
    'x://{a,b}/c',
    'plain://literal',
  ];
  const uris = [
    'x://',
    'x://a',
    'x://a,b',
    'x://a,,b/z',
    'x://a,b/z',
    'x://,a/z',
    'x://a,/z',
    'x://a/z',
    'file:///',
    'file:///etc/passwd',
    'file:///a/b.txt',
    'file:///.txt',
    'x://abz',
    'x://az',
    'x://z',
    'x://h/p',
    'x://h/p/q,r',
    'x://h/p/q,,r',
    'x://h.md',
    'x://h.',
    'x://h?a=1&b=2',
    'x://h?a=1',
    'x://h?a=&b=2',
    'x://#f',
    'x://a\nb',
    'x://a/b,c/d',
    'x://a/b/c/d',
    'x://a,b/c',
    'plain://literal',
    'plain://literally',
  ];
  const cases = templates.flatMap((template) => uris.map((uri) => [template, uri] as const));

  it.each(cases)('decides %s against %j as the MCP SDK does', (template, uri) => {
    const compiled = compileUriTemplate(template);
    expect(compiled).toBeDefined();
    const sdk = new UriTemplate(template).match(uri) !== null;
    expect(uriTemplateMatches(compiled as CompiledUriTemplate, uri)).toBe(sdk);
  });

  it('counts the expressions, each variable once, and refuses an unclosed one, as the SDK does', () => {
    // Each variable counts: `{?c,d}` matches as two steps.
    expect(compileUriTemplate('x://{+a}{+b}{?c,d}')?.expressions).toBe(4);
    expect(compileUriTemplate('x://{}')?.expressions).toBe(1);
    expect(compileUriTemplate('x://{a')).toBeUndefined();
    expect(() => new UriTemplate('x://{a')).toThrow();
  });

  it('decides a template of many greedy expressions over a long URI in one pass per step', () => {
    // The SDK's regular expression for this template backtracks polynomially: `(.+)` six times.
    const compiled = compileUriTemplate('x://{+a}{+b}{+c}{+d}{+e}{+f}z') as CompiledUriTemplate;
    expect(uriTemplateMatches(compiled, `x://${'a'.repeat(100_000)}`)).toBe(false);
    expect(uriTemplateMatches(compiled, `x://${'a'.repeat(100_000)}z`)).toBe(true);
  });
});
