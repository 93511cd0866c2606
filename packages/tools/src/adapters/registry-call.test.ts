import { describe, expect, it } from 'vitest';
import { permission } from '../registry/authorization.js';
import { BudgetExceededError } from '../registry/budget-exceeded-error.js';
import { ConfigurationError } from '../registry/configuration-error.js';
import { PermissionDeniedError } from '../registry/permission-denied-error.js';
import { RegistryClosedError } from '../registry/registry-closed-error.js';
import {
  jsonResult,
  type Tool,
  type ToolContext,
  type ToolResult,
  textResult,
} from '../registry/tool.js';
import { ToolExecutionError } from '../registry/tool-execution-error.js';
import { ToolInputError } from '../registry/tool-input-error.js';
import { ToolRegistry } from '../registry/tool-registry.js';
import { isStrictCompatible } from './openai-agents/open-ai-agents-tools.js';
import {
  assignModelToolNames,
  callRegistry,
  flattenResult,
  needsApproval,
  partsCarry,
  refusalText,
  resolveAdapter,
  resultText,
  TRUNCATED_NOTE,
  USER_ONLY_NOTE,
} from './registry-call.js';

function probeTool(name: string, onCall?: (context: ToolContext) => Promise<ToolResult>): Tool {
  return {
    spec: {
      name,
      description: 'probe',
      inputSchema: { type: 'object', properties: { n: { type: 'integer' } } },
    },
    invoke: async (_args, context) => (onCall ? onCall(context) : textResult('ok')),
  };
}

function registryWith(verdict: 'allow' | 'ask' | 'deny', ...tools: Tool[]): ToolRegistry {
  return new ToolRegistry({ authorizer: { authorize: () => permission(verdict, 'test') }, tools });
}

describe('assignModelToolNames', () => {
  it.each([
    ['a safe name is kept', 'filesystem', 'letters-digits-underscore-hyphen', 'filesystem'],
    ['a hyphen is kept where allowed', 'get-sum', 'letters-digits-underscore-hyphen', 'get-sum'],
  ] as const)('%s', (_label, name, style, expected) => {
    expect(assignModelToolNames([name], style)[0]?.modelName).toBe(expected);
  });

  it.each([
    ['a hyphen where only underscores are allowed', 'get-sum', 'letters-digits-underscore'],
    ['a dot and a space', 'files.read all', 'letters-digits-underscore-hyphen'],
    ['a non-ASCII letter', 'résumé', 'letters-digits-underscore-hyphen'],
    ['a 65-character name', 'x'.repeat(65), 'letters-digits-underscore-hyphen'],
    ['a 256-character name', 'y'.repeat(256), 'letters-digits-underscore'],
  ] as const)('rewrites %s to at most 64 safe characters with a hash', (_label, name, style) => {
    const modelName = assignModelToolNames([name], style)[0]?.modelName ?? '';
    const allowed = style === 'letters-digits-underscore' ? /^[A-Za-z0-9_]+$/ : /^[A-Za-z0-9_-]+$/;
    expect(modelName).toMatch(allowed);
    expect(modelName.length).toBeLessThanOrEqual(64);
    expect(modelName).toMatch(/_[0-9a-f]{8}$/);
  });

  it('refuses two registry names that meet as one model name', () => {
    const hashed = assignModelToolNames(['a.b'], 'letters-digits-underscore')[0]?.modelName ?? '';
    expect(() => assignModelToolNames(['a.b', hashed], 'letters-digits-underscore')).toThrow(
      ConfigurationError,
    );
  });
});

