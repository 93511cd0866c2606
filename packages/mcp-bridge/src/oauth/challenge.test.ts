import { describe, expect, it } from 'vitest';
import { joinScopes, parseBearerChallenge, scopeList } from './challenge.js';

describe('parseBearerChallenge', () => {
  it.each([
    [
      'resource_metadata and scope',
      'Bearer resource_metadata="https://mcp.example/.well-known/oauth-protected-resource", scope="a b"',
      {
        resourceMetadata: 'https://mcp.example/.well-known/oauth-protected-resource',
        scope: 'a b',
      },
    ],
    [
      'insufficient_scope with a token value',
      'Bearer error=insufficient_scope, scope="files:read files:write"',
      { error: 'insufficient_scope', scope: 'files:read files:write' },
    ],
    [
      'case-insensitive scheme and names',
      'bearer Realm="r", ERROR="invalid_token"',
      { realm: 'r', error: 'invalid_token' },
    ],
    ['escaped quotes', 'Bearer realm="a \\"quoted\\" realm"', { realm: 'a "quoted" realm' }],
    ['a Basic challenge first', 'Basic realm="x", Bearer scope="s"', { scope: 's' }],
    ['a token68 challenge first', 'Negotiate abc123==, Bearer scope="s"', { scope: 's' }],
    ['a bare Bearer', 'Bearer', {}],
    [
      'the first value of a repeated parameter',
      'Bearer scope="first", scope="second"',
      { scope: 'first' },
    ],
  ])('reads %s', (_name, header, expected) => {
    expect(parseBearerChallenge(header)).toEqual(expected);
  });

  it.each([
    ['no header', null],
    ['no Bearer challenge', 'Basic realm="x"'],
    ['an unterminated quote', 'Bearer scope="abc'],
    ['an oversized header', `Bearer scope="${'a'.repeat(9000)}"`],
    ['garbage', '"""'],
  ])('returns undefined for %s', (_name, header) => {
    expect(parseBearerChallenge(header)).toBeUndefined();
  });
});

describe('scope helpers', () => {
  it('splits and joins without duplicates', () => {
    expect(scopeList('a  b a')).toEqual(['a', 'b']);
    expect(joinScopes('a b', undefined, 'b c')).toBe('a b c');
    expect(joinScopes(undefined, '')).toBeUndefined();
  });
});
