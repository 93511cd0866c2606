import { defineContract } from '@toolfence/tool-contract';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AllowAllAuthorizer } from '../policy/authorizer.js';
import { ConfigurationError } from './configuration-error.js';
import { defineTool } from './define-tool.js';
import { jsonResult, textResult } from './tool.js';
import { createToolContext } from './tool-context.js';
import { ToolInputError } from './tool-input-error.js';
import { ToolRegistry } from './tool-registry.js';

const context = createToolContext({ runId: 'r' });

describe('defineTool', () => {
  it('turns a zod schema into a 2020-12 input schema and gives run typed, parsed arguments', async () => {
    const tool = defineTool({
      name: 'greet',
      description: 'Greets someone',
      input: z.object({ name: z.string().min(1), times: z.number().int().default(1) }),
      contract: defineContract({
        risk: 'read-only',
        contentTrust: 'trusted',
        idempotent: true,
        version: '1.0.0',
      }),
      run: ({ name, times }) => textResult(`hello ${name} x${times}`),
    });
    expect(tool.spec.inputSchema).toMatchObject({
      type: 'object',
      properties: { name: { type: 'string', minLength: 1 } },
      required: ['name'],
    });
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await registry.register(tool);
    const result = await registry.invoke(
      'greet',
      { name: 'Ada' },
      createToolContext({ runId: 'r', accessScope: 'read-only' }),
    );
    expect(result.content[0]).toEqual({ type: 'text', text: 'hello Ada x1' });
    await expect(registry.invoke('greet', { name: '' }, context)).rejects.toBeInstanceOf(
      ToolInputError,
    );
  });

  it('validates with zod when called directly, without echoing values', async () => {
    const tool = defineTool({
      name: 'strict',
      description: '',
      input: z.object({ token: z.string().max(3) }),
      run: () => textResult('ran'),
    });
    const error = await tool.invoke({ token: 'SECRET-TOKEN' }, context).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ToolInputError);
    expect((error as Error).message).toContain('$.token');
    expect((error as Error).message).not.toContain('SECRET');
  });

  it('accepts a JSON Schema input', async () => {
    const tool = defineTool({
      name: 'sum',
      description: 'Adds',
      input: {
        type: 'object',
        properties: { a: { type: 'number' }, b: { type: 'number' } },
        required: ['a', 'b'],
      },
      effect: { default: 'compute' },
      run: (args) => jsonResult({ sum: (args.a as number) + (args.b as number) }),
    });
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await registry.register(tool);
    const result = await registry.invoke('sum', { a: 1, b: 2 }, context);
    expect(result.structuredContent).toEqual({ sum: 3 });
    await expect(registry.invoke('sum', { a: 1 }, context)).rejects.toBeInstanceOf(ToolInputError);
  });

  it('forwards start and close', async () => {
    const calls: string[] = [];
    const tool = defineTool({
      name: 'life',
      description: '',
      input: z.object({}),
      start: async () => void calls.push('start'),
      close: async () => void calls.push('close'),
      run: () => textResult(''),
    });
    const registry = new ToolRegistry({ authorizer: new AllowAllAuthorizer() });
    await registry.register(tool);
    await registry.close();
    expect(calls).toEqual(['start', 'close']);
  });

  it.each([
    ['a non-object zod schema', { input: z.string() }],
    ['a zod schema JSON Schema cannot express', { input: z.object({ when: z.date() }) }],
    ['a JSON Schema that is not an object schema', { input: { type: 'string' } }],
    ['an empty name', { name: '' }],
    ['a missing run', { run: undefined }],
  ])('rejects %s', (_label, override) => {
    const options = {
      name: 't',
      description: '',
      input: z.object({}),
      run: () => textResult(''),
      ...override,
    };
    expect(() => defineTool(options as never)).toThrow(ConfigurationError);
  });
});