describe('isStrictCompatible (OpenAI strict mode)', () => {
  const closed = {
    type: 'object',
    properties: { a: { type: 'string' } },
    required: ['a'],
    additionalProperties: false,
  };
  it.each([
    ['a closed, fully required object', closed, true],
    ['an optional property', { ...closed, required: [] }, false],
    ['an open object', { ...closed, additionalProperties: true }, false],
    ['a default value', { ...closed, properties: { a: { type: 'string', default: 'x' } } }, false],
    ['oneOf', { ...closed, properties: { a: { oneOf: [{ type: 'string' }] } } }, false],
    [
      'an open nested object',
      { ...closed, properties: { a: { type: 'object', properties: {} } } },
      false,
    ],
    ['a non-object root', { type: 'string' }, false],
    ['$schema', { ...closed, $schema: 'https://json-schema.org/draft/2020-12/schema' }, false],
  ])('%s → %s', (_label, schema, expected) => {
    expect(isStrictCompatible(schema as never)).toBe(expected);
  });
});

describe('flattenResult', () => {
  it('keeps a block meant only for the user from the model and says so', () => {
    const flat = flattenResult({
      content: [
        { type: 'text', text: 'for both', annotations: { audience: ['user', 'assistant'] } },
        { type: 'text', text: 'SECRET for the user', annotations: { audience: ['user'] } },
        { type: 'image', data: 'aGk=', mimeType: 'image/png', annotations: { audience: ['user'] } },
        { type: 'text', text: 'for the model', annotations: { audience: ['assistant'] } },
      ],
    });
    expect(flat.parts).toEqual([
      { type: 'text', text: 'for both' },
      { type: 'text', text: 'for the model' },
      { type: 'text', text: USER_ONLY_NOTE },
    ]);
    expect(JSON.stringify(flat)).not.toContain('SECRET');
  });

  it('drops a json block equal to structuredContent and flattens any other', () => {
    const flat = flattenResult({
      content: [
        { type: 'json', json: { a: 1 } },
        { type: 'json', json: [1, 2] },
        { type: 'text', text: 'hi' },
      ],
      structuredContent: { a: 1 },
    });
    expect(flat.parts).toEqual([
      { type: 'text', text: '[1,2]' },
      { type: 'text', text: 'hi' },
    ]);
    expect(flat.structuredContent).toEqual({ a: 1 });
  });

  it('maps images, audio, blob resources to media and links, text resources to text', () => {
    const flat = flattenResult({
      content: [
        { type: 'image', data: 'aW1n', mimeType: 'image/png' },
        { type: 'audio', data: 'YXU=', mimeType: 'audio/wav' },
        { type: 'resource', resource: { uri: 'file:///b', blob: 'Ymxi' } },
        { type: 'resource', resource: { uri: 'file:///t', text: 'text body' } },
        { type: 'resource_link', uri: 'https://example.com/r', mimeType: 'text/plain' },
      ],
    });
    expect(flat.parts).toEqual([
      { type: 'media', data: 'aW1n', mimeType: 'image/png' },
      { type: 'media', data: 'YXU=', mimeType: 'audio/wav' },
      { type: 'media', data: 'Ymxi', mimeType: 'application/octet-stream' },
      { type: 'text', text: 'text body' },
      { type: 'text', text: 'Resource link: https://example.com/r (text/plain)' },
    ]);
  });

  it('writes structuredContent as JSON once for a jsonResult (its block is the same object)', () => {
    let written = 0;
    const value = {
      a: 1,
      toJSON: () => {
        written += 1;
        return { a: 1 };
      },
    };
    const flat = flattenResult(jsonResult(value as never));
    expect(flat.parts).toEqual([]);
    expect(resultText(flat, true)).toBe('{"a":1}');
    expect(resultText(flat, true)).toBe('{"a":1}');
    expect(written).toBe(1);
  });

  it('still drops an equal json block that is a different object, and keeps a different one', () => {
    const equal = flattenResult({
      content: [{ type: 'json', json: { a: 1 } }],
      structuredContent: { a: 1 },
    });
    expect(equal.parts).toEqual([]);
    expect(resultText(equal, true)).toBe('{"a":1}');
    const different = flattenResult({
      content: [{ type: 'json', json: { a: 2 } }],
      structuredContent: { a: 1 },
    });
    expect(resultText(different, true)).toBe('{"a":2}\n{"a":1}');
  });

  it.each([
    ['metadata.truncated', { content: [], metadata: { truncated: true } }],
    [
      'metadata.structuredContentOmitted',
      { content: [], metadata: { structuredContentOmitted: true } },
    ],
    ['metadata.omittedBlocks', { content: [], metadata: { omittedBlocks: 2 } }],
    ['structuredContent.truncated', { content: [], structuredContent: { truncated: true } }],
  ] as const)('keeps the truncation flag from %s', (_label, result) => {
    expect(flattenResult(result as ToolResult).truncated).toBe(true);
  });

  it('reports an untruncated result as such', () => {
    expect(flattenResult({ content: [], structuredContent: { truncated: false } }).truncated).toBe(
      false,
    );
    expect(TRUNCATED_NOTE).toMatch(/incomplete/);
  });
});

