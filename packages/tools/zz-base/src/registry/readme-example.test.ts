import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  ApprovalRequiredError,
  createToolContext,
  defineTool,
  RuleBasedPolicy,
  ToolRegistry,
  textResult,
} from '../index.js';

describe('the README example', () => {
  it('runs as written: get is allowed, put is approved', async () => {
    const notes = new Map<string, string>();
    const notesTool = defineTool({
      name: 'notes',
      description: 'Reads and writes notes',
      input: z.object({
        operation: z.enum(['get', 'put']),
        key: z.string().max(64),
        text: z.string().optional(),
      }),
      effect: { default: 'unknown', argument: 'operation', byValue: { get: 'read', put: 'write' } },
      operationArgument: 'operation',
      run: ({ operation, key, text }) => {
        if (operation === 'put') notes.set(key, text ?? '');
        return textResult(notes.get(key) ?? '');
      },
    });
    const rules = new RuleBasedPolicy([
      { tool: 'notes', operation: 'get', decision: 'allow' },
      { tool: 'notes', operation: 'put', decision: 'ask' },
    ]);
    const registry = new ToolRegistry({
      tools: [notesTool],
      authorizer: rules,
      approval: async ({ toolName }) => toolName === 'notes',
    });
    const context = createToolContext({ runId: 'run-1' });
    await registry.invoke('notes', { operation: 'put', key: 'a', text: 'hello' }, context);
    const result = await registry.invoke('notes', { operation: 'get', key: 'a' }, context);
    expect(result.content).toEqual([{ type: 'text', text: 'hello' }]);
    await registry.close();

    const strict = new ToolRegistry({ tools: [notesTool], authorizer: rules });
    await expect(
      strict.invoke('notes', { operation: 'put', key: 'a', text: 'x' }, context),
    ).rejects.toBeInstanceOf(ApprovalRequiredError);
    await strict.close();
  });
});
