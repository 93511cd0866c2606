import util from 'node:util';
import { defineContract } from '@toolfence/tool-contract';
import { describe, expect, it, vi } from 'vitest';
import { AllowAllAuthorizer } from '../policy/authorizer.js';
import { RuleBasedPolicy } from '../policy/rule-based-policy.js';
import { ApprovalRequiredError } from './approval-required-error.js';
import { type AuthorizationRequest, permission } from './authorization.js';
import { ConfigurationError } from './configuration-error.js';
import { PermissionDeniedError } from './permission-denied-error.js';
import { RegistryClosedError } from './registry-closed-error.js';
import { AjvSchemaValidator, type ValidationResult } from './schema-validator.js';
import { type JsonObject, type JsonValue, type Tool, type ToolResult, textResult } from './tool.js';
import { ToolCloseError } from './tool-close-error.js';
import { createToolContext } from './tool-context.js';
import { ToolExecutionError } from './tool-execution-error.js';
import { ToolInputError } from './tool-input-error.js';
import { ToolNotFoundError } from './tool-not-found-error.js';
import { type ApprovalRequest, type ToolEvent, ToolRegistry } from './tool-registry.js';
import { ToolStartError } from './tool-start-error.js';

const context = createToolContext({ runId: 'run-1' });
const readOnly = createToolContext({ runId: 'run-1', accessScope: 'read-only' });

interface FakeTool extends Tool {
  readonly calls: JsonObject[];
  closes: number;
  starts: number;
  closed: boolean;
}

function deferred<T = void>(): {
  promise: Promise<T>;
  resolve: (value: T) => void;
  reject: (error: unknown) => void;
} {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

function fakeTool(
  name: string,
  options: {
    label?: string;
    run?: (args: JsonObject) => Promise<ToolResult> | ToolResult;
    start?: () => Promise<void>;
    close?: () => Promise<void>;
    schema?: JsonObject;
    effect?: Tool['spec']['effect'];
  } = {},
): FakeTool {
  const tool: FakeTool = {
    calls: [],
    closes: 0,
    starts: 0,
    closed: false,
    spec: {
      name,
      description: `fake ${name}`,
      inputSchema: options.schema ?? {
        type: 'object',
        properties: { text: { type: 'string' } },
      },
      ...(options.effect === undefined ? {} : { effect: options.effect }),
    },
    async invoke(args) {
      if (tool.closed) throw new Error('ran on a closed instance');
      tool.calls.push(args);
      if (options.run !== undefined) return options.run(args);
      return textResult(options.label ?? name);
    },
    async start() {
      tool.starts += 1;
      await options.start?.();
    },
    async close() {
      tool.closes += 1;
      tool.closed = true;
      await options.close?.();
    },
  };
  return tool;
}

function text(result: ToolResult): string {
  const block = result.content[0];
  return block?.type === 'text' ? block.text : '';
}

describe('ToolRegistry basics', () => {
  it('runs a registered tool and lists names and specs in sorted order', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await registry.register(fakeTool('zeta'));
    await registry.register(fakeTool('alpha'));
    expect(registry.names()).toEqual(['alpha', 'zeta']);
    expect(registry.specs().map((spec) => spec.name)).toEqual(['alpha', 'zeta']);
    expect(text(await registry.invoke('alpha', { text: 'hi' }, context))).toBe('alpha');
    expect(registry.get('zeta')?.spec.name).toBe('zeta');
  });

  it('starts constructor tools and makes early calls wait for the start', async () => {
    const gate = deferred();
    const tool = fakeTool('slow', { start: () => gate.promise });
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer(), tools: [tool] });
    const call = registry.invoke('slow', {}, context);
    await Promise.resolve();
    expect(tool.calls).toHaveLength(0);
    gate.resolve();
    await registry.ready();
    expect(text(await call)).toBe('slow');
  });

  it('removes a constructor tool whose start fails and reports it from ready()', async () => {
    const tool = fakeTool('broken', { start: () => Promise.reject(new Error('boom')) });
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer(), tools: [tool] });
    const call = registry.invoke('broken', {}, context);
    await expect(registry.ready()).rejects.toBeInstanceOf(ToolStartError);
    await expect(call).rejects.toBeInstanceOf(ToolStartError);
    expect(registry.has('broken')).toBe(false);
    expect(tool.closes).toBe(1);
  });

  it('requires an authorizer', () => {
    expect(() => new ToolRegistry({} as never)).toThrow(ConfigurationError);
  });

  it('raises ToolNotFoundError for invoke, replace and unregister alike', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await expect(registry.invoke('missing', {}, context)).rejects.toBeInstanceOf(ToolNotFoundError);
    await expect(registry.replace('missing', fakeTool('missing'))).rejects.toBeInstanceOf(
      ToolNotFoundError,
    );
    await expect(registry.unregister('missing')).rejects.toBeInstanceOf(ToolNotFoundError);
    await expect(registry.invoke(42 as never, {}, context)).rejects.toBeInstanceOf(
      ToolNotFoundError,
    );
  });

  it('refuses a duplicate name without replace, and treats re-registering the same instance as a no-op', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const tool = fakeTool('one');
    await registry.register(tool);
    await registry.register(tool);
    await registry.register(tool, { replace: true });
    expect(tool.starts).toBe(1);
    expect(tool.closes).toBe(0);
    await expect(registry.register(fakeTool('one'))).rejects.toBeInstanceOf(ConfigurationError);
  });

  it('rejects a tool whose input schema cannot be compiled at registration', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const remote = fakeTool('remote', {
      schema: { type: 'object', properties: { a: { $ref: 'https://example.invalid/s.json' } } },
    });
    await expect(registry.register(remote)).rejects.toMatchObject({
      code: 'REGISTRY_CONFIGURATION',
      details: { reason: 'unresolved-ref' },
    });
    expect(remote.starts).toBe(0);
  });

  it('wraps a non-toolfence error from a tool without copying its text', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await registry.register(
      fakeTool('leaky', {
        run: () => {
          throw new Error('password=hunter2');
        },
      }),
    );
    const error = await registry.invoke('leaky', {}, context).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ToolExecutionError);
    expect((error as Error).message).not.toContain('hunter2');
    expect((error as Error).cause).toBeInstanceOf(Error);
  });

  it('validates arguments before authorization, with JSON paths and no echoed values', async () => {
    const authorize = vi.fn(() => permission('allow'));
    const registry = new ToolRegistry({ authorizer: { authorize } });
    await registry.register(
      fakeTool('strict', {
        schema: {
          type: 'object',
          properties: {
            name: { type: 'string', maxLength: 3 },
            items: { type: 'array', items: { type: 'integer' } },
          },
          required: ['name', 'must'],
          additionalProperties: false,
        },
      }),
    );
    const error = await registry
      .invoke(
        'strict',
        { name: 'secret-value-123', items: [1, 'secret-in-array'], extraSecretKey: 1 },
        context,
      )
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ToolInputError);
    const message = (error as Error).message;
    expect(message).not.toContain('secret-value');
    expect(message).not.toContain('secret-in-array');
    const issues = (error as ToolInputError).details?.issues as { path: string }[];
    expect(issues.map((issue) => issue.path)).toEqual(
      expect.arrayContaining(['$.must', '$.name', '$.items[1]']),
    );
    expect(authorize).not.toHaveBeenCalled();
  });

  it('reports at most 8 validation issues', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const properties: Record<string, JsonObject> = {};
    const args: Record<string, number> = {};
    for (let index = 0; index < 20; index += 1) {
      properties[`p${index}`] = { type: 'string' };
      args[`p${index}`] = index;
    }
    await registry.register(fakeTool('many', { schema: { type: 'object', properties } }));
    const error = (await registry
      .invoke('many', args, context)
      .catch((e: unknown) => e)) as ToolInputError;
    expect(error).toBeInstanceOf(ToolInputError);
    expect(error.details?.issues).toHaveLength(8);
  });
});

