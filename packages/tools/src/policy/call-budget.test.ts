import { describe, expect, it, vi } from 'vitest';
import { BudgetExceededError } from '../registry/budget-exceeded-error.js';
import { CALL_NOT_RUN } from '../registry/call-not-run.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import { type Tool, textResult } from '../registry/tool.js';
import { createToolContext } from '../registry/tool-context.js';
import { ToolRegistry } from '../registry/tool-registry.js';
import { AllowAllAuthorizer } from './authorizer.js';
import { CallBudget, withBudget } from './call-budget.js';

const run = (runId: string, metadata = {}) => createToolContext({ runId, metadata });

function tool(name = 't', behaviour: () => Promise<void> = async () => {}): Tool {
  return {
    spec: { name, description: '', inputSchema: { type: 'object' }, operationArgument: 'op' },
    async invoke() {
      await behaviour();
      return textResult('ok');
    },
  };
}

describe('CallBudget', () => {
  it('limits calls per run and keeps runs apart', async () => {
    const registry = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      budget: new CallBudget({ perRun: { maxCalls: 2 } }),
    });
    await registry.register(tool());
    await registry.invoke('t', {}, run('a'));
    await registry.invoke('t', {}, run('a'));
    await expect(registry.invoke('t', {}, run('a'))).rejects.toMatchObject({
      code: 'POLICY_BUDGET_EXCEEDED',
      details: { scope: 'run', limit: 'maxCalls', max: 2 },
    });
    await registry.invoke('t', {}, run('b'));
  });

  it('refunds a call aborted before its tool was invoked', async () => {
    const budget = new CallBudget({ perRun: { maxCalls: 1 } });
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer(), budget });
    let runs = 0;
    await registry.register(
      tool('ok', async () => {
        runs += 1;
      }),
    );
    const controller = new AbortController();
    controller.abort();
    await expect(
      registry.invoke('ok', {}, createToolContext({ runId: 'a', signal: controller.signal })),
    ).rejects.toThrow();
    expect(runs).toBe(0);
    expect(budget.runUsage('a')).toEqual({ calls: 0, active: 0 });
    await registry.invoke('ok', {}, run('a'));
    expect(budget.runUsage('a')).toEqual({ calls: 1, active: 0 });
  });

  // Issue 35 item 3: a call counts from the moment its tool was invoked (its request may have
  // left); only a throw marked CALL_NOT_RUN is refunded. The slot of a call that may still run
  // elsewhere (aborted, or an ambiguous result) stays taken for cancelHoldMs.
  it.each([
    ['a plain throw counts', 'throw', { calls: 1, active: 0 }],
    ['a throw marked CALL_NOT_RUN is refunded', 'not-run', { calls: 0, active: 0 }],
    ['an abort while the tool runs counts and holds the slot', 'abort', { calls: 1, active: 1 }],
    ['an ambiguous result counts and holds the slot', 'ambiguous', { calls: 1, active: 1 }],
    ['an error result counts', 'error-result', { calls: 1, active: 0 }],
  ] as const)('%s', async (_label, how, usage) => {
    vi.useFakeTimers();
    try {
      const budget = new CallBudget({
        perRun: { maxCalls: 1, maxConcurrent: 1 },
        cancelHoldMs: 1_000,
      });
      const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer(), budget });
      const controller = new AbortController();
      await registry.register({
        spec: { name: 't', description: '', inputSchema: { type: 'object' } },
        async invoke() {
          if (how === 'throw') throw new Error('failed after it ran');
          if (how === 'not-run')
            throw Object.assign(new Error('never sent'), { [CALL_NOT_RUN]: true });
          if (how === 'abort') controller.abort();
          if (how === 'ambiguous')
            return textResult('unknown', { isError: true, metadata: { ambiguous: true } });
          return textResult('done', { isError: how === 'error-result' });
        },
      });
      await registry
        .invoke('t', {}, createToolContext({ runId: 'a', signal: controller.signal }))
        .catch(() => undefined);
      expect(budget.runUsage('a')).toEqual(usage);
      await vi.advanceTimersByTimeAsync(999);
      expect(budget.runUsage('a').active).toBe(usage.active);
      await vi.advanceTimersByTimeAsync(1);
      expect(budget.runUsage('a')).toEqual({ calls: usage.calls, active: 0 });
    } finally {
      vi.useRealTimers();
    }
  });

  it('frees the slot of an aborted call at once with cancelHoldMs: 0', () => {
    const budget = new CallBudget({ perRun: { maxConcurrent: 1 }, cancelHoldMs: 0 });
    budget.reserve({ toolName: 't', args: {}, context: run('r') }).settle(true, true);
    expect(budget.runUsage('r')).toEqual({ calls: 1, active: 0 });
  });

  it('limits concurrency and frees the slot when a call ends', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const registry = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      budget: new CallBudget({ perRun: { maxConcurrent: 1 } }),
    });
    await registry.register(tool('slow', () => gate));
    const first = registry.invoke('slow', {}, run('a'));
    await expect(registry.invoke('slow', {}, run('a'))).rejects.toMatchObject({
      details: { limit: 'maxConcurrent' },
    });
    release();
    await first;
    await registry.invoke('slow', {}, run('a'));
  });

  it('reserves every scope atomically: a full scope charges none of the others', () => {
    const budget = new CallBudget({
      perRun: { maxCalls: 10 },
      scopes: ({ context }) => [
        { key: `user:${String(context.metadata.user)}`, limits: { maxCalls: 1 } },
        { key: 'tenant', limits: { maxCalls: 5 } },
      ],
    });
    const request = (user: string) => ({ toolName: 't', args: {}, context: run('r', { user }) });
    budget.reserve(request('u1')).settle(true);
    expect(() => budget.reserve(request('u1'))).toThrow(BudgetExceededError);
    expect(budget.runUsage('r').calls).toBe(1);
    expect(budget.scopeUsage('tenant').calls).toBe(1);
    budget.reserve(request('u2')).settle(true);
    expect(budget.scopeUsage('tenant').calls).toBe(2);
  });

  it('refuses the call when the scope resolver throws or returns garbage', () => {
    const request = { toolName: 't', args: {}, context: run('r') };
    for (const scopes of [
      () => {
        throw new Error('resolver bug');
      },
      () => 'nope' as never,
      () => [{ key: 1 }] as never,
    ]) {
      expect(() => new CallBudget({ scopes }).reserve(request)).toThrow(ConfigurationError);
    }
  });

  it('forgets only idle scopes', () => {
    const budget = new CallBudget({ perRun: { maxCalls: 1 } });
    const held = budget.reserve({ toolName: 't', args: {}, context: run('r') });
    budget.forgetRun('r');
    expect(budget.runUsage('r').active).toBe(1);
    held.settle(true);
    budget.forgetRun('r');
    expect(budget.runUsage('r')).toEqual({ calls: 0, active: 0 });
  });

  it.each([
    ['negative maxCalls', { perRun: { maxCalls: -1 } }],
    ['boolean maxConcurrent', { perRun: { maxConcurrent: true as never } }],
    ['fractional maxCalls', { perRun: { maxCalls: 1.5 } }],
    ['scopes not a function', { scopes: [] as never }],
    ['negative cancelHoldMs', { cancelHoldMs: -1 }],
    ['fractional cancelHoldMs', { cancelHoldMs: 0.5 }],
    ['string cancelHoldMs', { cancelHoldMs: '10' as never }],
    ['cancelHoldMs over a day', { cancelHoldMs: 86_400_001 }],
  ])('rejects %s', (_label, options) => {
    expect(() => new CallBudget(options)).toThrow(ConfigurationError);
  });
});

