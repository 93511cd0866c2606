import { describe, expect, it } from 'vitest';
import type { AuthorizationRequest } from '../registry/authorization.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import type { JsonObject, ToolSpec } from '../registry/tool.js';
import { createToolContext } from '../registry/tool-context.js';
import { RuleBasedPolicy } from './rule-based-policy.js';
import { toolMatcher } from './tool-selector.js';

function request(
  toolName: string,
  args: JsonObject = {},
  extra: { operationArgument?: string; metadata?: JsonObject } = {},
): AuthorizationRequest {
  const spec: ToolSpec = {
    name: toolName,
    description: '',
    inputSchema: { type: 'object' },
    ...(extra.operationArgument === undefined
      ? {}
      : { operationArgument: extra.operationArgument }),
  };
  return {
    toolName,
    args,
    context: createToolContext({ runId: 'r', metadata: extra.metadata ?? {} }),
    spec,
    contract: undefined,
    effect: 'unknown',
  };
}

describe('RuleBasedPolicy', () => {
  it('uses the first matching rule and the default (deny) when none matches', () => {
    const policy = new RuleBasedPolicy([
      { tool: 'fs', decision: 'deny', reason: 'first' },
      { tool: 'fs', decision: 'allow' },
      { tool: 'web_*', decision: 'ask' },
    ]);
    expect(policy.authorize(request('fs'))).toEqual({ verdict: 'deny', reason: 'first' });
    expect(policy.authorize(request('web_fetch')).verdict).toBe('ask');
    expect(policy.authorize(request('other')).verdict).toBe('deny');
    expect(new RuleBasedPolicy([], { default: 'allow' }).authorize(request('x')).verdict).toBe(
      'allow',
    );
  });

  it.each([
    ['star matches anything', '*', 'any.thing/at_all', true],
    ['exact', 'fs', 'fs', true],
    ['exact is not a prefix', 'fs', 'fs2', false],
    ['glob suffix', 'github__*', 'github__create_issue', true],
    ['glob anchored at start', 'github__*', 'x_github__create', false],
    ['question mark is one character', 'tool?', 'tool1', true],
    ['question mark is not two', 'tool?', 'tool12', false],
    ['regex characters are literal', 'a.b+(c)', 'a.b+(c)', true],
    ['dot is not a wildcard', 'a.b', 'axb', false],
    ['a dash in a glob is literal', 'get-*', 'get-sum', true],
    ['a dash in a glob is not a range', 'a-*', 'b', false],
  ])('matches tool patterns: %s', (_label, pattern, name, expected) => {
    expect(toolMatcher(pattern)(name)).toBe(expected);
  });

  it('matches globs as the former regular expression did, on generated patterns and texts', () => {
    // The former compilation (it backtracked: exponential on some texts that do not match).
    const reference = (pattern: string) => {
      let source = '^';
      for (const character of pattern) {
        if (character === '*') source += '[\\s\\S]*';
        else if (character === '?') source += '[\\s\\S]';
        else source += character.replace(/[\\^$.|+()[\]{}]/g, '\\$&');
      }
      const regex = new RegExp(`${source}$`, 'u');
      return (text: string) => regex.test(text);
    };
    let state = 7;
    const next = () => {
      state = (Math.imul(state, 1103515245) + 12345) >>> 0;
      return state / 4294967296;
    };
    const pick = (items: readonly string[]) => items[Math.floor(next() * items.length)] as string;
    const patternPieces = ['a', 'b', '*', '?', '.', '\n', '😀', '-', '('];
    const textPieces = ['a', 'b', 'ab', '.', '\n', '😀', '-', '(', '*', '?'];
    let compared = 0;
    for (let round = 0; round < 3000; round++) {
      let pattern = '';
      for (let index = 1 + Math.floor(next() * 7); index > 0; index--)
        pattern += pick(patternPieces);
      const matcher = toolMatcher(pattern);
      const expected = reference(pattern);
      for (let sample = 0; sample < 15; sample++) {
        let text = '';
        for (let index = Math.floor(next() * 8); index > 0; index--) text += pick(textPieces);
        expect([pattern, text, matcher(text)]).toEqual([pattern, text, expected(text)]);
        compared += 1;
      }
    }
    expect(compared).toBe(45_000);
  });

  it('judges a `matches` condition on a long argument that does not match without backtracking', () => {
    // `*a*a*…b` against a megabyte of `a`: the former regular expression never finished.
    const policy = new RuleBasedPolicy([
      { tool: 'note', when: { text: { matches: `*${'a*'.repeat(20)}b` } }, decision: 'allow' },
    ]);
    const long = 'a'.repeat(1_000_000);
    expect(policy.authorize(request('note', { text: long })).verdict).toBe('deny');
    expect(policy.authorize(request('note', { text: `${long}b` })).verdict).toBe('allow');
  });

  it("reads the operation from the tool spec's operationArgument, case-insensitively", () => {
    const policy = new RuleBasedPolicy([
      { tool: 'http', operation: ['get', 'HEAD'], decision: 'allow' },
      { tool: 'http', decision: 'deny' },
    ]);
    const spec = { operationArgument: 'method' };
    expect(policy.authorize(request('http', { method: 'GET' }, spec)).verdict).toBe('allow');
    expect(policy.authorize(request('http', { method: 'head' }, spec)).verdict).toBe('allow');
    expect(policy.authorize(request('http', { method: 'POST' }, spec)).verdict).toBe('deny');
    // Without an operation argument configured, operation rules never match.
    expect(policy.authorize(request('http', { method: 'GET' })).verdict).toBe('deny');
  });

  it('lets a per-tool option choose the operation argument over the spec', () => {
    const policy = new RuleBasedPolicy([{ tool: 'fs', operation: 'read', decision: 'allow' }], {
      operationArguments: { fs: 'action' },
    });
    expect(
      policy.authorize(
        request('fs', { action: 'read', operation: 'write' }, { operationArgument: 'operation' }),
      ).verdict,
    ).toBe('allow');
    expect(policy.authorize(request('fs', { operation: 'read' })).verdict).toBe('deny');
  });

  it.each([
    ['a number', { operation: 1 }],
    ['an array', { operation: ['read'] }],
    ['missing', {}],
  ])('does not match an operation rule when the operation is %s', (_label, args) => {
    const policy = new RuleBasedPolicy([{ tool: '*', operation: 'read', decision: 'allow' }]);
    expect(
      policy.authorize(request('t', args as JsonObject, { operationArgument: 'operation' }))
        .verdict,
    ).toBe('deny');
  });

  it('applies a predicate on the context, and denies when it throws', () => {
    const policy = new RuleBasedPolicy([
      { tool: '*', when: ({ context }) => context.metadata.role === 'admin', decision: 'allow' },
      {
        tool: 'boom',
        when: () => {
          throw new Error('bug');
        },
        decision: 'allow',
      },
    ]);
    expect(policy.authorize(request('t', {}, { metadata: { role: 'admin' } })).verdict).toBe(
      'allow',
    );
    expect(policy.authorize(request('t', {}, { metadata: { role: 'user' } })).verdict).toBe('deny');
    expect(policy.authorize(request('boom')).verdict).toBe('deny');
  });

  it.each([
    ['rules not an array', () => new RuleBasedPolicy({} as never)],
    ['empty tool', () => new RuleBasedPolicy([{ tool: '', decision: 'allow' }])],
    ['bad decision', () => new RuleBasedPolicy([{ tool: '*', decision: 'yes' as never }])],
    [
      'empty operation list',
      () => new RuleBasedPolicy([{ tool: '*', operation: [], decision: 'allow' }]),
    ],
    ['bad default', () => new RuleBasedPolicy([], { default: true as never })],
    [
      'bad operation argument',
      () => new RuleBasedPolicy([], { operationArguments: { t: 1 as never } }),
    ],
  ])('rejects a misconfiguration: %s', (_label, build) => {
    expect(build).toThrow(ConfigurationError);
  });
});
