import { defineContract, type ToolContract } from '@toolfence/tool-contract';
import { describe, expect, it } from 'vitest';
import { RiskPolicy } from '../policy/risk-policy.js';
import { type AuthorizationRequest, permission } from './authorization.js';
import { ConfigurationError } from './configuration-error.js';
import { contractOf } from './contract-of.js';
import { PermissionDeniedError } from './permission-denied-error.js';
import type { JsonObject, Tool, ToolSpec } from './tool.js';
import { textResult } from './tool.js';
import { ToolInputError } from './tool-input-error.js';
import { type ToolEvent, ToolRegistry } from './tool-registry.js';

const read = defineContract({ risk: 'read-only', idempotent: true });
const write = defineContract({ risk: 'low-risk-write' });
const wipe = defineContract({ risk: 'destructive', contentTrust: 'untrusted' });

const schema: JsonObject = {
  type: 'object',
  // operation is left untyped so the contract layer, not the schema, is what refuses.
  properties: { operation: {}, force: { type: 'boolean' } },
};

/** A tool that counts its runs; `operationContracts` and other spec fields come from `extra`. */
function counted(extra: Partial<ToolSpec>): Tool & { runs: string[] } {
  const runs: string[] = [];
  return {
    runs,
    spec: { name: 'store', description: 'a store', inputSchema: schema, ...extra },
    async invoke(args) {
      runs.push(String(args.operation));
      return textResult('ok');
    },
  };
}

const byArgument = { select: 'operation', operations: { get: read, put: write, drop: wipe } };

function seen(): { requests: AuthorizationRequest[]; authorize(r: AuthorizationRequest): never } {
  return {
    requests: [],
    authorize(request) {
      this.requests.push(request);
      return permission('allow') as never;
    },
  };
}

