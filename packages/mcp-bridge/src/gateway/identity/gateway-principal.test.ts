import { describe, expect, it } from 'vitest';
import {
  AUTH_INFO_PRINCIPAL_KEY,
  approvalPrincipal,
  GATEWAY_SINGLE_PRINCIPAL,
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