describe('partsCarry (a text part that repeats structuredContent)', () => {
  const deep = (depth: number): Record<string, unknown> => {
    let value: Record<string, unknown> = { leaf: true };
    for (let level = 0; level < depth; level += 1) value = { next: value };
    return value;
  };
  it.each([
    ['the same JSON', '{"a":1}', { a: 1 }, true],
    [
      'other key order and whitespace',
      ' {\n "b": [1, {"c": null}], "a": "x" }',
      { a: 'x', b: [1, { c: null }] },
      true,
    ],
    ['a different value', '{"a":2}', { a: 1 }, false],
    ['an extra key', '{"a":1,"b":2}', { a: 1 }, false],
    ['a missing key', '{"a":1}', { a: 1, b: 2 }, false],
    ['an array where an object was', '{"a":[]}', { a: {} }, false],
    ['text that is not JSON', '{a: 1}', { a: 1 }, false],
    ['a summary of it', 'The temperature is 36.', { temperature: 36 }, false],
    ['nesting deeper than the compare limit', JSON.stringify(deep(80)), deep(80), false],
  ])('%s', (_label, text, structured, expected) => {
    expect(partsCarry([{ type: 'text', text }], structured as never)).toBe(expected);
  });

  it('never counts a media part', () => {
    expect(partsCarry([{ type: 'media', data: 'e30=', mimeType: 'application/json' }], {})).toBe(
      false,
    );
  });
});

describe('refusalText', () => {
  it.each([
    [
      new PermissionDeniedError('Tool "x" was denied by policy', { details: { reason: 'r' } }),
      /Do not retry/,
    ],
    [new BudgetExceededError('No room', {}), /budget/],
    [new ToolInputError('Invalid arguments', {}), /Fix the arguments/],
    [new ToolExecutionError('Tool "x" failed', {}), /The tool failed/],
  ])('names the code, the safe message and what to do: %s', (error, next) => {
    const text = refusalText(error);
    expect(text).toContain(`Error ${error.code}: ${error.message}`);
    expect(text).toMatch(next);
  });

  it('gives the verify-before-retrying text for an ambiguous delivery', () => {
    const cause = Object.assign(new Error('x'), { code: 'CLIENT_AMBIGUOUS_DELIVERY' });
    const text = refusalText(new ToolExecutionError('Tool "x" failed', { cause }));
    expect(text).toContain('Verify external state before retrying');
  });
});

describe('resolveAdapter', () => {
  const registry = registryWith('allow', probeTool('probe'));
  it.each([
    ['an unknown option', { context: { runId: 'r' }, approve: true }],
    ['a missing run id', { context: {} }],
    ['an unregistered name', { context: { runId: 'r' }, names: ['nope'] }],
    ['names that are not strings', { context: { runId: 'r' }, names: [1] }],
  ])('refuses %s', (_label, options) => {
    expect(() =>
      resolveAdapter('test', registry, options as never, 'letters-digits-underscore'),
    ).toThrow(ConfigurationError);
  });

  it('refuses something that is not a registry', () => {
    expect(() =>
      resolveAdapter('test', {} as never, { context: { runId: 'r' } }, 'letters-digits-underscore'),
    ).toThrow(/needs a ToolRegistry/);
  });
});