describe('ToolRegistry authorization', () => {
  it('denies a non-read call in read-only scope before the authorizer runs', async () => {
    const authorize = vi.fn(() => permission('allow'));
    const registry = new ToolRegistry({ authorizer: { authorize } });
    await registry.register(
      fakeTool('http', {
        effect: { default: 'unknown', argument: 'method', byValue: { GET: 'read', POST: 'write' } },
        schema: { type: 'object', properties: { method: { type: 'string' } } },
      }),
    );
    await expect(registry.invoke('http', { method: 'post' }, readOnly)).rejects.toMatchObject({
      code: 'POLICY_PERMISSION_DENIED',
      details: { reason: 'read-only-scope', effect: 'write' },
    });
    await expect(registry.invoke('http', {}, readOnly)).rejects.toBeInstanceOf(
      PermissionDeniedError,
    );
    expect(authorize).toHaveBeenCalledTimes(0);
    await registry.invoke('http', { method: 'get' }, readOnly);
    expect(authorize).toHaveBeenCalledTimes(1);
  });

  it('turns ask into APPROVAL_REQUIRED without an approval callback', async () => {
    const registry = new ToolRegistry({
      authorizer: new RuleBasedPolicy([{ tool: '*', decision: 'ask' }]),
    });
    const tool = fakeTool('t');
    await registry.register(tool);
    const error = await registry.invoke('t', {}, context).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApprovalRequiredError);
    expect(error).toBeInstanceOf(PermissionDeniedError);
    expect((error as ApprovalRequiredError).code).toBe('APPROVAL_REQUIRED');
    expect(tool.calls).toHaveLength(0);
  });

  it.each([
    ['approved', async () => true, 'ok'],
    ['declined', async () => false, 'approval-declined'],
    ['throws', async () => Promise.reject(new Error('x')), 'approval-error'],
    ['times out', () => new Promise<boolean>(() => {}), 'approval-timeout'],
  ])('handles an approval that is %s', async (_label, approval, expected) => {
    const registry = new ToolRegistry({
      authorizer: new RuleBasedPolicy([{ tool: '*', decision: 'ask' }]),
      approval,
      approvalTimeoutMs: 20,
    });
    await registry.register(fakeTool('t'));
    const outcome = await registry.invoke('t', {}, context).then(
      () => 'ok',
      (error: PermissionDeniedError) => error.details?.reason,
    );
    expect(outcome).toBe(expected);
  });

  it('gives the approval callback the request and the reason, and aborts its signal on timeout', async () => {
    let seen: ApprovalRequest | undefined;
    const registry = new ToolRegistry({
      authorizer: { authorize: () => permission('ask', 'writes need a human') },
      approval: (request) => {
        seen = request;
        return new Promise<boolean>(() => {});
      },
      approvalTimeoutMs: 10,
    });
    await registry.register(fakeTool('t'));
    await expect(registry.invoke('t', { text: 'x' }, context)).rejects.toMatchObject({
      details: { reason: 'approval-timeout' },
    });
    expect(seen?.toolName).toBe('t');
    expect(seen?.args).toEqual({ text: 'x' });
    expect(seen?.reason).toBe('writes need a human');
    expect(seen?.signal.aborted).toBe(true);
  });

  it('denies an approval still pending when the call is aborted', async () => {
    const controller = new AbortController();
    const registry = new ToolRegistry({
      authorizer: { authorize: () => permission('ask') },
      approval: () => {
        controller.abort();
        return new Promise<boolean>(() => {});
      },
    });
    await registry.register(fakeTool('t'));
    await expect(
      registry.invoke('t', {}, createToolContext({ runId: 'r', signal: controller.signal })),
    ).rejects.toMatchObject({ details: { reason: 'aborted' } });
  });

  it('denies when the authorizer throws or returns garbage', async () => {
    for (const authorize of [
      () => {
        throw new Error('policy bug');
      },
      () => ({ verdict: 'maybe' }) as never,
    ]) {
      const registry = new ToolRegistry({ authorizer: { authorize } });
      await registry.register(fakeTool('t'));
      await expect(registry.invoke('t', {}, context)).rejects.toBeInstanceOf(PermissionDeniedError);
    }
  });

  it('authorizes and runs the same snapshot while the caller mutates its object mid-call', async () => {
    const gate = deferred();
    const seen: JsonObject[] = [];
    const registry = new ToolRegistry({
      authorizer: {
        async authorize(request: AuthorizationRequest) {
          seen.push(request.args);
          await gate.promise;
          return permission('allow');
        },
      },
    });
    const tool = fakeTool('t', {
      schema: { type: 'object', properties: { path: { type: 'string' }, nested: {} } },
    });
    await registry.register(tool);
    const args = { path: 'safe.txt', nested: { list: [1, 2] } };
    const call = registry.invoke('t', args, context);
    await vi.waitFor(() => expect(seen).toHaveLength(1));
    args.path = '/etc/shadow';
    args.nested.list.push(3);
    gate.resolve();
    await call;
    expect(tool.calls[0]).toBe(seen[0]);
    expect(tool.calls[0]).toEqual({ path: 'safe.txt', nested: { list: [1, 2] } });
    expect(Object.isFrozen(tool.calls[0])).toBe(true);
  });
});