describe('per-operation contracts', () => {
  it.each([
    ['no select', { operations: { get: read } }],
    ['an empty select', { select: '', operations: { get: read } }],
    ['a numeric select', { select: 1, operations: { get: read } }],
    ['no operations', { select: 'operation' }],
    ['empty operations', { select: 'operation', operations: {} }],
    ['operations as an array', { select: 'operation', operations: [read] }],
    ['a malformed contract', { select: 'operation', operations: { get: { risk: 'harmless' } } }],
    ['a contract that is not an object', { select: 'operation', operations: { get: 'read' } }],
    ['an unknown key', { select: 'operation', operations: { get: read }, default: 'get' }],
  ])('refuses to register a tool with %s', async (_label, operationContracts) => {
    const registry = new ToolRegistry({ authorizer: seen() });
    const tool = counted({ operationContracts } as unknown as Partial<ToolSpec>);
    await expect(registry.register(tool)).rejects.toSatisfy(
      (error) =>
        ConfigurationError.isInstance(error) && error.details?.option === 'spec.operationContracts',
    );
    expect(registry.has('store')).toBe(false);
  });

  it('refuses effect next to operationContracts, and a static contract below an operation', async () => {
    const registry = new ToolRegistry({ authorizer: seen() });
    await expect(
      registry.register(counted({ operationContracts: byArgument, effect: 'read' })),
    ).rejects.toThrow(/either effect or operationContracts/);
    await expect(
      registry.register(counted({ operationContracts: byArgument, contract: write })),
    ).rejects.toThrow(/"drop" is riskier/);
    await registry.register(counted({ operationContracts: byArgument, contract: wipe }));
    expect(registry.has('store')).toBe(true);
  });

  it('judges each call by its operation: the authorizer, approval and scope see its contract', async () => {
    const authorizer = seen();
    const tool = counted({ operationContracts: byArgument });
    const registry = new ToolRegistry({ authorizer, tools: [tool] });
    await registry.invoke('store', { operation: 'get' }, { runId: 'r' });
    await registry.invoke('store', { operation: 'drop' }, { runId: 'r' });
    expect(
      authorizer.requests.map((request) => [request.operation, request.contract?.risk]),
    ).toEqual([
      ['get', 'read-only'],
      ['drop', 'destructive'],
    ]);
    expect(authorizer.requests.map((request) => request.effect)).toEqual(['read', 'write']);
    await registry.invoke('store', { operation: 'get' }, { runId: 'r', accessScope: 'read-only' });
    await expect(
      registry.invoke('store', { operation: 'put' }, { runId: 'r', accessScope: 'read-only' }),
    ).rejects.toSatisfy(
      (error) =>
        PermissionDeniedError.isInstance(error) && error.details?.reason === 'read-only-scope',
    );
    expect(tool.runs).toEqual(['get', 'drop', 'get']);
    const verdict = await registry.authorize('store', { operation: 'drop' }, { runId: 'r' });
    expect(verdict.verdict).toBe('allow');
    expect(authorizer.requests.at(-1)?.contract?.risk).toBe('destructive');
  });

  it('asks the approval callback with the contract of the call, under RiskPolicy', async () => {
    const asked: (string | undefined)[] = [];
    const tool = counted({ operationContracts: byArgument });
    const registry = new ToolRegistry({
      authorizer: new RiskPolicy(),
      approval: (request) => {
        asked.push(`${request.operation} ${request.reason}`);
        return true;
      },
      tools: [tool],
    });
    await registry.invoke('store', { operation: 'get' }, { runId: 'r' });
    await registry.invoke('store', { operation: 'put' }, { runId: 'r' });
    await registry.invoke('store', { operation: 'drop' }, { runId: 'r' });
    expect(asked).toEqual(['put declared risk low-risk-write', 'drop declared risk destructive']);
  });

  it.each([
    ['an undeclared operation', { operation: 'truncate' }],
    ['an operation in another case', { operation: 'DROP' }],
    ['no operation', {}],
    ['a non-string operation', { operation: 7 }],
    ['an inherited key name', { operation: 'constructor' }],
  ])('refuses %s before the authorizer or the tool runs', async (_label, args) => {
    const authorizer = seen();
    const tool = counted({ operationContracts: byArgument });
    const registry = new ToolRegistry({ authorizer, tools: [tool] });
    await expect(registry.invoke('store', args, { runId: 'r' })).rejects.toSatisfy(
      (error) =>
        ToolInputError.isInstance(error) &&
        error.details?.reason === 'unknown-operation' &&
        /accepted: get, put, drop/.test(error.message),
    );
    expect(authorizer.requests).toEqual([]);
    expect(tool.runs).toEqual([]);
  });

  it.each([
    [
      'throws',
      () => {
        throw new Error('boom');
      },
    ],
    ['returns a number', () => 3 as unknown as string],
    ['returns an undeclared operation', () => 'truncate'],
    ['returns a contract instead of a name', () => wipe as unknown as string],
  ])('fails closed when the selector %s', async (_label, select) => {
    const authorizer = seen();
    const tool = counted({ operationContracts: { select, operations: { get: read, drop: wipe } } });
    const registry = new ToolRegistry({ authorizer, tools: [tool] });
    await expect(registry.invoke('store', { operation: 'get' }, { runId: 'r' })).rejects.toSatisfy(
      (error) =>
        PermissionDeniedError.isInstance(error) && error.details?.reason === 'contract-error',
    );
    expect(authorizer.requests).toEqual([]);
    expect(tool.runs).toEqual([]);
  });

  it('lets a selector refine the operation from other arguments', async () => {
    const authorizer = seen();
    const tool = counted({
      operationContracts: {
        select: (args) =>
          args.operation === 'put' && args.force === true
            ? 'put-force'
            : (args.operation as string),
        operations: { get: read, put: write, 'put-force': wipe },
      },
    });
    const registry = new ToolRegistry({ authorizer, tools: [tool] });
    await registry.invoke('store', { operation: 'put' }, { runId: 'r' });
    await registry.invoke('store', { operation: 'put', force: true }, { runId: 'r' });
    expect(authorizer.requests.map((request) => request.contract?.risk)).toEqual([
      'low-risk-write',
      'destructive',
    ]);
  });

  it('keeps the contracts it registered: changing the spec later lowers nothing', async () => {
    const operations: Record<string, ToolContract> = { get: read, drop: wipe };
    const authorizer = seen();
    const tool = counted({ operationContracts: { select: 'operation', operations } });
    const registry = new ToolRegistry({ authorizer, tools: [tool] });
    await registry.ready();
    operations.drop = read;
    await registry.invoke('store', { operation: 'drop' }, { runId: 'r' });
    expect(authorizer.requests[0]?.contract?.risk).toBe('destructive');
  });

  it('publishes the riskiest operation, with the most cautious content trust of all', () => {
    const spiky = defineContract({ risk: 'read-only', contentTrust: 'prompt-injection-prone' });
    const spec: ToolSpec = {
      name: 'store',
      description: '',
      inputSchema: schema,
      operationContracts: { select: 'operation', operations: { get: spiky, drop: wipe } },
    };
    expect(contractOf(spec)).toMatchObject({
      risk: 'destructive',
      contentTrust: 'prompt-injection-prone',
    });
    const declared: ToolSpec = { ...spec, contract: wipe };
    expect(contractOf(declared)).toBe(wipe);
    const broken = {
      ...spec,
      operationContracts: { select: 'operation', operations: {} },
    } as ToolSpec;
    expect(contractOf(broken)).toBeUndefined();
  });

  it('names the operation and its risk in the audit events of the call', async () => {
    const events: ToolEvent[] = [];
    const registry = new ToolRegistry({
      authorizer: new RiskPolicy(),
      onEvent: (event) => events.push(event),
      tools: [counted({ operationContracts: byArgument })],
    });
    await registry.invoke('store', { operation: 'get' }, { runId: 'r' });
    await expect(registry.invoke('store', { operation: 'drop' }, { runId: 'r' })).rejects.toThrow();
    await expect(registry.invoke('store', { operation: 'zap' }, { runId: 'r' })).rejects.toThrow();
    expect(events.map((event) => [event.type, event.operation, event.risk])).toEqual([
      ['started', undefined, undefined],
      ['completed', 'get', 'read-only'],
      ['started', undefined, undefined],
      ['denied', 'drop', 'destructive'],
      ['started', undefined, undefined],
      ['failed', undefined, undefined],
    ]);
  });
});
