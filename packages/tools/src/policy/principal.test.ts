// Rules that match the caller (`principal`), and which tools a caller could be allowed at all
// (what a gateway lists for them).
import { describe, expect, it } from 'vitest';
import type { AuthorizationRequest } from '../registry/authorization.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import type { JsonObject, ToolSpec } from '../registry/tool.js';
import { createToolContext } from '../registry/tool-context.js';
import { type Principal, principalOf } from './principal.js';
import { type PolicyRule, RuleBasedPolicy } from './rule-based-policy.js';

const ALICE: Principal = {
  issuer: 'https://as.example',
  subject: 'alice',
  claims: { groups: ['engineering', 'oncall'], scope: ['mcp:tools'] },
};
const BOB: Principal = {
  issuer: 'https://as.example',
  subject: 'bob',
  claims: { groups: 'sales' },
};
const MALLORY: Principal = { issuer: 'https://other.example', subject: 'alice', claims: {} };

function request(
  toolName: string,
  principal?: Principal,
  args: JsonObject = {},
): AuthorizationRequest {
  const spec: ToolSpec = { name: toolName, description: '', inputSchema: { type: 'object' } };
  return {
    toolName,
    args,
    context: createToolContext({
      runId: 'r',
      ...(principal === undefined
        ? {}
        : { metadata: { principal: principal as unknown as JsonObject } }),
    }),
    spec,
    contract: undefined,
    effect: 'unknown',
  };
}

const verdict = (policy: RuleBasedPolicy, tool: string, principal?: Principal) =>
  policy.authorize(request(tool, principal)).verdict;

describe('RuleBasedPolicy principal rules', () => {
  it.each<
    [string, PolicyRule, readonly (Principal | undefined)[], readonly (Principal | undefined)[]]
  >([
    [
      'subject',
      { tool: '*', principal: { subject: 'alice' }, decision: 'allow' },
      [ALICE, MALLORY],
      [BOB, undefined],
    ],
    [
      'subject and issuer',
      {
        tool: '*',
        principal: { subject: 'alice', issuer: 'https://as.example' },
        decision: 'allow',
      },
      [ALICE],
      [MALLORY, BOB, undefined],
    ],
    [
      'a group in a list claim',
      { tool: '*', principal: { claims: { groups: 'oncall' } }, decision: 'allow' },
      [ALICE],
      [BOB, MALLORY, undefined],
    ],
    [
      'one of several groups, a string claim',
      { tool: '*', principal: { claims: { groups: ['sales', 'support'] } }, decision: 'allow' },
      [BOB],
      [ALICE, MALLORY, undefined],
    ],
    [
      'every claim must hold',
      {
        tool: '*',
        principal: { claims: { groups: 'engineering', scope: 'mcp:admin' } },
        decision: 'allow',
      },
      [],
      [ALICE, BOB, MALLORY, undefined],
    ],
  ])('matches by %s', (_name, rule, matching, other) => {
    const policy = new RuleBasedPolicy([rule]);
    for (const principal of matching) expect(verdict(policy, 'x__t', principal)).toBe('allow');
    for (const principal of other) expect(verdict(policy, 'x__t', principal)).toBe('deny');
  });

  it('keeps rules without principal applying to every caller', () => {
    const policy = new RuleBasedPolicy([
      { tool: 'x__admin', principal: { claims: { groups: 'oncall' } }, decision: 'allow' },
      { tool: 'x__admin', decision: 'deny', reason: 'on call only' },
      { tool: 'x__*', decision: 'allow' },
    ]);
    expect(verdict(policy, 'x__admin', ALICE)).toBe('allow');
    expect(policy.authorize(request('x__admin', BOB))).toMatchObject({
      verdict: 'deny',
      reason: 'on call only',
    });
    expect(verdict(policy, 'x__read', BOB)).toBe('allow');
    expect(verdict(policy, 'x__read')).toBe('allow');
  });

  it.each<[string, unknown]>([
    ['not an object', 'alice'],
    ['empty', {}],
    ['an unknown key', { sub: 'alice' }],
    ['an empty subject', { subject: '' }],
    ['an empty subject list', { subject: [] }],
    ['claims not an object', { claims: ['groups'] }],
    ['no claim named', { claims: {} }],
    ['a claim value not a string', { claims: { groups: 1 } }],
  ])('refuses a principal matcher that is %s', (_name, principal) => {
    expect(
      () =>
        new RuleBasedPolicy([{ tool: '*', principal, decision: 'allow' } as unknown as PolicyRule]),
    ).toThrow(ConfigurationError);
  });

  it('reads no principal from malformed metadata', () => {
    const context = createToolContext({
      runId: 'r',
      metadata: { principal: { issuer: 'i', subject: 7 } as unknown as JsonObject },
    });
    expect(principalOf(context)).toBeUndefined();
    expect(principalOf(createToolContext({ runId: 'r' }))).toBeUndefined();
  });
});

describe('RuleBasedPolicy.mayPermit', () => {
  const policy = new RuleBasedPolicy([
    { tool: 'x__admin', principal: { claims: { groups: 'oncall' } }, decision: 'allow' },
    { tool: 'x__admin', decision: 'deny' },
    { tool: 'x__write', principal: { subject: 'bob' }, decision: 'deny' },
    { tool: 'x__write', when: { path: { pathUnder: '/srv/project' } }, decision: 'allow' },
    { tool: 'x__delete', when: { force: { equals: true } }, decision: 'deny' },
    { tool: 'x__delete', decision: 'ask' },
    { tool: 'x__read', decision: 'allow' },
  ]);
  const id = (name: string) => ({ name, origin: undefined });

  it.each<[string, string, Principal | undefined, boolean]>([
    ['a group rule lets the on-call caller', 'x__admin', ALICE, true],
    ['the unconditional deny after it hides it from others', 'x__admin', BOB, false],
    ['and from a caller without identity', 'x__admin', undefined, false],
    ['a conditional allow could let a caller', 'x__write', ALICE, true],
    ['an unconditional deny for one subject comes first', 'x__write', BOB, false],
    ['a conditional deny does not hide what a later rule asks', 'x__delete', BOB, true],
    ['an allow for all', 'x__read', BOB, true],
    ['no rule: the default deny', 'x__other', ALICE, false],
  ])('%s', (_name, tool, principal, expected) => {
    expect(policy.mayPermit(id(tool), principal)).toBe(expected);
  });

  it('follows an allow default', () => {
    expect(new RuleBasedPolicy([], { default: 'allow' }).mayPermit(id('x__y'))).toBe(true);
  });
});