describe('ToolRegistry leases and replacement', () => {
  it('runs the old instance for a call whose authorization is paused during a replacement, then closes it', async () => {
    const gate = deferred();
    let paused = false;
    const registry = new ToolRegistry({
      authorizer: {
        async authorize() {
          if (!paused) {
            paused = true;
            await gate.promise;
          }
          return permission('allow');
        },
      },
    });
    const oldTool = fakeTool('t', { label: 'old' });
    const newTool = fakeTool('t', { label: 'new' });
    await registry.register(oldTool);
    const first = registry.invoke('t', {}, context);
    await vi.waitFor(() => expect(paused).toBe(true));
    await registry.replace('t', newTool);
    expect(oldTool.closes).toBe(0);
    expect(text(await registry.invoke('t', {}, context))).toBe('new');
    gate.resolve();
    expect(text(await first)).toBe('old');
    await vi.waitFor(() => expect(oldTool.closes).toBe(1));
    expect(newTool.closes).toBe(0);
  });

  it('keeps the old tool installed and usable when the new one fails to start', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const oldTool = fakeTool('t', { label: 'old' });
    const newTool = fakeTool('t', { start: () => Promise.reject(new Error('no')) });
    await registry.register(oldTool);
    await expect(registry.replace('t', newTool)).rejects.toBeInstanceOf(ToolStartError);
    expect(newTool.closes).toBe(1);
    expect(oldTool.closes).toBe(0);
    expect(registry.get('t')).toBe(oldTool);
    expect(text(await registry.invoke('t', {}, context))).toBe('old');
  });

  it('closes an idle old tool at once and awaits it in replace', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const oldTool = fakeTool('t');
    await registry.register(oldTool);
    await registry.replace('t', fakeTool('t'));
    expect(oldTool.closes).toBe(1);
  });

  it('reports a close error after a committed swap to the caller', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const oldTool = fakeTool('t', { close: () => Promise.reject(new Error('close failed')) });
    const newTool = fakeTool('t', { label: 'new' });
    await registry.register(oldTool);
    await expect(registry.replace('t', newTool)).rejects.toMatchObject({
      code: 'REGISTRY_TOOL_CLOSE_FAILED',
      details: { committed: true },
    });
    expect(registry.get('t')).toBe(newTool);
  });

  it('logs a close error of an instance retired while a call still held it', async () => {
    const gate = deferred();
    const warnings: unknown[] = [];
    const registry = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      logger: { warn: (_message, details) => warnings.push(details) },
    });
    const oldTool = fakeTool('t', {
      run: () => gate.promise.then(() => textResult('old')),
      close: () => Promise.reject(new Error('close failed')),
    });
    await registry.register(oldTool);
    const call = registry.invoke('t', {}, context);
    await vi.waitFor(() => expect(oldTool.calls).toHaveLength(1));
    await registry.replace('t', fakeTool('t'));
    gate.resolve();
    expect(text(await call)).toBe('old');
    await vi.waitFor(() =>
      expect(warnings).toEqual([{ tool: 't', code: 'REGISTRY_TOOL_CLOSE_FAILED' }]),
    );
    expect(registry.diagnostics().retiringTools).toBe(0);
  });

  it('makes unregister issued during a replacement wait, then remove the new tool', async () => {
    const gate = deferred();
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const oldTool = fakeTool('t');
    const newTool = fakeTool('t', { start: () => gate.promise });
    await registry.register(oldTool);
    const replacing = registry.replace('t', newTool);
    await vi.waitFor(() => expect(newTool.starts).toBe(1));
    const removing = registry.unregister('t');
    gate.resolve();
    await replacing;
    await removing;
    expect(registry.has('t')).toBe(false);
    expect(oldTool.closes).toBe(1);
    expect(newTool.closes).toBe(1);
    await expect(registry.invoke('t', {}, context)).rejects.toBeInstanceOf(ToolNotFoundError);
  });

  it('does not resurrect a tool when a failed replacement races an unregister', async () => {
    const gate = deferred();
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const oldTool = fakeTool('t');
    const newTool = fakeTool('t', { start: () => gate.promise });
    await registry.register(oldTool);
    const replacing = registry.replace('t', newTool);
    await vi.waitFor(() => expect(newTool.starts).toBe(1));
    const removing = registry.unregister('t');
    gate.reject(new Error('start failed'));
    await expect(replacing).rejects.toBeInstanceOf(ToolStartError);
    await removing;
    expect(registry.has('t')).toBe(false);
    expect(oldTool.closes).toBe(1);
    expect(newTool.closes).toBe(1);
  });
});

