// One reading of a rule's tool name for the registry, `serve` and `inspect`: the offered name with
// `__`, the server's own tool name without it, and `server` plus a name; declarative `when`
// conditions that fail closed.
import { describe, expect, it } from 'vitest';
import type { AuthorizationRequest } from '../registry/authorization.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import {
  type JsonObject,
  type Tool,
  type ToolOrigin,
  type ToolSpec,
  textResult,
} from '../registry/tool.js';
import { createToolContext } from '../registry/tool-context.js';
import { ToolRegistry } from '../registry/tool-registry.js';
import type { ArgumentConditions } from './argument-conditions.js';
import { type PolicyRule, RuleBasedPolicy } from './rule-based-policy.js';

function request(
  toolName: string,
  origin?: ToolOrigin,
  args: JsonObject = {},
): AuthorizationRequest {
  const spec: ToolSpec = {
    name: toolName,
    description: '',
    inputSchema: { type: 'object' },
    ...(origin === undefined ? {} : { origin }),
  };
  return {
    toolName,
    args,
    context: createToolContext({ runId: 'r' }),
    spec,
    contract: undefined,
    effect: 'unknown',
  };
}

const FS_READ = request('fs__read_text_file', { server: 'files', tool: 'read_text_file' });
const GH_READ = request('gh__read_text_file', { server: 'github', tool: 'read_text_file' });
const LOCAL = request('read_text_file');

describe('RuleBasedPolicy tool names', () => {
  it.each<[string, PolicyRule, readonly AuthorizationRequest[], readonly AuthorizationRequest[]]>([
    [
      'own name, any server',
      { tool: 'read_text_file', decision: 'deny' },
      [FS_READ, GH_READ, LOCAL],
      [],
    ],
    ['own-name glob', { tool: 'read_*', decision: 'deny' }, [FS_READ, GH_READ, LOCAL], []],
    ['offered name', { tool: 'fs__read_text_file', decision: 'deny' }, [FS_READ], [GH_READ, LOCAL]],
    ['offered-name glob', { tool: 'fs__*', decision: 'deny' }, [FS_READ], [GH_READ, LOCAL]],
    [
      'server and own name',
      { server: 'files', tool: 'read_text_file', decision: 'deny' },
      [FS_READ],
      [GH_READ, LOCAL],
    ],
    ['server alone', { server: 'github', decision: 'deny' }, [GH_READ], [FS_READ, LOCAL]],
    [
      'server glob',
      { server: 'f*', tool: 'read_*', decision: 'deny' },
      [FS_READ],
      [GH_READ, LOCAL],
    ],
    [
      'server with the offered name does not match',
      { server: 'files', tool: 'fs__read_text_file', decision: 'deny' },
      [],
      [FS_READ],
    ],
    ['namespace is not the server name', { server: 'fs', decision: 'deny' }, [], [FS_READ]],
    ['own name is not the offered name', { tool: 'text_file', decision: 'deny' }, [], [FS_READ]],
    ['star', { tool: '*', decision: 'deny' }, [FS_READ, GH_READ, LOCAL], []],
  ])('%s', (_label, rule, matched, unmatched) => {
    const policy = new RuleBasedPolicy([rule], { default: 'allow' });
    for (const call of matched) expect(policy.authorize(call).verdict, call.toolName).toBe('deny');
    for (const call of unmatched)
      expect(policy.authorize(call).verdict, call.toolName).toBe('allow');
  });

  it('lists the rules that name no tool of a listing', () => {
    const policy = new RuleBasedPolicy([
      { tool: 'read_text_file', decision: 'allow' },
      { tool: 'reed_file', decision: 'deny' },
      { server: 'nowhere', decision: 'deny' },
      { tool: 'fs__write_file', decision: 'deny' },
    ]);
    const tools = [FS_READ, GH_READ].map((call) => ({
      name: call.toolName,
      origin: call.spec.origin,
    }));
    expect(policy.unmatchedRules(tools)).toEqual([
      { index: 1, tool: 'reed_file' },
      { index: 2, server: 'nowhere' },
      { index: 3, tool: 'fs__write_file' },
    ]);
  });

  it.each([
    ['a misspelled key', { tool: 'x', decison: 'deny' }, 'decison'],
    ['a file-only key', { tool: 'x', decision: 'deny', comment: 'hi' }, 'comment'],
  ])('refuses %s, naming it and the accepted keys', (_label, rule, key) => {
    let caught: unknown;
    try {
      new RuleBasedPolicy([rule as never]);
    } catch (error) {
      caught = error;
    }
    expect(ConfigurationError.isInstance(caught)).toBe(true);
    expect((caught as Error).message).toContain(JSON.stringify(key));
    expect((caught as Error).message).toContain('tool, server, operation, when, decision, reason');
    expect((caught as ConfigurationError).details).toEqual({ option: `rules[0].${key}` });
  });

  it('refuses a rule that names neither tool nor server', () => {
    expect(() => new RuleBasedPolicy([{ decision: 'deny' }])).toThrow(/give tool, server or both/);
  });
});

