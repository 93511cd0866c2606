import { describe, expect, it } from 'vitest';
import { approvalPrincipal, GATEWAY_SINGLE_PRINCIPAL, principalOf } from './gateway-principal.js';
import { AUTH_INFO_PRINCIPAL_KEY } from './identity/gateway-principal.js';

const validated = (issuer: string, subject: string) => ({
  extra: { [AUTH_INFO_PRINCIPAL_KEY]: { issuer, subject, claims: {} } },
});

describe('the principal approvals and sealed sessions bind', () => {
  it('is the caller gateway.httpAuth validated: one value per issuer and subject', () => {
    const alice = principalOf(validated('https://issuer.test', 'alice'));
    expect(alice).toBe(principalOf(validated('https://issuer.test', 'alice')));
    expect(alice).not.toBe(principalOf(validated('https://issuer.test', 'bob')));
    expect(alice).not.toBe(principalOf(validated('https://other.test', 'alice')));
    expect(alice).not.toBe(GATEWAY_SINGLE_PRINCIPAL);
    expect(alice).toBe(approvalPrincipal({ issuer: 'https://issuer.test', subject: 'alice' }));
  });

  it.each([
    [
      'a separator moved from the issuer into the subject',
      ['https://a|b', 'c'],
      ['https://a', 'b|c'],
    ],
    ['a quote moved across', ['https://a"', 'b'], ['https://a', '"b']],
  ])('cannot be forged by %s', (_name, [issuer, subject], [otherIssuer, otherSubject]) => {
    expect(principalOf(validated(issuer as string, subject as string))).not.toBe(
      principalOf(validated(otherIssuer as string, otherSubject as string)),
    );
  });

  it.each([
    ['no authInfo (stdio, the static token)', undefined],
    ['an authInfo without a caller', { extra: {} }],
    ['a malformed caller', { extra: { [AUTH_INFO_PRINCIPAL_KEY]: { issuer: 1, subject: 'x' } } }],
  ])('is the single principal with %s', (_name, authInfo) => {
    expect(principalOf(authInfo as never)).toBe(GATEWAY_SINGLE_PRINCIPAL);
  });
});