describe('ToolRegistry close', () => {
  it('stops new calls at once, waits for calls in flight and closes every tool once', async () => {
    const gate = deferred();
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const busy = fakeTool('busy', { run: () => gate.promise.then(() => textResult('done')) });
    const idle = fakeTool('idle');
    await registry.register(busy);
    await registry.register(idle);
    const call = registry.invoke('busy', {}, context);
    await vi.waitFor(() => expect(busy.calls).toHaveLength(1));
    const closing = registry.close();
    const again = registry.close();
    await expect(registry.invoke('idle', {}, context)).rejects.toBeInstanceOf(RegistryClosedError);
    await expect(registry.register(fakeTool('x'))).rejects.toBeInstanceOf(RegistryClosedError);
    await vi.waitFor(() => expect(idle.closes).toBe(1));
    expect(busy.closes).toBe(0);
    gate.resolve();
    expect(text(await call)).toBe('done');
    await closing;
    await again;
    await registry.close();
    expect(busy.closes).toBe(1);
    expect(idle.closes).toBe(1);
  });

  it('keeps closing when a waiter stops waiting', async () => {
    const gate = deferred();
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const busy = fakeTool('busy', { run: () => gate.promise.then(() => textResult('done')) });
    await registry.register(busy);
    const call = registry.invoke('busy', {}, context);
    await vi.waitFor(() => expect(busy.calls).toHaveLength(1));
    const controller = new AbortController();
    const impatient = registry.close({ signal: controller.signal });
    controller.abort();
    await expect(impatient).rejects.toBeInstanceOf(RegistryClosedError);
    expect(busy.closes).toBe(0);
    gate.resolve();
    await call;
    await registry.close();
    expect(busy.closes).toBe(1);
  });

  it('closes every tool even when one close fails, then reports it', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const bad = fakeTool('bad', { close: () => Promise.reject(new Error('x')) });
    const good = fakeTool('good');
    await registry.register(bad);
    await registry.register(good);
    await expect(registry.close()).rejects.toBeInstanceOf(ToolCloseError);
    expect(good.closes).toBe(1);
    expect(bad.closes).toBe(1);
  });

  it('closes a tool that finishes starting after close began, and installs nothing', async () => {
    const gate = deferred();
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const late = fakeTool('late', { start: () => gate.promise });
    const registering = registry.register(late);
    await vi.waitFor(() => expect(late.starts).toBe(1));
    const closing = registry.close();
    gate.resolve();
    await expect(registering).rejects.toBeInstanceOf(RegistryClosedError);
    await closing;
    expect(late.closes).toBe(1);
    expect(registry.names()).toEqual([]);
  });
});

describe('ToolRegistry middleware and events', () => {
  // Events are built by assignment (not object spread): the keys and their order are part of
  // what an audit log writes, so each event type's key list is pinned.
  it.each([
    ['digest', 'completed', {}],
    ['snapshot', 'completed', {}],
    ['digest', 'denied', { deny: true }],
    ['snapshot', 'failed', { fail: true }],
    ['digest', 'completed with an operation and a risk', { contract: true }],
  ] as const)(
    'emits events with fixed keys in a fixed order (%s, %s)',
    async (eventArguments, _type, how) => {
      const events: ToolEvent[] = [];
      const registry = new ToolRegistry({
        authorizer: new RuleBasedPolicy([
          { tool: 'denied', decision: 'deny' },
          { tool: '*', decision: 'allow' },
        ]),
        eventArguments,
        onEvent: (event) => events.push(event),
      });
      const name = 'deny' in how ? 'denied' : 't';
      const tool = fakeTool(name, {
        run: () => {
          if ('fail' in how) throw new Error('boom');
          return textResult('ok');
        },
      });
      await registry.register(
        'contract' in how
          ? {
              ...tool,
              spec: {
                ...tool.spec,
                operationContracts: {
                  select: (args: JsonObject) => args.text as string,
                  operations: { read: defineContract({ risk: 'read-only', idempotent: true }) },
                },
              },
            }
          : tool,
      );
      await registry.invoke(name, { text: 'read' }, context).catch(() => undefined);
      const base = ['callId', 'toolName', 'runId', 'stepId', 'argsDigest'];
      const withArgs = eventArguments === 'snapshot' ? [...base, 'args'] : base;
      const judged = 'contract' in how ? ['operation', 'risk'] : [];
      expect(events.map((event) => Object.keys(event))).toEqual([
        [...withArgs, 'timestamp', 'type'],
        'deny' in how
          ? [...withArgs, 'timestamp', ...judged, 'type', 'code', 'reason', 'durationMs']
          : 'fail' in how
            ? [...withArgs, 'timestamp', ...judged, 'type', 'code', 'durationMs']
            : [...withArgs, 'timestamp', ...judged, 'type', 'isError', 'durationMs'],
      ]);
      for (const event of events) expect(Object.isFrozen(event)).toBe(true);
    },
  );

  it('wraps not-found and denied calls too, outermost first', async () => {
    const order: string[] = [];
    const registry = new ToolRegistry({
      authorizer: new RuleBasedPolicy([{ tool: 'ok', decision: 'allow' }]),
      middleware: [
        async (call, next) => {
          order.push(`outer:${call.toolName}`);
          try {
            return await next();
          } finally {
            order.push(`outer-done:${call.toolName}`);
          }
        },
        async (call, next) => {
          order.push(`inner:${call.toolName}`);
          return next();
        },
      ],
    });
    await registry.register(fakeTool('ok'));
    await registry.register(fakeTool('no'));
    await registry.invoke('ok', {}, context);
    await expect(registry.invoke('missing', {}, context)).rejects.toBeInstanceOf(ToolNotFoundError);
    await expect(registry.invoke('no', {}, context)).rejects.toBeInstanceOf(PermissionDeniedError);
    expect(order).toEqual([
      'outer:ok',
      'inner:ok',
      'outer-done:ok',
      'outer:missing',
      'inner:missing',
      'outer-done:missing',
      'outer:no',
      'inner:no',
      'outer-done:no',
    ]);
  });

  it('emits started/completed/denied/failed events with a digest and never raw arguments', async () => {
    const events: ToolEvent[] = [];
    const registry = new ToolRegistry({
      authorizer: new RuleBasedPolicy([{ tool: 'ok', decision: 'allow' }]),
      onEvent: (event) => events.push(event),
    });
    await registry.register(fakeTool('ok'));
    await registry.register(fakeTool('no'));
    await registry.invoke('ok', { text: 'top-secret' }, context);
    await registry.invoke('no', { text: 'top-secret' }, context).catch(() => {});
    await registry.invoke('ok', { text: 1 }, context).catch(() => {});
    expect(events.map((event) => event.type)).toEqual([
      'started',
      'completed',
      'started',
      'denied',
      'started',
      'failed',
    ]);
    expect(JSON.stringify(events)).not.toContain('top-secret');
    expect(events[0]?.argsDigest).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(events[0]?.argsDigest).toBe(events[2]?.argsDigest);
    expect(events[5]).toMatchObject({ code: 'REGISTRY_INPUT_INVALID' });
  });
});

