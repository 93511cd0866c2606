import { describe, expect, it } from 'vitest';
import {
  AUTH_INFO_PRINCIPAL_KEY,
  approvalPrincipal,
  GATEWAY_SINGLE_PRINCIPAL,
  principalFromClaims,
  principalOfAuthInfo,
  principalOfRequest,
} from './gateway-principal.js';

const validated = (issuer: string, subject: string) => ({
  extra: { [AUTH_INFO_PRINCIPAL_KEY]: { issuer, subject, claims: {} } },
});

/** The approval principal of an `AuthInfo`, as the HTTP front binds sealed sessions to it. */
const bound = (authInfo: unknown) => approvalPrincipal(principalOfAuthInfo(authInfo));

describe('the validated caller of an AuthInfo', () => {
  it('is the principal the HTTP front put there, the same one a request context carries', () => {
    const authInfo = validated('https://issuer.test', 'alice');
    const caller = principalOfAuthInfo(authInfo);
    expect(caller).toEqual({ issuer: 'https://issuer.test', subject: 'alice', claims: {} });
    expect(principalOfRequest({ http: { authInfo } })).toBe(caller);
  });

  it.each([
    ['no authInfo (stdio, the static token)', undefined],
    ['a null authInfo', null],
    ['an authInfo without extra', { token: 't', clientId: 'app' }],
    ['an authInfo without a caller', { extra: {} }],
    ['extra that is not an object', { extra: 'toolfencePrincipal' }],
    ['a caller that is a string', { extra: { [AUTH_INFO_PRINCIPAL_KEY]: 'alice' } }],
    ['a caller that is null', { extra: { [AUTH_INFO_PRINCIPAL_KEY]: null } }],
    ['a numeric issuer', { extra: { [AUTH_INFO_PRINCIPAL_KEY]: { issuer: 1, subject: 'x' } } }],
    [
      'a numeric subject',
      { extra: { [AUTH_INFO_PRINCIPAL_KEY]: { issuer: 'https://i', subject: 2 } } },
    ],
    ['no subject', { extra: { [AUTH_INFO_PRINCIPAL_KEY]: { issuer: 'https://i' } } }],
    [
      'another transport’s own principal and sub',
      { clientId: 'app', extra: { principal: 'alice', sub: 'alice' } },
    ],
  ])('is none with %s', (_name, authInfo) => {
    expect(principalOfAuthInfo(authInfo)).toBeUndefined();
    expect(principalOfRequest({ http: { authInfo } })).toBeUndefined();
    expect(bound(authInfo)).toBe(GATEWAY_SINGLE_PRINCIPAL);
  });
});

describe('the principal approvals and sealed sessions bind', () => {
  it('is the caller gateway.httpAuth validated: one value per issuer and subject', () => {
    const alice = bound(validated('https://issuer.test', 'alice'));
    expect(alice).toBe(bound(validated('https://issuer.test', 'alice')));
    expect(alice).not.toBe(bound(validated('https://issuer.test', 'bob')));
    expect(alice).not.toBe(bound(validated('https://other.test', 'alice')));
    expect(alice).not.toBe(GATEWAY_SINGLE_PRINCIPAL);
    expect(alice).toBe(approvalPrincipal({ issuer: 'https://issuer.test', subject: 'alice' }));
    // The format sealed approvals and sessions carry (a digest of it): the JSON pair.
    expect(alice).toBe('["https://issuer.test","alice"]');
  });

  it.each([
    [
      'a separator moved from the issuer into the subject',
      ['https://a|b', 'c'],
      ['https://a', 'b|c'],
    ],
    ['a newline moved across', ['https://a\nb', 'c'], ['https://a', 'b\nc']],
    ['a quote moved across', ['https://a"', 'b'], ['https://a', '"b']],
  ])('cannot be forged by %s', (_name, [issuer, subject], [otherIssuer, otherSubject]) => {
    expect(bound(validated(issuer as string, subject as string))).not.toBe(
      bound(validated(otherIssuer as string, otherSubject as string)),
    );
  });
});

describe('the claims a principal keeps', () => {
  const teams = (count: number) => Array.from({ length: count }, (_, index) => `team-${index}`);
  const keep = (
    payload: Record<string, unknown>,
    limits?: { maxValues: number; maxChars: number },
  ) => principalFromClaims('https://i', 'sub', payload, ['groups', 'scope', 'dept'], limits);

  it('are whole up to the limits (256 values of 256 characters by default)', () => {
    const groups = [...teams(255), 'x'.repeat(256)];
    expect(keep({ groups, scope: 'a b', dept: 'sales', other: 'x' }).claims).toEqual({
      groups,
      scope: ['a', 'b'],
      dept: 'sales',
    });
  });

  it.each([
    [
      'one value too many',
      { groups: teams(257) },
      /"groups" claim holds 257 values.*principalClaimMaxValues/,
    ],
    [
      'a value one character too long',
      { groups: ['ok', 'x'.repeat(257)] },
      /"groups" claim holds a value over 256.*principalClaimMaxChars/,
    ],
    ['a string claim too long', { dept: 'x'.repeat(257) }, /"dept" claim.*principalClaimMaxChars/],
    ['a scope with too many values', { scope: teams(300).join(' ') }, /"scope" claim holds 300/],
  ])('refuse the token, never cut it, with %s', (_name, payload, message) => {
    let thrown: unknown;
    try {
      keep(payload);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: 'GATEWAY_TOKEN_REFUSED', reason: 'claim-limit' });
    expect((thrown as Error).message).toMatch(message);
  });

  it('follow the configured limits', () => {
    expect(() => keep({ groups: teams(3) }, { maxValues: 2, maxChars: 256 })).toThrow(
      /holds 3 values, more than the 2/,
    );
    expect(
      keep({ groups: teams(300) }, { maxValues: 300, maxChars: 256 }).claims.groups,
    ).toHaveLength(300);
  });

  it('leave out what no rule value could match: items and claims that are not strings', () => {
    expect(keep({ groups: ['a', 5, { b: 1 }, 'c'], dept: 42 }).claims).toEqual({
      groups: ['a', 'c'],
    });
  });
});