describe('RuleBasedPolicy argument conditions', () => {
  const read = (args: JsonObject) =>
    request('fs__read_text_file', { server: 'files', tool: 'read_text_file' }, args);
  const multi = (args: JsonObject) =>
    request('fs__read_multiple_files', { server: 'files', tool: 'read_multiple_files' }, args);
  // Per tool and argument: deny under the secrets, allow under the project, else the default.
  const rules: PolicyRule[] = [
    ['read_text_file', 'path'],
    ['read_multiple_files', 'paths'],
  ].flatMap(([tool, argument]) => [
    {
      tool: tool as string,
      when: { [argument as string]: { pathUnder: '/home/u/project/secrets' } },
      decision: 'deny' as const,
      reason: 'no secrets',
    },
    {
      tool: tool as string,
      when: { [argument as string]: { pathUnder: '/home/u/project' } },
      decision: 'allow' as const,
    },
  ]);
  const policy = new RuleBasedPolicy(rules, { default: 'ask' });

  it.each<[string, AuthorizationRequest, string, string?]>([
    ['a file in the project is allowed', read({ path: '/home/u/project/a.md' }), 'allow'],
    ['a file outside falls to the default', read({ path: '/etc/passwd' }), 'ask'],
    [
      'a secret is denied with its reason',
      read({ path: '/home/u/project/secrets/k' }),
      'deny',
      'no secrets',
    ],
    [
      '.. into the secrets is denied',
      read({ path: '/home/u/project/a/../secrets/k' }),
      'deny',
      'no secrets',
    ],
    ['.. out of the project is not allowed', read({ path: '/home/u/project/../x' }), 'ask'],
    [
      'a missing path: the deny rule matches',
      read({}),
      'deny',
      'no secrets (a condition on the arguments could not be evaluated)',
    ],
    ['a number path: the deny rule matches', read({ path: 7 }), 'deny'],
    ['a relative path: the deny rule matches', read({ path: 'secrets/k' }), 'deny'],
    [
      'a list: every path inside is allowed',
      multi({ paths: ['/home/u/project/a', '/home/u/project/b'] }),
      'allow',
    ],
    [
      'a list with one path outside is not allowed',
      multi({ paths: ['/home/u/project/a', '/etc/passwd'] }),
      'ask',
    ],
    [
      'a list with one secret is denied',
      multi({ paths: ['/home/u/project/a', '/home/u/project/secrets/k'] }),
      'deny',
    ],
    ['an empty list cannot be evaluated', multi({ paths: [] }), 'deny'],
  ])('%s', (_label, call, verdict, reason) => {
    const decision = policy.authorize(call);
    expect(decision.verdict).toBe(verdict);
    if (reason !== undefined) expect(decision.reason).toBe(reason);
  });

  it.each<[string, ArgumentConditions, JsonObject, boolean]>([
    ['equals a string', { mode: { equals: 'fast' } }, { mode: 'fast' }, true],
    ['equals is exact', { mode: { equals: 'fast' } }, { mode: 'Fast' }, false],
    [
      'equals an object, keys in any order',
      { o: { equals: { a: 1, b: [2] } } },
      { o: { b: [2], a: 1 } },
      true,
    ],
    ['in a list', { mode: { in: ['a', 'b'] } }, { mode: 'b' }, true],
    ['not in a list', { mode: { in: ['a', 'b'] } }, { mode: 'c' }, false],
    [
      'matches a glob',
      { url: { matches: 'https://example.com/*' } },
      { url: 'https://example.com/x' },
      true,
    ],
    [
      'does not match a glob',
      { url: { matches: 'https://example.com/*' } },
      { url: 'https://example.com.evil/x' },
      false,
    ],
    ['a number below', { count: { lt: 10 } }, { count: 9 }, true],
    ['a number not below', { count: { lt: 10 } }, { count: 10 }, false],
    ['a range', { count: { gte: 1, lte: 3 } }, { count: 3 }, true],
    [
      'a nested argument by JSON Pointer',
      { '/options/path': { pathUnder: '/tmp' } },
      { options: { path: '/tmp/a' } },
      true,
    ],
    ['a pointer with escapes', { '/a~1b/c~0d': { equals: 1 } }, { 'a/b': { 'c~d': 1 } }, true],
    ['a list element by pointer', { '/paths/1': { equals: 'x' } }, { paths: ['w', 'x'] }, true],
    ['every key must hold', { a: { equals: 1 }, b: { equals: 2 } }, { a: 1, b: 3 }, false],
  ])('allow when %s', (_label, when, args, allowed) => {
    const rules = new RuleBasedPolicy([{ tool: 't', when, decision: 'allow' }]);
    expect(rules.authorize(request('t', undefined, args)).verdict).toBe(allowed ? 'allow' : 'deny');
  });

  it.each<[string, ArgumentConditions, JsonObject]>([
    ['the argument is missing', { count: { lt: 10 } }, {}],
    ['a number is a numeric string', { count: { lt: 10 } }, { count: '5' }],
    ['a glob meets a number', { url: { matches: '*' } }, { url: 5 }],
    ['a pointer passes through a string', { '/a/b': { equals: 1 } }, { a: 'text' }],
    ['a pointer names an inherited property', { '/a/constructor': { equals: 1 } }, { a: {} }],
  ])(
    'cannot be evaluated when %s: an allow rule does not match, a deny rule does',
    (_l, when, args) => {
      const allow = new RuleBasedPolicy([{ tool: 't', when, decision: 'allow' }], {
        default: 'ask',
      });
      expect(allow.authorize(request('t', undefined, args)).verdict).toBe('ask');
      const deny = new RuleBasedPolicy([{ tool: 't', when, decision: 'deny' }], {
        default: 'allow',
      });
      expect(deny.authorize(request('t', undefined, args)).verdict).toBe('deny');
      const ask = new RuleBasedPolicy([{ tool: 't', when, decision: 'ask' }], { default: 'allow' });
      expect(ask.authorize(request('t', undefined, args)).verdict).toBe('ask');
    },
  );

  it.each<[string, unknown, RegExp]>([
    [
      'an unknown operator',
      { path: { startsWith: '/x' } },
      /unknown operator "startsWith" \(accepted: equals, in, matches, pathUnder, lt, lte, gt, gte\)/,
    ],
    ['no operator', { path: {} }, /names no operator/],
    ['no argument', {}, /names no argument/],
    ['a relative folder', { path: { pathUnder: 'project' } }, /absolute POSIX paths/],
    ['an empty in', { mode: { in: [] } }, /non-empty list/],
    ['a string bound', { n: { lt: '5' } }, /lt must be a finite number/],
    ['a bad pointer escape', { '/a~2': { equals: 1 } }, /JSON Pointer/],
    ['a list instead of an object', [{ path: { equals: 1 } }], /object of argument conditions/],
  ])('refuses %s', (_label, when, message) => {
    expect(
      () => new RuleBasedPolicy([{ tool: 't', when: when as never, decision: 'allow' }]),
    ).toThrow(message);
  });
});

