import type { FlowRaise } from '@toolfence/tools';
import { describe, expect, it } from 'vitest';
import {
  connectionSession,
  GatewayFlow,
  principalSession,
  raisedVerdict,
  SHARED_PRINCIPAL_SESSION,
} from './flow-session.js';
import { AUTH_INFO_PRINCIPAL_KEY } from './identity/gateway-principal.js';

describe('flow sessions', () => {
  it('gives each downstream connection its own session', () => {
    const sessions = new Set(Array.from({ length: 50 }, () => connectionSession()));
    expect(sessions.size).toBe(50);
    for (const session of sessions) expect(session).toMatch(/^connection:[0-9a-f-]{36}$/);
  });

  it('keys stateless requests by principal: one session per principal, never the token', () => {
    const alice = { token: 'secret-token-1', clientId: 'app', extra: { sub: 'alice' } };
    const aliceAgain = { token: 'secret-token-2', clientId: 'app', extra: { sub: 'alice' } };
    const bob = { token: 'secret-token-1', clientId: 'app', extra: { sub: 'bob' } };
    expect(principalSession(alice)).toBe(principalSession(aliceAgain));
    expect(principalSession(alice)).not.toBe(principalSession(bob));
    expect(principalSession({ clientId: 'app', extra: { principal: 'alice' } })).toBe(
      principalSession(alice),
    );
    expect(principalSession({ clientId: 'other-app', extra: { sub: 'alice' } })).not.toBe(
      principalSession(alice),
    );
    expect(principalSession(alice)).toMatch(/^principal:[0-9a-f]{32}$/);
    expect(principalSession(alice)).not.toContain('secret');
  });

  it('keys a caller the HTTP front validated (gateway.httpAuth) by issuer and subject, not by the app', () => {
    const person = (subject: string, issuer = 'https://issuer.test') => ({
      token: '',
      clientId: 'shared-app',
      extra: { [AUTH_INFO_PRINCIPAL_KEY]: { issuer, subject, claims: {} } },
    });
    expect(principalSession(person('alice'))).toBe(principalSession(person('alice')));
    expect(principalSession(person('alice'))).not.toBe(principalSession(person('bob')));
    expect(principalSession(person('alice'))).not.toBe(
      principalSession(person('alice', 'https://other.test')),
    );
  });

  it('keys a validated caller as approvals bind it: one session whichever app they use', () => {
    const via = (clientId: string) => ({
      token: '',
      clientId,
      extra: { [AUTH_INFO_PRINCIPAL_KEY]: { issuer: 'https://issuer.test', subject: 'alice' } },
    });
    // Alice cannot leave her labels behind by calling through another app.
    expect(principalSession(via('app-one'))).toBe(principalSession(via('app-two')));
  });

  const validated = (issuer: string, subject: string, clientId = 'app') => ({
    token: '',
    clientId,
    extra: { [AUTH_INFO_PRINCIPAL_KEY]: { issuer, subject, claims: {} } },
  });
  it.each([
    [
      'a newline of the subject moved into the issuer',
      validated('https://issuer.test', 'alice\nadmin'),
      validated('https://issuer.test\nalice', 'admin'),
    ],
    [
      "a transport's own principal string spelling the validated pair with a newline",
      validated('https://issuer.test', 'alice'),
      { token: '', clientId: 'app', extra: { principal: 'https://issuer.test\nalice' } },
    ],
    [
      "a transport's own principal string spelling the validated pair as approvals do",
      validated('https://issuer.test', 'alice'),
      { token: '', clientId: 'app', extra: { principal: '["https://issuer.test","alice"]' } },
    ],
    [
      "a transport's own client id and subject equal to the validated issuer and subject",
      validated('https://issuer.test', 'alice', ''),
      { token: '', clientId: 'https://issuer.test', extra: { sub: 'alice' } },
    ],
  ])('keeps two principals apart: %s', (_name, one, other) => {
    expect(principalSession(one)).not.toBe(principalSession(other));
  });

  it.each([
    ['no validated authentication (the gateway token, or loopback)', undefined],
    ['authentication that names nobody', { token: 't', clientId: '', extra: {} }],
    [
      'a malformed validated caller (a numeric issuer)',
      { token: 't', extra: { [AUTH_INFO_PRINCIPAL_KEY]: { issuer: 1, subject: 'alice' } } },
    ],
  ])('puts every stateless caller in one session with %s', (_name, authInfo) => {
    expect(principalSession(authInfo)).toBe(SHARED_PRINCIPAL_SESSION);
  });
});

describe('GatewayFlow', () => {
  it('is on by default, enforcing, and observing in the gateway observe mode', () => {
    expect(new GatewayFlow(undefined, false).guard?.mode).toBe('enforce');
    expect(new GatewayFlow({}, true).guard?.mode).toBe('observe');
    expect(new GatewayFlow({ mode: 'enforce' }, true).guard?.mode).toBe('observe');
    expect(new GatewayFlow({ mode: 'observe' }, false).guard?.mode).toBe('observe');
    expect(new GatewayFlow({ enabled: false }, false).guard).toBeUndefined();
  });

  it('tells settings that change the guard from the same ones', () => {
    const flow = new GatewayFlow({ permit: [{ from: 'a', to: 'b' }] }, false);
    expect(flow.sameAs({ permit: [{ from: 'a', to: 'b' }] }, false)).toBe(true);
    expect(flow.sameAs({ permit: [{ from: 'a', to: 'c' }] }, false)).toBe(false);
    expect(flow.sameAs({}, false)).toBe(false);
    expect(new GatewayFlow(undefined, false).sameAs({}, false)).toBe(true);
  });

  it('refuses options the guard refuses, as a config error naming the option', () => {
    expect(() => new GatewayFlow({ maxSessions: 0 }, false)).toThrow(
      expect.objectContaining({ code: 'GATEWAY_CONFIG', details: { option: 'flow.maxSessions' } }),
    );
  });
});

describe('raisedVerdict', () => {
  const raise = (verdict: 'ask' | 'deny', enforced: boolean) =>
    ({ verdict, enforced }) as unknown as FlowRaise;
  it.each([
    ['no raise', 'allow', undefined, false, 'allow'],
    ['an enforced ask over allow', 'allow', raise('ask', true), false, 'ask'],
    ['an enforced deny over ask', 'ask', raise('deny', true), false, 'deny'],
    ['an observed raise (flow mode observe)', 'allow', raise('deny', false), false, 'allow'],
    ['an observed raise in the gateway observe mode', 'allow', raise('deny', false), true, 'deny'],
    ['a raise never lowers', 'deny', raise('ask', true), false, 'deny'],
  ] as const)('audits %s', (_name, policy, flow, observe, expected) => {
    expect(raisedVerdict(policy, flow, observe)).toBe(expected);
  });
});
