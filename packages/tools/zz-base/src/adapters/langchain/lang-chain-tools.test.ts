import type { ToolMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import { permission } from '../../registry/authorization.js';
import { errorResult, jsonResult, type Tool, type ToolResult } from '../../registry/tool.js';
import { ToolRegistry } from '../../registry/tool-registry.js';
import { langChainTools } from './lang-chain-tools.js';

function registryOf(result: ToolResult, verdict: 'allow' | 'deny' = 'allow'): ToolRegistry {
  const tool: Tool = {
    spec: { name: 'probe', description: 'probe', inputSchema: { type: 'object' } },
    invoke: async () => result,
  };
  return new ToolRegistry({ authorizer: { authorize: () => permission(verdict) }, tools: [tool] });
}

async function message(registry: ToolRegistry): Promise<ToolMessage> {
  const [tool] = langChainTools(registry, { context: { runId: 'r' } });
  return (await tool?.invoke({
    name: 'probe',
    args: {},
    id: 'c',
    type: 'tool_call',
  })) as ToolMessage;
}

describe('langChainTools result mapping', () => {
  it('structured content as JSON text, with the artifact', async () => {
    const reply = await message(registryOf(jsonResult({ a: 1 })));
    expect(reply).toMatchObject({
      content: '{"a":1}',
      status: 'success',
      artifact: { structuredContent: { a: 1 }, truncated: false },
    });
  });

  it('an error result and a denial are error ToolMessages', async () => {
    expect(await message(registryOf(errorResult('Nope.')))).toMatchObject({
      content: 'Nope.',
      status: 'error',
    });
    const denied = await message(registryOf(jsonResult({}), 'deny'));
    expect(denied.status).toBe('error');
    expect(denied.content).toMatch(/^Error POLICY_PERMISSION_DENIED: /);
    expect(denied.artifact).toMatchObject({ code: 'POLICY_PERMISSION_DENIED' });
  });

  it('images and audio as standard content blocks', async () => {
    const reply = await message(
      registryOf({
        content: [
          { type: 'text', text: 'look' },
          { type: 'image', data: 'aW1n', mimeType: 'image/png' },
          { type: 'audio', data: 'YXU=', mimeType: 'audio/wav' },
        ],
      }),
    );
    expect(reply.content).toEqual([
      { type: 'text', text: 'look' },
      { type: 'image', data: 'aW1n', mimeType: 'image/png' },
      { type: 'audio', data: 'YXU=', mimeType: 'audio/wav' },
    ]);
  });
});