/** How a call reaches the tool: each path of invoke the snapshot must hold on. */
type SnapshotPath =
  | 'direct (sync policy)'
  | 'async authorizer'
  | 'middleware'
  | 'onEvent'
  | 'budget';

function snapshotRegistry(path: SnapshotPath, gate: Promise<void>): ToolRegistry {
  const allow = permission('allow');
  return new ToolRegistry({
    authorizer:
      path === 'async authorizer'
        ? {
            async authorize() {
              await gate;
              return allow;
            },
          }
        : new AllowAllAuthorizer(),
    ...(path === 'middleware'
      ? {
          middleware: [
            async (_call: unknown, next: () => Promise<ToolResult>) => {
              await gate;
              return next();
            },
          ],
        }
      : {}),
    ...(path === 'onEvent' ? { onEvent: () => undefined } : {}),
    ...(path === 'budget'
      ? {
          budget: {
            async reserve() {
              await gate;
              return { settle: () => undefined };
            },
          },
        }
      : {}),
  });
}

const SNAPSHOT_PATHS: readonly SnapshotPath[] = [
  'direct (sync policy)',
  'async authorizer',
  'middleware',
  'onEvent',
  'budget',
];

const sourceArgs = (): {
  path: string;
  nested: { list: JsonValue[]; deep: { flag: boolean } };
} => ({
  path: 'safe.txt',
  nested: { list: [1, 'two', { three: 3 }], deep: { flag: false } },
});

describe('ToolRegistry argument snapshot guarantee (TOCTOU and isolation)', () => {
  // Every row mutates the caller's object at every level after invoke started, while the call
  // waits (in the authorizer, middleware, budget or the tool itself).
  it.each(SNAPSHOT_PATHS)(
    'validates, authorizes and runs the value as it was at invoke (%s)',
    async (path) => {
      const gate = deferred();
      const toolGate = deferred();
      const seen: JsonObject[] = [];
      const registry = snapshotRegistry(path, gate.promise);
      const tool = fakeTool('t', {
        schema: {
          type: 'object',
          properties: { path: { type: 'string', maxLength: 8 }, nested: { type: 'object' } },
        },
        run: async (args) => {
          seen.push(args);
          await toolGate.promise;
          return textResult(JSON.stringify(args));
        },
      });
      await registry.register(tool);
      const args = sourceArgs();
      const call = registry.invoke('t', args, context);
      args.path = '/etc/shadow-and-longer';
      args.nested.list.push('late');
      (args.nested.list[2] as { three: number }).three = 33;
      args.nested.deep.flag = true;
      (args as Record<string, unknown>).extra = 'added';
      gate.resolve();
      await vi.waitFor(() => expect(seen).toHaveLength(1));
      args.path = 'x';
      toolGate.resolve();
      const result = await call;
      expect(result.content).toEqual([{ type: 'text', text: JSON.stringify(sourceArgs()) }]);
      expect(seen[0]).toEqual(sourceArgs());
    },
  );

  it.each(SNAPSHOT_PATHS)(
    'gives the tool a deep-frozen copy it cannot change, detached from the caller (%s)',
    async (path) => {
      const gate = deferred();
      gate.resolve();
      const registry = snapshotRegistry(path, gate.promise);
      const refused: string[] = [];
      const attempt = (label: string, change: () => void): void => {
        try {
          change();
        } catch (error) {
          if (error instanceof TypeError) refused.push(label);
        }
      };
      const tool = fakeTool('t', {
        schema: { type: 'object' },
        run: (input) => {
          const args = input as unknown as ReturnType<typeof sourceArgs>;
          attempt('set a key', () => {
            args.path = 'changed';
          });
          attempt('add a key', () => {
            (args as Record<string, unknown>).added = 1;
          });
          attempt('delete a key', () => {
            delete (args as Partial<typeof args>).path;
          });
          attempt('push to a nested array', () => args.nested.list.push('pushed'));
          attempt('set in a nested object', () => {
            args.nested.deep.flag = true;
          });
          attempt('set in an object inside an array', () => {
            (args.nested.list[2] as { three: number }).three = 0;
          });
          attempt('change a prototype', () => Object.setPrototypeOf(args.nested, null));
          return textResult('ok');
        },
      });
      await registry.register(tool);
      const args = sourceArgs();
      await registry.invoke('t', args, context);
      expect(refused).toEqual([
        'set a key',
        'add a key',
        'delete a key',
        'push to a nested array',
        'set in a nested object',
        'set in an object inside an array',
        'change a prototype',
      ]);
      expect(args).toEqual(sourceArgs());
      const given = tool.calls[0] as unknown as ReturnType<typeof sourceArgs>;
      expect(given).not.toBe(args);
      expect(given.nested).not.toBe(args.nested);
      expect(given.nested.list).not.toBe(args.nested.list);
      expect(given.nested.list[2]).not.toBe(args.nested.list[2]);
      expect(given.nested.deep).not.toBe(args.nested.deep);
    },
  );

  class Point {
    x = 1;
  }
  const values: [string, () => unknown, 'copied' | 'refused'][] = [
    ['a class instance', () => ({ at: new Point() }), 'refused'],
    ['a Date', () => ({ when: new Date(0) }), 'refused'],
    ['a Map', () => ({ map: new Map() }), 'refused'],
    ['a function', () => ({ run: () => 1 }), 'refused'],
    ['undefined in an array', () => ({ list: [undefined] }), 'refused'],
    ['a bigint', () => ({ n: 1n }), 'refused'],
    ['a non-finite number', () => ({ n: Number.NaN }), 'refused'],
    ['a boxed string', () => ({ s: new String('x') }), 'refused'],
    [
      'a sparse array',
      () => {
        const list = [1, 2, 3];
        delete list[1];
        return { list };
      },
      'refused',
    ],
    ['a proxy of an array', () => ({ list: new Proxy([1, 2], {}) }), 'copied'],
    ['a proxy of a plain object', () => ({ o: new Proxy({ a: 1 }, {}) }), 'copied'],
    [
      'a null-prototype object',
      () => ({ o: Object.assign(Object.create(null), { a: 1 }) }),
      'copied',
    ],
    [
      'a getter (read once)',
      () => {
        let reads = 0;
        return {
          get value() {
            reads += 1;
            return `read-${reads}`;
          },
        };
      },
      'copied',
    ],
  ];
  it.each(
    SNAPSHOT_PATHS.flatMap((path) =>
      values.map(([label, make, outcome]) => [path, label, make, outcome] as const),
    ),
  )('%s: %s is %s', async (path, _label, make, outcome) => {
    const gate = deferred();
    gate.resolve();
    const registry = snapshotRegistry(path, gate.promise);
    const tool = fakeTool('t', { schema: { type: 'object' } });
    await registry.register(tool);
    const call = registry.invoke('t', make(), context);
    if (outcome === 'refused') {
      await expect(call).rejects.toBeInstanceOf(ToolInputError);
      expect(tool.calls).toHaveLength(0);
      return;
    }
    await call;
    const given = tool.calls[0] as JsonObject;
    expect(Object.getPrototypeOf(given)).toBe(Object.prototype);
    const walk = (value: unknown): void => {
      if (typeof value !== 'object' || value === null) return;
      expect(Object.isFrozen(value)).toBe(true);
      expect(util.types.isProxy(value)).toBe(false);
      expect([Object.prototype, Array.prototype]).toContain(Object.getPrototypeOf(value));
      for (const child of Object.values(value)) walk(child);
    };
    walk(given);
    if (_label.startsWith('a getter')) expect(given).toEqual({ value: 'read-1' });
  });
});

