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