describe('ToolRegistry with RuleBasedPolicy', () => {
  const bridged = (origin: unknown): Tool => ({
    spec: {
      name: 'fs__read_text_file',
      description: 'reads',
      inputSchema: { type: 'object' },
      origin: origin as ToolOrigin,
    },
    invoke: async () => textResult('contents'),
  });

  it("denies a bridged tool by the server's own tool name (spec.origin)", async () => {
    const registry = new ToolRegistry({
      authorizer: new RuleBasedPolicy(
        [{ tool: 'read_text_file', decision: 'deny', reason: 'no' }],
        {
          default: 'allow',
        },
      ),
    });
    await registry.register(bridged({ server: 'files', tool: 'read_text_file' }));
    await expect(
      registry.invoke('fs__read_text_file', {}, createToolContext({ runId: 'r' })),
    ).rejects.toMatchObject({ code: 'POLICY_PERMISSION_DENIED' });
    await registry.close();
  });

  it.each([
    ['a string', 'read_text_file'],
    ['no tool', { server: 'files' }],
    ['a number server', { server: 1, tool: 'x' }],
  ])('refuses a spec.origin that is %s', async (_label, origin) => {
    const registry = new ToolRegistry({ authorizer: new RuleBasedPolicy([]) });
    await expect(registry.register(bridged(origin))).rejects.toThrow(/spec\.origin must be/);
    await registry.close();
  });
});