describe('ToolRegistry argument snapshot', () => {
  it('rejects non-JSON arguments before any middleware sees them', async () => {
    const middleware = vi.fn(async (_call, next: () => Promise<ToolResult>) => next());
    const registry = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      middleware: [middleware],
    });
    await registry.register(fakeTool('t'));
    await expect(registry.invoke('t', { when: new Date() }, context)).rejects.toBeInstanceOf(
      ToolInputError,
    );
    expect(middleware).not.toHaveBeenCalled();
  });

  it('enforces configured snapshot limits', async () => {
    const registry = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      limits: { maxNodes: 3 },
    });
    await registry.register(fakeTool('t', { schema: { type: 'object' } }));
    await registry.invoke('t', { a: 1, b: 2 }, context);
    await expect(registry.invoke('t', { a: 1, b: 2, c: 3 }, context)).rejects.toMatchObject({
      details: { reason: 'nodes', limit: 3 },
    });
  });
});

describe('ToolRegistry options and edge cases', () => {
  it.each([
    ['approvalTimeoutMs as a boolean', { approvalTimeoutMs: true }],
    ['approvalTimeoutMs of zero', { approvalTimeoutMs: 0 }],
    ['a limit as a string', { limits: { maxDepth: '64' } }],
    ['onEvent not a function', { onEvent: 'log' }],
    ['approval not a function', { approval: true }],
    ['eventArguments unknown', { eventArguments: 'raw' }],
    ['middleware not an array', { middleware: () => {} }],
    ['a middleware that is not a function', { middleware: [1] }],
    ['a validator without prepare', { validator: { validate: () => ({ valid: true }) } }],
    ['a budget that is not a CallBudget', { budget: {} }],
  ])('rejects %s', (_label, options) => {
    expect(
      () => new ToolRegistry({ authorizer: new AllowAllAuthorizer(), ...(options as object) }),
    ).toThrow(ConfigurationError);
  });

  it('refuses one instance under two names and a replacement with another name', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const tool = fakeTool('a');
    await registry.register(tool);
    await registry.register(fakeTool('b'));
    await expect(registry.replace('b', tool)).rejects.toBeInstanceOf(ConfigurationError);
    await expect(registry.replace('b', fakeTool('c'))).rejects.toBeInstanceOf(ConfigurationError);
  });

  it('passes the context signal to the tool and does not run an already-aborted call', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    let seen: AbortSignal | undefined;
    const tool = fakeTool('t', {
      run: () => textResult('ok'),
    });
    const original = tool.invoke;
    tool.invoke = async (args, ctx) => {
      seen = ctx.signal;
      return original.call(tool, args, ctx);
    };
    await registry.register(tool);
    const controller = new AbortController();
    await registry.invoke('t', {}, createToolContext({ runId: 'r', signal: controller.signal }));
    expect(seen).toBe(controller.signal);
    controller.abort();
    await expect(
      registry.invoke('t', {}, createToolContext({ runId: 'r', signal: controller.signal })),
    ).rejects.toMatchObject({ code: 'REGISTRY_TOOL_FAILED', details: { reason: 'aborted' } });
    expect(tool.calls).toHaveLength(1);
  });

  it('rejects a middleware that calls next twice', async () => {
    const registry = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      middleware: [
        async (_call, next) => {
          await next();
          return next();
        },
      ],
    });
    const tool = fakeTool('t');
    await registry.register(tool);
    await expect(registry.invoke('t', {}, context)).rejects.toBeInstanceOf(ConfigurationError);
    expect(tool.calls).toHaveLength(1);
  });

  it('logs and ignores a throwing onEvent, and can include the snapshot when asked', async () => {
    const warnings: string[] = [];
    const registry = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      onEvent: () => {
        throw new Error('sink down');
      },
      logger: { warn: (message) => warnings.push(message) },
    });
    await registry.register(fakeTool('t'));
    await registry.invoke('t', {}, context);
    expect(warnings.length).toBeGreaterThan(0);

    const events: ToolEvent[] = [];
    const verbose = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      onEvent: (event) => events.push(event),
      eventArguments: 'snapshot',
    });
    await verbose.register(fakeTool('t'));
    await verbose.invoke('t', { text: 'shown' }, context);
    expect(events[0]?.args).toEqual({ text: 'shown' });
  });

  it('rejects a malformed tool result', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await registry.register(fakeTool('t', { run: () => ({ text: 'no content' }) as never }));
    await expect(registry.invoke('t', {}, context)).rejects.toMatchObject({
      details: { reason: 'invalid-result' },
    });
  });

  it('passes a ToolsError thrown by a tool through unchanged', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const typed = new PermissionDeniedError('outside the root', { details: { reason: 'root' } });
    await registry.register(
      fakeTool('t', {
        run: () => {
          throw typed;
        },
      }),
    );
    await expect(registry.invoke('t', {}, context)).rejects.toBe(typed);
  });

  it('reports a close error from an idle unregister as committed', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await registry.register(fakeTool('t', { close: () => Promise.reject(new Error('x')) }));
    await expect(registry.unregister('t')).rejects.toBeInstanceOf(ToolCloseError);
    expect(registry.has('t')).toBe(false);
  });

  it('accepts a plain context init and validates it', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await registry.register(fakeTool('t'));
    await registry.invoke('t', {}, { runId: 'plain' });
    await expect(registry.invoke('t', {}, { runId: '' })).rejects.toBeInstanceOf(
      ConfigurationError,
    );
  });
});

