import { describe, expect, it } from 'vitest';
import { CallBudget, withBudget } from '../policy/call-budget.js';
import { ApprovalRequiredError } from './approval-required-error.js';
import { type AuthorizationRequest, type Authorizer, permission } from './authorization.js';
import { ConfigurationError } from './configuration-error.js';
import { PermissionDeniedError } from './permission-denied-error.js';
import { type JsonObject, type Tool, textResult } from './tool.js';
import { createToolContext } from './tool-context.js';
import { ToolInputError } from './tool-input-error.js';
import { ToolNotFoundError } from './tool-not-found-error.js';
import { ToolRegistry } from './tool-registry.js';

const context = createToolContext({ runId: 'run-1' });

function recordingTool(name = 'write_note'): Tool & { calls: JsonObject[] } {
  const calls: JsonObject[] = [];
  return {
    calls,
    spec: {
      name,
      description: 'writes a note',
      inputSchema: {
        type: 'object',
        properties: { text: { type: 'string' } },
        required: ['text'],
        additionalProperties: false,
      },
    },
    async invoke(args) {
      calls.push(args);
      return textResult('written');
    },
  };
}

/** Asks for every call, and counts how often it was consulted. */
function asking(verdict: 'ask' | 'allow' | 'deny' = 'ask'): Authorizer & { seen: number } {
  const authorizer = {
    seen: 0,
    authorize(_request: AuthorizationRequest) {
      authorizer.seen += 1;
      return permission(verdict, `policy ${verdict}`);
    },
  };
  return authorizer;
}

