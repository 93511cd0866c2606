import { describe, expect, it } from 'vitest';
import { type Authorizer, type PermissionDecision, permission } from '../registry/authorization.js';
import { type Tool, textResult } from '../registry/tool.js';
import { ToolRegistry } from '../registry/tool-registry.js';
import { callRegistry, needsApproval, resolveAdapter } from './registry-call.js';

/** An authorizer that counts its calls; `mayAsk` as given (absent: the method is left out). */
function counting(
  verdict: PermissionDecision['verdict'],
  mayAsk: boolean | undefined,
): Authorizer & { calls: number } {
  const authorizer = {
    calls: 0,
    authorize: () => {
      authorizer.calls += 1;
      return permission(verdict, 'test');
    },
    ...(mayAsk === undefined ? {} : { mayAsk: () => mayAsk }),
  };
  return authorizer;
}

function setup(authorizer: Authorizer) {
  const ran: string[] = [];
  const tool: Tool = {
    spec: { name: 'probe', description: 'probe', inputSchema: { type: 'object' } },
    invoke: async (_args, context) => {
      ran.push(context.stepId ?? '');
      return textResult('ok');
    },
  };
  const registry = new ToolRegistry({ authorizer, tools: [tool] });
  const adapter = resolveAdapter(
    'test',
    registry,
    { context: { runId: 'r' } },
    'letters-digits-underscore',
  );
  return { registry, adapter, ran };
}

describe('the approval preview', () => {
  it('is skipped for a tool the policy never asks about: one authorization per call', async () => {
    const authorizer = counting('allow', false);
    const { adapter, ran } = setup(authorizer);
    let lookups = 0;
    expect(await needsApproval(adapter, 'probe', {}, 'tc-1')).toBe(false);
    expect(authorizer.calls).toBe(0);
    const outcome = await callRegistry(adapter, {
      toolName: 'probe',
      args: {},
      toolCallId: 'tc-1',
      signal: undefined,
      approved: () => {
        lookups += 1;
        return true;
      },
    });
    expect(outcome.kind).toBe('result');
    expect(authorizer.calls).toBe(1);
    expect(lookups).toBe(0);
    expect(ran).toEqual(['tc-1']);
    expect(adapter.previews.size).toBe(0);
  });

  it.each([
    ['an authorizer that may ask', true],
    ['an authorizer without mayAsk', undefined],
  ])('still runs for %s', async (_label, mayAsk) => {
    const authorizer = counting('allow', mayAsk);
    const { adapter } = setup(authorizer);
    expect(await needsApproval(adapter, 'probe', {}, 'tc-1')).toBe(false);
    expect(authorizer.calls).toBe(1);
    await callRegistry(adapter, {
      toolName: 'probe',
      args: {},
      toolCallId: 'tc-1',
      signal: undefined,
      approved: () => true,
    });
    expect(authorizer.calls).toBe(2);
  });

  it('an authorizer that asks after promising not to: the call is refused, never run unasked', async () => {
    const authorizer = counting('ask', false);
    const { adapter, ran } = setup(authorizer);
    expect(await needsApproval(adapter, 'probe', {}, 'tc-1')).toBe(false);
    const outcome = await callRegistry(adapter, {
      toolName: 'probe',
      args: {},
      toolCallId: 'tc-1',
      signal: undefined,
      approved: () => true,
    });
    expect(outcome).toMatchObject({ kind: 'refused', code: 'APPROVAL_REQUIRED' });
    expect(ran).toEqual([]);
  });
});