describe('ToolRegistry with a custom validator', () => {
  it('uses the replacement validator, and middleware, validator, authorizer and tool all get the one snapshot', async () => {
    const seen: unknown[] = [];
    const prepared: JsonObject[] = [];
    const registry = new ToolRegistry({
      validator: {
        prepare: (schema) => void prepared.push(schema),
        validate: (_schema, value) => {
          seen.push(value);
          return (value as JsonObject).ok === true
            ? { valid: true }
            : { valid: false, issues: [{ path: '$.ok', message: 'must be true' }] };
        },
      },
      middleware: [
        async (call, next) => {
          seen.push(call.args);
          return next();
        },
      ],
      authorizer: {
        authorize: (request) => {
          seen.push(request.args);
          return permission('allow');
        },
      },
    });
    const tool = fakeTool('t');
    await registry.register(tool);
    expect(prepared).toEqual([tool.spec.inputSchema]);
    await registry.invoke('t', { ok: true }, context);
    seen.push(tool.calls[0]);
    expect(seen).toHaveLength(4);
    for (const value of seen) expect(value).toBe(seen[0]);
    await expect(registry.invoke('t', { ok: false }, context)).rejects.toMatchObject({
      code: 'REGISTRY_INPUT_INVALID',
      details: { issues: [{ path: '$.ok', message: 'must be true' }] },
    });
  });
});

describe('ToolRegistry.registerAll', () => {
  it('registers every tool of an array, as bridgeTools returns them', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const tools = ['a', 'b', 'c'].map((name) => fakeTool(name));
    await registry.registerAll(tools);
    expect(registry.names()).toEqual(['a', 'b', 'c']);
    expect(tools.map((tool) => tool.starts)).toEqual([1, 1, 1]);
  });

  it('starts nothing when a name repeats or is already in use', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await registry.register(fakeTool('taken'));
    const fresh = fakeTool('fresh');
    await expect(registry.registerAll([fresh, fakeTool('taken')])).rejects.toMatchObject({
      code: 'REGISTRY_CONFIGURATION',
      details: { tool: 'taken' },
    });
    const twice = fakeTool('twice');
    await expect(registry.registerAll([twice, fakeTool('twice')])).rejects.toMatchObject({
      code: 'REGISTRY_CONFIGURATION',
      details: { tool: 'twice' },
    });
    expect(fresh.starts + twice.starts).toBe(0);
    expect(registry.names()).toEqual(['taken']);
  });

  it('removes the tools it installed when a later one fails to start', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    const first = fakeTool('first');
    const broken = fakeTool('broken', {
      start: async () => {
        throw new Error('no');
      },
    });
    await expect(registry.registerAll([first, broken])).rejects.toBeInstanceOf(ToolStartError);
    expect(registry.names()).toEqual([]);
    expect(first.closed).toBe(true);
  });

  it('replaces tools in use only with { replace: true }', async () => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await registry.register(fakeTool('a', { label: 'old' }));
    await registry.registerAll([fakeTool('a', { label: 'new' }), fakeTool('b')], { replace: true });
    expect(registry.names()).toEqual(['a', 'b']);
  });

  it.each([
    [
      'a second tool passed where options go',
      (registry: ToolRegistry) => registry.register(fakeTool('x'), fakeTool('y') as never),
      'options',
    ],
    [
      'a misspelled option',
      (registry: ToolRegistry) => registry.register(fakeTool('x'), { replce: true } as never),
      'replce',
    ],
    [
      'a non-boolean replace',
      (registry: ToolRegistry) => registry.register(fakeTool('x'), { replace: 'yes' } as never),
      'replace',
    ],
    [
      'a tool instead of an array',
      (registry: ToolRegistry) => registry.registerAll(fakeTool('x') as never),
      'tools',
    ],
  ])('refuses %s with a message that says what is accepted', async (_label, act, option) => {
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await expect(act(registry)).rejects.toMatchObject({
      code: 'REGISTRY_CONFIGURATION',
      details: { option },
    });
    expect(registry.names()).toEqual([]);
  });
});

