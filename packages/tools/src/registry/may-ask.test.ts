import { describe, expect, it } from 'vitest';
import { AllowAllAuthorizer } from '../policy/authorizer.js';
import { FlowGuard } from '../policy/flow-guard.js';
import { type PolicyRule, RuleBasedPolicy } from '../policy/rule-based-policy.js';
import { type Authorizer, permission } from './authorization.js';
import { type Tool, textResult } from './tool.js';
import { createToolContext, deriveToolContext, isCreatedToolContext } from './tool-context.js';
import { ToolRegistry } from './tool-registry.js';

const inputSchema = {
  type: 'object',
  properties: { operation: { type: 'string' }, path: { type: 'string' } },
} as const;

function tool(name: string): Tool {
  return {
    spec: { name, description: name, inputSchema, operationArgument: 'operation' },
    invoke: async () => textResult('ok'),
  };
}

describe('RuleBasedPolicy.mayAsk', () => {
  it.each<[string, PolicyRule[], 'allow' | 'deny' | 'ask' | undefined, boolean]>([
    ['no rule and the default deny', [], undefined, false],
    ['no rule and the default ask', [], 'ask', true],
    ['an unconditional allow first', [{ tool: 'fs', decision: 'allow' }], 'ask', false],
    ['an ask rule for another tool only', [{ tool: 'shell', decision: 'ask' }], 'deny', false],
    ['an ask rule for the tool', [{ tool: 'fs', decision: 'ask' }], 'deny', true],
    ['a glob ask rule that matches it', [{ tool: 'f*', decision: 'ask' }], 'deny', true],
    [
      'an ask rule for one operation',
      [{ tool: 'fs', operation: 'write', decision: 'ask' }],
      'deny',
      true,
    ],
    [
      'an ask rule behind a conditional allow',
      [
        { tool: 'fs', operation: 'read', decision: 'allow' },
        { tool: 'fs', decision: 'ask' },
      ],
      'deny',
      true,
    ],
    [
      'an ask rule with an argument condition',
      [{ tool: 'fs', when: { path: { pathUnder: '/etc' } }, decision: 'ask' }],
      'deny',
      true,
    ],
    [
      'an ask rule for one caller',
      [{ tool: 'fs', principal: { subject: 'alice' }, decision: 'ask' }],
      'deny',
      true,
    ],
    [
      'the ask default behind a conditional allow',
      [{ tool: 'fs', operation: 'read', decision: 'allow' }],
      'ask',
      true,
    ],
    [
      'an ask rule after an unconditional deny',
      [
        { tool: 'fs', decision: 'deny' },
        { tool: 'fs', decision: 'ask' },
      ],
      'ask',
      false,
    ],
  ])('%s', (_label, rules, fallback, expected) => {
    const policy = new RuleBasedPolicy(rules, fallback === undefined ? {} : { default: fallback });
    expect(policy.mayAsk({ toolName: 'fs', spec: tool('fs').spec })).toBe(expected);
  });
});

describe('ToolRegistry.mayAsk', () => {
  const never: Authorizer = { authorize: () => permission('allow'), mayAsk: () => false };
  it.each<[string, () => ToolRegistry, string, boolean]>([
    [
      'false when the authorizer never asks about the tool',
      () => new ToolRegistry({ authorizer: never, tools: [tool('fs')] }),
      'fs',
      false,
    ],
    [
      'false for AllowAllAuthorizer',
      () => new ToolRegistry({ authorizer: new AllowAllAuthorizer(), tools: [tool('fs')] }),
      'fs',
      false,
    ],
    [
      'true for an authorizer without mayAsk',
      () =>
        new ToolRegistry({
          authorizer: { authorize: () => permission('allow') },
          tools: [tool('fs')],
        }),
      'fs',
      true,
    ],
    [
      'true for an authorizer whose mayAsk throws',
      () =>
        new ToolRegistry({
          authorizer: {
            authorize: () => permission('allow'),
            mayAsk: () => {
              throw new Error('boom');
            },
          },
          tools: [tool('fs')],
        }),
      'fs',
      true,
    ],
    [
      'true with a flow guard (it may raise a call to ask)',
      () =>
        new ToolRegistry({ authorizer: never, tools: [tool('fs')], flowGuard: new FlowGuard() }),
      'fs',
      true,
    ],
    [
      'true for an unknown tool',
      () => new ToolRegistry({ authorizer: never, tools: [tool('fs')] }),
      'nope',
      true,
    ],
    [
      'true when the policy asks about the tool',
      () =>
        new ToolRegistry({
          authorizer: new RuleBasedPolicy([{ tool: 'fs', decision: 'ask' }]),
          tools: [tool('fs')],
        }),
      'fs',
      true,
    ],
  ])('%s', async (_label, make, name, expected) => {
    const registry = make();
    await registry.ready();
    expect(registry.mayAsk(name)).toBe(expected);
    await registry.close();
  });

  it('an authorizer that asks after promising not to still gets no unasked call', async () => {
    let ran = 0;
    const registry = new ToolRegistry({
      authorizer: { authorize: () => permission('ask', 'lied'), mayAsk: () => false },
      tools: [{ ...tool('fs'), invoke: async () => textResult(`ran ${++ran}`) }],
    });
    expect(registry.mayAsk('fs')).toBe(false);
    await expect(registry.invoke('fs', {}, { runId: 'r' })).rejects.toMatchObject({
      code: 'APPROVAL_REQUIRED',
    });
    expect(ran).toBe(0);
    await registry.close();
  });
});

describe('deriveToolContext', () => {
  it('keeps the run and metadata, sets the step and signal, and counts as created', () => {
    const base = createToolContext({ runId: 'r', metadata: { user: 'u' }, session: 's' });
    const signal = new AbortController().signal;
    const derived = deriveToolContext(base, 'call-1', signal);
    expect(derived).toEqual({ ...base, stepId: 'call-1', signal });
    expect(derived.metadata).toBe(base.metadata);
    expect(Object.isFrozen(derived)).toBe(true);
    expect(isCreatedToolContext(derived)).toBe(true);
    expect(deriveToolContext(base, undefined, undefined)).toEqual(base);
  });

  it('checks and snapshots a context it did not make', () => {
    const metadata = { user: 'u' };
    const derived = deriveToolContext(
      { runId: 'r', session: 'r', metadata, accessScope: 'full' },
      'c',
      undefined,
    );
    expect(derived.metadata).not.toBe(metadata);
    expect(Object.isFrozen(derived.metadata)).toBe(true);
    expect(isCreatedToolContext(derived)).toBe(true);
  });

  it.each([
    ['a step id that is not a string', 42, undefined, 'context.stepId'],
    ['a signal that is not an AbortSignal', 'c', { aborted: false }, 'context.signal'],
  ])('refuses %s', (_label, stepId, signal, option) => {
    const base = createToolContext({ runId: 'r' });
    expect(() => deriveToolContext(base, stepId as never, signal as never)).toThrow(
      expect.objectContaining({ code: 'REGISTRY_CONFIGURATION', details: { option } }),
    );
  });
});
