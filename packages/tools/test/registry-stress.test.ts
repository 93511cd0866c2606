import { describe, expect, it } from 'vitest';
import {
  createToolContext,
  type JsonObject,
  RuleBasedPolicy,
  type Tool,
  ToolRegistry,
  textResult,
} from '../src/index.js';

interface Instance extends Tool {
  readonly id: number;
  closes: number;
  closed: boolean;
  runsAfterClose: number;
  runs: number;
}

function instance(id: number): Instance {
  const tool: Instance = {
    id,
    closes: 0,
    closed: false,
    runsAfterClose: 0,
    runs: 0,
    spec: {
      name: 'shared',
      description: 'stress target',
      inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
    },
    async start() {
      await new Promise((resolve) => setImmediate(resolve));
    },
    async invoke(args: JsonObject) {
      if (tool.closed) tool.runsAfterClose += 1;
      tool.runs += 1;
      // Yield a few times so replacements land while calls are in flight.
      for (let turn = 0; turn < (args.n as number) % 4; turn += 1) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      if (tool.closed) tool.runsAfterClose += 1;
      return textResult(String(id));
    },
    async close() {
      tool.closes += 1;
      tool.closed = true;
    },
  };
  return tool;
}

describe('ToolRegistry under load', () => {
  it('runs 1,000 concurrent calls across 50 replacements: no call on a closed instance, each retired instance closed once', async () => {
    const instances = [instance(0)];
    const registry = new ToolRegistry({
      authorizer: new RuleBasedPolicy([
        {
          tool: 'shared',
          when: () => true,
          decision: 'allow',
        },
      ]),
    });
    await registry.register(instances[0] as Instance);
    const context = createToolContext({ runId: 'stress' });

    const calls: Promise<string>[] = [];
    const replacements: Promise<void>[] = [];
    for (let index = 0; index < 1000; index += 1) {
      calls.push(
        registry.invoke('shared', { n: index }, context).then((result) => {
          const block = result.content[0];
          return block?.type === 'text' ? block.text : '';
        }),
      );
      if (index % 20 === 10) {
        const next = instance(instances.length);
        instances.push(next);
        replacements.push(registry.replace('shared', next));
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    const results = await Promise.all(calls);
    await Promise.all(replacements);
    expect(instances).toHaveLength(51);
    expect(results).toHaveLength(1000);
    expect(new Set(results).size).toBeGreaterThan(1);

    const current = registry.get('shared') as Instance;
    expect(current).toBe(instances[50]);
    for (const tool of instances) {
      expect(tool.runsAfterClose).toBe(0);
      expect(tool.closes).toBe(tool === current ? 0 : 1);
    }
    expect(instances.reduce((sum, tool) => sum + tool.runs, 0)).toBe(1000);
    await new Promise((resolve) => setImmediate(resolve));
    expect(registry.diagnostics()).toEqual({
      tools: 1,
      activeCalls: 0,
      retiringTools: 0,
      pendingChanges: 0,
    });

    await registry.close();
    for (const tool of instances) expect(tool.closes).toBe(1);
    expect(registry.names()).toEqual([]);
    expect(registry.diagnostics()).toEqual({
      tools: 0,
      activeCalls: 0,
      retiringTools: 0,
      pendingChanges: 0,
    });
  });
});