describe('the direct path (no middleware, events or budget)', () => {
  const ok = textResult('ok');
  it.each([
    [
      'a synchronous throw',
      () => {
        throw new Error('boom');
      },
      'threw',
    ],
    ['a rejection', () => Promise.reject(new Error('boom')), 'threw'],
    ['a plain value', () => ok as unknown as Promise<ToolResult>, undefined],
    // biome-ignore lint/suspicious/noThenProperty: a tool returning a foreign thenable is the case under test
    ['a thenable', () => ({ then: (resolve: (value: unknown) => void) => resolve(ok) }), undefined],
    ['an invalid result', () => Promise.resolve({ content: 'no' }), 'invalid-result'],
  ])('answers %s like the general path and ends the lease', async (_label, run, reason) => {
    const tool = {
      spec: { name: 't', description: '', inputSchema: { type: 'object' } },
      invoke: run as unknown as Tool['invoke'],
    };
    for (const audited of [false, true]) {
      const registry = new ToolRegistry({
        authorizer: new AllowAllAuthorizer(),
        tools: [tool],
        ...(audited ? { onEvent: () => {} } : {}),
      });
      const call = registry.invoke('t', {}, { runId: 'r' });
      if (reason === undefined) {
        await expect(call).resolves.toEqual(ok);
      } else {
        await expect(call).rejects.toSatisfy(
          (error) => ToolExecutionError.isInstance(error) && error.details?.reason === reason,
        );
      }
      expect(registry.diagnostics().activeCalls).toBe(0);
      await registry.close();
    }
  });

  it('ends each call on the instance it leased: a replacement closes the old one after its own last call', async () => {
    const closed: string[] = [];
    const pending: Record<string, ReturnType<typeof deferred<ToolResult>>[]> = { old: [], new: [] };
    const make = (label: 'old' | 'new'): Tool => ({
      spec: { name: 't', description: '', inputSchema: { type: 'object' } },
      invoke: () => {
        const call = deferred<ToolResult>();
        pending[label]?.push(call);
        return call.promise;
      },
      close: async () => {
        closed.push(label);
      },
    });
    const registry = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      tools: [make('old')],
    });
    await registry.ready();
    const onOld = registry.invoke('t', {}, context);
    const swapped = registry.replace('t', make('new'));
    await swapped;
    const onNew = registry.invoke('t', {}, context);
    await Promise.resolve();
    expect(pending.old).toHaveLength(1);
    expect(pending.new).toHaveLength(1);
    // The new instance's call ending must not release the old instance's lease.
    pending.new?.[0]?.resolve(textResult('new'));
    await expect(onNew).resolves.toEqual(textResult('new'));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(closed).toEqual([]);
    expect(registry.diagnostics()).toMatchObject({ activeCalls: 1, retiringTools: 1 });
    pending.old?.[0]?.reject(new Error('late'));
    await expect(onOld).rejects.toMatchObject({ details: { reason: 'threw' } });
    await vi.waitFor(() => expect(closed).toEqual(['old']));
    expect(registry.diagnostics()).toMatchObject({ activeCalls: 0, retiringTools: 0 });
    await registry.close();
  });

  it('tells an aborted call from a throw when the tool fails after the signal fired', async () => {
    const gate = deferred();
    const tool: Tool = {
      spec: { name: 't', description: '', inputSchema: { type: 'object' } },
      invoke: async () => {
        await gate.promise;
        throw new Error('stopped');
      },
    };
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer(), tools: [tool] });
    const controller = new AbortController();
    const aborted = registry.invoke('t', {}, { runId: 'r', signal: controller.signal });
    const unsignalled = registry.invoke('t', {}, { runId: 'r' });
    const signalled = registry.invoke(
      't',
      {},
      { runId: 'r', signal: new AbortController().signal },
    );
    await Promise.resolve();
    controller.abort();
    gate.resolve();
    await expect(aborted).rejects.toMatchObject({ details: { reason: 'aborted' } });
    await expect(unsignalled).rejects.toMatchObject({ details: { reason: 'threw' } });
    await expect(signalled).rejects.toMatchObject({ details: { reason: 'threw' } });
    expect(registry.diagnostics().activeCalls).toBe(0);
    await registry.close();
  });

  it('calls a validator subclass that overrides validate on every call', async () => {
    const seen: JsonValue[] = [];
    class CountingValidator extends AjvSchemaValidator {
      override validate(schema: JsonObject, value: JsonValue): ValidationResult {
        seen.push(value);
        return super.validate(schema, value);
      }
    }
    const registry = new ToolRegistry({
      authorizer: new AllowAllAuthorizer(),
      validator: new CountingValidator(),
      tools: [fakeTool('t')],
    });
    await registry.invoke('t', { a: 1 }, context);
    await registry.invoke('t', { a: 2 }, context);
    expect(seen).toEqual([{ a: 1 }, { a: 2 }]);
    await registry.close();
  });

  it('holds the lease through an asynchronous authorizer and closes a replaced tool after', async () => {
    let allow: (() => void) | undefined;
    const closed: string[] = [];
    const make = (label: string): Tool => ({
      spec: { name: 't', description: '', inputSchema: { type: 'object' } },
      invoke: async () => textResult(label),
      close: async () => {
        closed.push(label);
      },
    });
    const registry = new ToolRegistry({
      authorizer: {
        authorize: () =>
          new Promise((resolve) => {
            allow = () => resolve(permission('allow'));
          }),
      },
      tools: [make('old')],
    });
    await registry.ready();
    const call = registry.invoke('t', {}, { runId: 'r' });
    await vi.waitFor(() => expect(allow).toBeDefined());
    expect(registry.diagnostics().activeCalls).toBe(1);
    await registry.replace('t', make('new'));
    expect(closed).toEqual([]);
    allow?.();
    expect(await call).toEqual(textResult('old'));
    await vi.waitFor(() => expect(closed).toEqual(['old']));
    expect(registry.diagnostics().activeCalls).toBe(0);
    await registry.close();
  });
});