describe('callRegistry', () => {
  it('derives a per-call context: run id, the call id as stepId, the merged abort signal', async () => {
    let seen: ToolContext | undefined;
    const registry = registryWith(
      'allow',
      probeTool('probe', async (context) => {
        seen = context;
        return textResult('ok');
      }),
    );
    const run = new AbortController();
    const call = new AbortController();
    const adapter = resolveAdapter(
      'test',
      registry,
      { context: { runId: 'run-7', signal: run.signal } },
      'letters-digits-underscore',
    );
    await callRegistry(adapter, {
      toolName: 'probe',
      args: {},
      toolCallId: 'tc-1',
      signal: call.signal,
      approved: () => false,
    });
    expect(seen).toMatchObject({ runId: 'run-7', stepId: 'tc-1' });
    expect(seen?.signal?.aborted).toBe(false);
    call.abort();
    expect(seen?.signal?.aborted).toBe(true);
  });

  it('takes the run context once, and gives a previewed call the context its preview had', async () => {
    const seen: ToolContext[] = [];
    const registry = new ToolRegistry({
      authorizer: {
        authorize: (request) => {
          seen.push(request.context);
          return permission('allow');
        },
      },
      tools: [probeTool('probe')],
    });
    const metadata: Record<string, string> = { team: 'a' };
    const adapter = resolveAdapter(
      'test',
      registry,
      { context: { runId: 'run-1', metadata } },
      'letters-digits-underscore',
    );
    metadata.team = 'changed after the adapter was built';
    const call = { toolName: 'probe', args: {}, toolCallId: 'tc-1', approved: () => false };
    expect(await needsApproval(adapter, 'probe', {}, 'tc-1')).toBe(false);
    await callRegistry(adapter, { ...call, signal: undefined });
    expect(seen).toHaveLength(2);
    expect(seen[1]).toBe(seen[0]);
    expect(seen[0]).toMatchObject({ runId: 'run-1', stepId: 'tc-1', metadata: { team: 'a' } });
    // A call with a signal of its own gets a context carrying it, not the preview's.
    const abort = new AbortController();
    expect(await needsApproval(adapter, 'probe', {}, 'tc-2')).toBe(false);
    await callRegistry(adapter, { ...call, toolCallId: 'tc-2', signal: abort.signal });
    expect(seen[3]).not.toBe(seen[2]);
    expect(seen[3]).toMatchObject({ runId: 'run-1', stepId: 'tc-2', signal: abort.signal });
    expect(seen[2]?.signal).toBeUndefined();
  });

  it('stops an aborted call before the tool runs and tells the model', async () => {
    let ran = false;
    const registry = registryWith(
      'allow',
      probeTool('probe', async () => {
        ran = true;
        return textResult('ok');
      }),
    );
    const adapter = resolveAdapter(
      'test',
      registry,
      { context: { runId: 'r' } },
      'letters-digits-underscore',
    );
    const outcome = await callRegistry(adapter, {
      toolName: 'probe',
      args: {},
      toolCallId: undefined,
      signal: AbortSignal.abort(),
      approved: () => false,
    });
    expect(outcome).toMatchObject({ kind: 'refused', code: 'REGISTRY_TOOL_FAILED' });
    expect(ran).toBe(false);
  });

  it('an approval from the framework answers only an ask; a deny still denies', async () => {
    let calls = 0;
    const tool = probeTool('probe', async () => {
      calls += 1;
      return textResult('ok');
    });
    const asking = resolveAdapter(
      't',
      registryWith('ask', tool),
      { context: { runId: 'r' } },
      'letters-digits-underscore',
    );
    const denying = resolveAdapter(
      't',
      registryWith('deny', probeTool('probe')),
      { context: { runId: 'r' } },
      'letters-digits-underscore',
    );
    const base = { toolName: 'probe', args: {}, toolCallId: 'c', signal: undefined };
    expect(await callRegistry(asking, { ...base, approved: () => false })).toMatchObject({
      kind: 'refused',
      code: 'APPROVAL_REQUIRED',
    });
    expect(await callRegistry(asking, { ...base, approved: () => true })).toMatchObject({
      kind: 'result',
    });
    expect(await callRegistry(denying, { ...base, approved: () => true })).toMatchObject({
      kind: 'refused',
      code: 'POLICY_PERMISSION_DENIED',
    });
    expect(calls).toBe(1);
    expect(await needsApproval(asking, 'probe', {}, 'c')).toBe(true);
    expect(await needsApproval(denying, 'probe', {}, 'c')).toBe(false);
    expect(await needsApproval(asking, 'probe', { n: 'x' }, 'c')).toBe(false);
  });

  it('asks the framework about approval only when the preview did not rule it out', async () => {
    const allowing = resolveAdapter(
      't',
      registryWith('allow', probeTool('probe')),
      { context: { runId: 'r' } },
      'letters-digits-underscore',
    );
    let lookups = 0;
    const approved = () => {
      lookups += 1;
      return false;
    };
    expect(await needsApproval(allowing, 'probe', {}, 'seen')).toBe(false);
    await callRegistry(allowing, {
      toolName: 'probe',
      args: {},
      toolCallId: 'seen',
      signal: undefined,
      approved,
    });
    expect(lookups).toBe(0);
    // Unknown to the preview (another process, or forgotten): the full path, looked up.
    await callRegistry(allowing, {
      toolName: 'probe',
      args: {},
      toolCallId: 'unseen',
      signal: undefined,
      approved,
    });
    expect(lookups).toBe(1);
    // The memory is bounded: the oldest answers are forgotten.
    for (let index = 0; index < 1100; index += 1)
      await needsApproval(allowing, 'probe', {}, `c${index}`);
    expect(allowing.previews.size).toBe(1024);
    expect(allowing.previews.has('c0')).toBe(false);
    expect(allowing.previews.get('c1099')).toMatchObject({ toolName: 'probe', asks: false });
  });

  it('does not let the preview of one tool stand for another tool under the same call id', async () => {
    const registry = new ToolRegistry({
      authorizer: {
        authorize: (request) => permission(request.toolName === 'asks' ? 'ask' : 'allow', 'test'),
      },
      tools: [probeTool('asks'), probeTool('allows')],
    });
    const adapter = resolveAdapter(
      't',
      registry,
      { context: { runId: 'r' } },
      'letters-digits-underscore',
    );
    expect(await needsApproval(adapter, 'asks', {}, 'same-id')).toBe(true);
    expect(await needsApproval(adapter, 'allows', {}, 'same-id')).toBe(false);
    // The framework approved the asking call: it runs once, on a grant.
    const outcome = await callRegistry(adapter, {
      toolName: 'asks',
      args: {},
      toolCallId: 'same-id',
      signal: undefined,
      approved: () => true,
    });
    expect(outcome).toMatchObject({ kind: 'result' });
    // The other tool's preview is still there for its own call.
    expect(adapter.previews.get('same-id')).toMatchObject({ toolName: 'allows', asks: false });
  });

  it('throws programming errors: a closed registry, a middleware bug', async () => {
    const closed = registryWith('allow', probeTool('probe'));
    const adapter = resolveAdapter(
      't',
      closed,
      { context: { runId: 'r' } },
      'letters-digits-underscore',
    );
    await closed.close();
    const call = {
      toolName: 'probe',
      args: {},
      toolCallId: 'c',
      signal: undefined,
      approved: () => false,
    };
    await expect(callRegistry(adapter, call)).rejects.toSatisfy((error: unknown) =>
      RegistryClosedError.isInstance(error),
    );
    const buggy = new ToolRegistry({
      authorizer: { authorize: () => permission('allow') },
      tools: [probeTool('probe')],
      middleware: [
        () => {
          throw new TypeError('bug');
        },
      ],
    });
    const second = resolveAdapter(
      't',
      buggy,
      { context: { runId: 'r' } },
      'letters-digits-underscore',
    );
    await expect(callRegistry(second, call)).rejects.toThrow(TypeError);
  });
});
