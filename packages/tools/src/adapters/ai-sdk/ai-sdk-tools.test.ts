import { describe, expect, it } from 'vitest';
import { permission } from '../../registry/authorization.js';
import { errorResult, jsonResult, type Tool, type ToolResult } from '../../registry/tool.js';
import { ToolRegistry } from '../../registry/tool-registry.js';
import { TRUNCATED_NOTE } from '../registry-call.js';
import { aiSdkTools } from './ai-sdk-tools.js';

function constant(result: ToolResult): Tool {
  return {
    spec: { name: 'probe', description: 'probe', inputSchema: { type: 'object' } },
    invoke: async () => result,
  };
}

async function outputs(result: ToolResult): Promise<{ output: unknown; model: unknown }> {
  const registry = new ToolRegistry({
    authorizer: { authorize: () => permission('allow') },
    tools: [constant(result)],
  });
  const tool = aiSdkTools(registry, { context: { runId: 'r' } }).probe as unknown as {
    execute: (input: unknown, options: unknown) => Promise<unknown>;
    toModelOutput: (options: unknown) => unknown;
  };
  const output = await tool.execute({}, { toolCallId: 'c', messages: [], context: {} });
  return { output, model: tool.toModelOutput({ toolCallId: 'c', input: {}, output }) };
}

async function modelOutput(result: ToolResult): Promise<unknown> {
  return (await outputs(result)).model;
}

describe('aiSdkTools result mapping', () => {
  it.each([
    [
      'structured content alone becomes json',
      jsonResult({ a: 1 }),
      { type: 'json', value: { a: 1 } },
    ],
    [
      'an error result becomes error-text',
      errorResult('The path is not a folder.'),
      { type: 'error-text', value: 'The path is not a folder.' },
    ],
    [
      'text stays text, structured content appended as JSON',
      { content: [{ type: 'text', text: 'hi' }], structuredContent: { b: 2 } } as ToolResult,
      { type: 'text', value: 'hi\n{"b":2}' },
    ],
    [
      'a text block that repeats the structured content (MCP servers) is read once',
      {
        content: [{ type: 'text', text: '{"b":2,"a":[1]}' }],
        structuredContent: { a: [1], b: 2 },
      } as ToolResult,
      { type: 'text', value: '{"b":2,"a":[1]}' },
    ],
    [
      'media beside a text block that repeats the structured content: no JSON part added',
      {
        content: [
          { type: 'text', text: '{"a":1}' },
          { type: 'image', data: 'aW1n', mimeType: 'image/png' },
        ],
        structuredContent: { a: 1 },
      } as ToolResult,
      {
        type: 'content',
        value: [
          { type: 'text', text: '{"a":1}' },
          { type: 'file', data: { type: 'data', data: 'aW1n' }, mediaType: 'image/png' },
        ],
      },
    ],
    [
      'a truncated result carries the note',
      jsonResult({ content: 'abcd', truncated: true }),
      { type: 'text', value: `{"content":"abcd","truncated":true}\n${TRUNCATED_NOTE}` },
    ],
    [
      'images and audio become file parts',
      {
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', data: 'aW1n', mimeType: 'image/png' },
          { type: 'audio', data: 'YXU=', mimeType: 'audio/wav' },
        ],
        metadata: { truncated: true },
      } as ToolResult,
      {
        type: 'content',
        value: [
          { type: 'text', text: 'look' },
          { type: 'file', data: { type: 'data', data: 'aW1n' }, mediaType: 'image/png' },
          { type: 'file', data: { type: 'data', data: 'YXU=' }, mediaType: 'audio/wav' },
          { type: 'text', text: TRUNCATED_NOTE },
        ],
      },
    ],
  ])('%s', async (_label, result, expected) => {
    expect(await modelOutput(result)).toEqual(expected);
  });

  it('writes the text of a structured result once, when it is read, as an ordinary property', async () => {
    let written = 0;
    const value = {
      a: 1,
      toJSON: () => {
        written += 1;
        return { a: 1 };
      },
    };
    const { output, model } = await outputs(jsonResult(value as never));
    // The model reads the structured content itself; nobody has read the text yet.
    expect(model).toMatchObject({ type: 'json' });
    expect(written).toBe(0);
    const read = output as { text: string };
    expect(read.text).toBe('{"a":1}');
    expect(read.text).toBe('{"a":1}');
    expect(written).toBe(1);
    expect(Object.keys(read)).toEqual([
      'isError',
      'text',
      'parts',
      'structuredContent',
      'truncated',
    ]);
    expect({ ...read }).toMatchObject({ isError: false, text: '{"a":1}', truncated: false });
    expect(JSON.parse(JSON.stringify(read))).toMatchObject({ text: '{"a":1}' });
  });
});

describe('aiSdkTools needsApproval', () => {
  it.each([
    ['a plain false for a tool the policy never asks about', 'allow', false, false],
    ['a promise of true for a tool it asks about', 'ask', true, true],
    ['a promise of false for an allowed call of a tool it may ask about', 'allow', true, false],
  ] as const)('%s', async (_label, verdict, mayAsk, expected) => {
    const registry = new ToolRegistry({
      authorizer: { authorize: () => permission(verdict), mayAsk: () => mayAsk },
      tools: [constant(jsonResult({ a: 1 }))],
    });
    const tool = aiSdkTools(registry, { context: { runId: 'r' } }).probe as unknown as {
      needsApproval: (input: unknown, options: unknown) => boolean | Promise<boolean>;
    };
    const answer = tool.needsApproval({}, { toolCallId: 'c', messages: [], context: {} });
    expect(answer instanceof Promise).toBe(mayAsk);
    expect(await answer).toBe(expected);
  });
});
