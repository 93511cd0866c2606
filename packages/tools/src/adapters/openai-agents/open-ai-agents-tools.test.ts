import { RunContext } from '@openai/agents';
import { describe, expect, it } from 'vitest';
import { permission } from '../../registry/authorization.js';
import { errorResult, jsonResult, type Tool, type ToolResult } from '../../registry/tool.js';
import { ToolRegistry } from '../../registry/tool-registry.js';
import { TRUNCATED_NOTE } from '../registry-call.js';
import { openAiAgentsTools } from './open-ai-agents-tools.js';

function registryOf(result: ToolResult, verdict: 'allow' | 'deny' = 'allow'): ToolRegistry {
  const tool: Tool = {
    spec: { name: 'probe', description: 'probe', inputSchema: { type: 'object' } },
    invoke: async () => result,
  };
  return new ToolRegistry({ authorizer: { authorize: () => permission(verdict) }, tools: [tool] });
}

async function output(registry: ToolRegistry): Promise<unknown> {
  const [tool] = openAiAgentsTools(registry, { context: { runId: 'r' } });
  return tool?.invoke(new RunContext(), '{}', {
    toolCall: { type: 'function_call', callId: 'c', name: 'probe', arguments: '{}' },
  });
}

describe('openAiAgentsTools result mapping', () => {
  it.each([
    ['structured content as JSON text', jsonResult({ a: 1 }), '{"a":1}'],
    [
      'a text block that repeats the structured content (MCP servers): the text, once',
      {
        content: [{ type: 'text', text: '{"a":1,"b":[2,{"c":null}]}' }],
        structuredContent: { b: [2, { c: null }], a: 1 },
      } as ToolResult,
      '{"a":1,"b":[2,{"c":null}]}',
    ],
    [
      'a pretty-printed text block that repeats it: the text, once',
      {
        content: [{ type: 'text', text: '{\n  "a": 1\n}' }],
        structuredContent: { a: 1 },
      } as ToolResult,
      '{\n  "a": 1\n}',
    ],
    [
      'a text block with other data: both, since nothing repeats',
      {
        content: [{ type: 'text', text: '{"a":2}' }],
        structuredContent: { a: 1 },
      } as ToolResult,
      '{"a":2}\n{"a":1}',
    ],
    [
      'an image beside a text block that repeats the structured content: no JSON part added',
      {
        content: [
          { type: 'text', text: '{"a":1}' },
          { type: 'image', data: 'aW1n', mimeType: 'image/png' },
        ],
        structuredContent: { a: 1 },
      } as ToolResult,
      [
        { type: 'text', text: '{"a":1}' },
        { type: 'image', image: { data: 'aW1n', mediaType: 'image/png' } },
      ],
    ],
    [
      'an error result marked as a failure',
      errorResult('Nope.'),
      'Error: the tool reported a failure.\nNope.',
    ],
    [
      'a truncated result with the note',
      jsonResult({ truncated: true }),
      `{"truncated":true}\n${TRUNCATED_NOTE}`,
    ],
    [
      'images as input images, audio as a file',
      {
        content: [
          { type: 'image', data: 'aW1n', mimeType: 'image/png' },
          { type: 'audio', data: 'YXU=', mimeType: 'audio/wav' },
        ],
      } as ToolResult,
      [
        { type: 'image', image: { data: 'aW1n', mediaType: 'image/png' } },
        { type: 'file', file: { data: 'YXU=', mediaType: 'audio/wav', filename: 'part-2' } },
      ],
    ],
  ])('%s', async (_label, result, expected) => {
    expect(await output(registryOf(result))).toEqual(expected);
  });

  it('a denial is text for the model, not an exception', async () => {
    expect(await output(registryOf(jsonResult({}), 'deny'))).toMatch(
      /^Error POLICY_PERMISSION_DENIED: /,
    );
  });

  it('uses strict mode only for a schema that meets it', () => {
    const closed: Tool = {
      spec: {
        name: 'closed',
        description: 'closed',
        inputSchema: {
          type: 'object',
          properties: { a: { type: 'string' } },
          required: ['a'],
          additionalProperties: false,
        },
      },
      invoke: async () => jsonResult({}),
    };
    const open: Tool = {
      spec: { name: 'open', description: 'open', inputSchema: { type: 'object' } },
      invoke: async () => jsonResult({}),
    };
    const registry = new ToolRegistry({
      authorizer: { authorize: () => permission('allow') },
      tools: [closed, open],
    });
    const tools = openAiAgentsTools(registry, { context: { runId: 'r' } });
    expect(tools.map((tool) => [tool.name, tool.strict])).toEqual([
      ['closed', true],
      ['open', false],
    ]);
  });
});