describe('withBudget', () => {
  it('forwards spec and lifecycle, and enforces the budget', async () => {
    let started = 0;
    let closed = 0;
    const inner: Tool = {
      ...tool('wrapped'),
      spec: {
        name: 'wrapped',
        description: 'd',
        inputSchema: { type: 'object' },
        effect: { default: 'read' },
        operationArgument: 'op',
      },
      async start() {
        started += 1;
      },
      async close() {
        closed += 1;
      },
    };
    const wrapped = withBudget(inner, new CallBudget({ perRun: { maxCalls: 1 } }));
    expect(wrapped.spec).toBe(inner.spec);
    expect(wrapped.inner).toBe(inner);
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await registry.register(wrapped);
    expect(started).toBe(1);
    await registry.invoke(
      'wrapped',
      {},
      createToolContext({ runId: 'r', accessScope: 'read-only' }),
    );
    await expect(registry.invoke('wrapped', {}, run('r'))).rejects.toBeInstanceOf(
      BudgetExceededError,
    );
    await registry.close();
    expect(closed).toBe(1);
  });

  it('has no lifecycle methods when the wrapped tool has none', () => {
    const wrapped = withBudget(tool(), new CallBudget());
    expect('start' in wrapped).toBe(false);
    expect('close' in wrapped).toBe(false);
  });
});