describe('ToolRegistry.authorize and approval grants', () => {
  it('previews the verdict without running the tool, asking no approval callback', async () => {
    const tool = recordingTool();
    let approvals = 0;
    const registry = new ToolRegistry({
      authorizer: asking(),
      tools: [tool],
      approval: () => {
        approvals += 1;
        return true;
      },
    });
    const authorization = await registry.authorize('write_note', { text: 'a' }, context);
    expect(authorization).toMatchObject({
      toolName: 'write_note',
      verdict: 'ask',
      reason: 'policy ask',
    });
    expect(Object.isFrozen(authorization)).toBe(true);
    expect(tool.calls).toEqual([]);
    expect(approvals).toBe(0);
  });

  it('rejects a preview with the errors invoke would raise before authorizing', async () => {
    const registry = new ToolRegistry({ authorizer: asking(), tools: [recordingTool()] });
    await expect(registry.authorize('nope', {}, context)).rejects.toSatisfy((error: unknown) =>
      ToolNotFoundError.isInstance(error),
    );
    await expect(registry.authorize('write_note', { text: 1 }, context)).rejects.toSatisfy(
      (error: unknown) => ToolInputError.isInstance(error),
    );
    const readOnly = createToolContext({ runId: 'r', accessScope: 'read-only' });
    await expect(registry.authorize('write_note', { text: 'a' }, readOnly)).rejects.toSatisfy(
      (error: unknown) => PermissionDeniedError.isInstance(error),
    );
  });

  it('counts a throwing authorizer as deny in a preview', async () => {
    const registry = new ToolRegistry({
      authorizer: {
        authorize() {
          throw new Error('boom');
        },
      },
      tools: [recordingTool()],
    });
    await expect(registry.authorize('write_note', { text: 'a' }, context)).resolves.toMatchObject({
      verdict: 'deny',
      reason: 'authorizer-error',
    });
  });

  it('runs a granted call once, without the approval callback', async () => {
    const tool = recordingTool();
    const policy = asking();
    let approvals = 0;
    const registry = new ToolRegistry({
      authorizer: policy,
      tools: [tool],
      approval: () => {
        approvals += 1;
        return false;
      },
    });
    const authorization = await registry.authorize('write_note', { text: 'a' }, context);
    const grant = registry.grantApproval(authorization);
    expect(grant).toMatchObject({ toolName: 'write_note', runId: 'run-1' });
    expect(grant.argsDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    const result = await registry.invoke('write_note', { text: 'a' }, context, { approval: grant });
    expect(result.content).toEqual([{ type: 'text', text: 'written' }]);
    expect(tool.calls).toEqual([{ text: 'a' }]);
    expect(approvals).toBe(0);
    // The authorizer still decided the real call (a later deny would still deny).
    expect(policy.seen).toBe(2);
  });

  it('without a grant, an ask still needs the approval callback', async () => {
    const tool = recordingTool();
    const registry = new ToolRegistry({ authorizer: asking(), tools: [tool] });
    await expect(registry.invoke('write_note', { text: 'a' }, context)).rejects.toSatisfy(
      (error: unknown) => ApprovalRequiredError.isInstance(error),
    );
    expect(tool.calls).toEqual([]);
  });

  it.each([
    ['other arguments', 'write_note', { text: 'b' }, 'run-1'],
    ['another run', 'write_note', { text: 'a' }, 'run-2'],
    ['another tool', 'other_note', { text: 'a' }, 'run-1'],
  ])('denies a grant presented for %s', async (_label, name, args, runId) => {
    const first = recordingTool();
    const second = recordingTool('other_note');
    const registry = new ToolRegistry({ authorizer: asking(), tools: [first, second] });
    const grant = registry.grantApproval(
      await registry.authorize('write_note', { text: 'a' }, context),
    );
    const error = await registry
      .invoke(name, args, createToolContext({ runId }), { approval: grant })
      .catch((caught: unknown) => caught);
    expect(PermissionDeniedError.isInstance(error)).toBe(true);
    expect((error as PermissionDeniedError).details?.reason).toBe('approval-grant-mismatch');
    expect(first.calls).toEqual([]);
    expect(second.calls).toEqual([]);
  });

  it('denies a grant for a tool instance that was replaced since the approval', async () => {
    const registry = new ToolRegistry({ authorizer: asking(), tools: [recordingTool()] });
    const grant = registry.grantApproval(
      await registry.authorize('write_note', { text: 'a' }, context),
    );
    const replacement = recordingTool();
    await registry.register(replacement, { replace: true });
    const error = await registry
      .invoke('write_note', { text: 'a' }, context, { approval: grant })
      .catch((caught: unknown) => caught);
    expect((error as PermissionDeniedError).details?.reason).toBe('approval-grant-mismatch');
    expect(replacement.calls).toEqual([]);
  });

  it.each([
    [
      'a wrapper forwarding the same spec object',
      (tool: Tool & { calls: JsonObject[] }): Tool => ({
        ...tool,
        invoke: (args, callContext) => tool.invoke(args, callContext),
      }),
    ],
    [
      'withBudget(tool) (its spec is the same object)',
      (tool: Tool & { calls: JsonObject[] }): Tool =>
        withBudget(tool, new CallBudget({ perRun: { maxCalls: 10 } })),
    ],
  ])(
    'denies a grant after a replacement by %s (a grant binds to the registration)',
    async (_label, replace) => {
      const original = recordingTool();
      const registry = new ToolRegistry({ authorizer: asking(), tools: [original] });
      const grant = registry.grantApproval(
        await registry.authorize('write_note', { text: 'a' }, context),
      );
      const replacement = replace(original);
      expect(replacement.spec).toBe(original.spec);
      await registry.replace('write_note', replacement);
      const error = await registry
        .invoke('write_note', { text: 'a' }, context, { approval: grant })
        .catch((caught: unknown) => caught);
      expect((error as PermissionDeniedError).details?.reason).toBe('approval-grant-mismatch');
      expect(original.calls).toEqual([]);
    },
  );

  it('uses a grant once: a second presentation is denied, also when both race', async () => {
    const tool = recordingTool();
    const registry = new ToolRegistry({ authorizer: asking(), tools: [tool] });
    const grant = registry.grantApproval(
      await registry.authorize('write_note', { text: 'a' }, context),
    );
    const outcomes = await Promise.allSettled(
      Array.from({ length: 16 }, () =>
        registry.invoke('write_note', { text: 'a' }, context, { approval: grant }),
      ),
    );
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1);
    const reasons = outcomes
      .filter((outcome) => outcome.status === 'rejected')
      .map((outcome) => (outcome.reason as PermissionDeniedError).details?.reason);
    expect(new Set(reasons)).toEqual(new Set(['approval-grant-used']));
    expect(tool.calls).toHaveLength(1);
  });

  it('a grant does not override a deny, and budgets still apply', async () => {
    const tool = recordingTool();
    let verdict: 'ask' | 'deny' = 'ask';
    const registry = new ToolRegistry({
      authorizer: { authorize: () => permission(verdict) },
      tools: [tool],
      budget: new CallBudget({ perRun: { maxCalls: 0 } }),
    });
    const first = registry.grantApproval(
      await registry.authorize('write_note', { text: 'a' }, context),
    );
    const second = registry.grantApproval(
      await registry.authorize('write_note', { text: 'a' }, context),
    );
    await expect(
      registry.invoke('write_note', { text: 'a' }, context, { approval: first }),
    ).rejects.toMatchObject({ code: 'POLICY_BUDGET_EXCEEDED' });
    verdict = 'deny';
    await expect(
      registry.invoke('write_note', { text: 'a' }, context, { approval: second }),
    ).rejects.toMatchObject({ code: PermissionDeniedError.code });
    expect(tool.calls).toEqual([]);
  });

  it.each([
    ['a forged grant', { toolName: 'write_note', argsDigest: 'sha256:00', runId: 'run-1' }],
    ['an unknown option', undefined],
  ])('refuses %s as a programming error', async (_label, forged) => {
    const registry = new ToolRegistry({ authorizer: asking(), tools: [recordingTool()] });
    const options = forged === undefined ? { approved: true } : { approval: forged };
    await expect(
      registry.invoke('write_note', { text: 'a' }, context, options as never),
    ).rejects.toSatisfy((error: unknown) => ConfigurationError.isInstance(error));
  });

  it('grants only an ask from this registry, once', async () => {
    const registry = new ToolRegistry({ authorizer: asking('allow'), tools: [recordingTool()] });
    const other = new ToolRegistry({ authorizer: asking(), tools: [recordingTool()] });
    const allowed = await registry.authorize('write_note', { text: 'a' }, context);
    expect(() => registry.grantApproval(allowed)).toThrow(/Only an 'ask'/);
    const foreign = await other.authorize('write_note', { text: 'a' }, context);
    expect(() => registry.grantApproval(foreign)).toThrow(/from this registry/);
    other.grantApproval(foreign);
    expect(() => other.grantApproval(foreign)).toThrow(/already been granted/);
  });
});
