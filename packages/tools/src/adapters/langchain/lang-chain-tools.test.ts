import { AIMessage, type BaseMessage, type ToolMessage } from '@langchain/core/messages';
import { Command, MemorySaver, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { ToolNode } from '@langchain/langgraph/prebuilt';
import { describe, expect, it } from 'vitest';
import { permission } from '../../registry/authorization.js';
import { defineTool } from '../../registry/define-tool.js';
import {
  errorResult,
  jsonResult,
  type Tool,
  type ToolResult,
  textResult,
} from '../../registry/tool.js';
import { ToolRegistry } from '../../registry/tool-registry.js';
import { DEFAULT_COMPLETED_CALL_MEMORY } from './completed-calls.js';
import { type LangChainToolsOptions, langChainTools } from './lang-chain-tools.js';

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

  it('a text block that repeats the structured content (MCP servers) is sent once', async () => {
    const reply = await message(
      registryOf({
        content: [{ type: 'text', text: '{"a": 1}' }],
        structuredContent: { a: 1 },
      }),
    );
    expect(reply).toMatchObject({
      content: '{"a": 1}',
      artifact: { structuredContent: { a: 1 }, truncated: false },
    });
  });

  it('runs a tool whose input schema is frozen (defineTool freezes it)', async () => {
    const frozen = defineTool({
      name: 'probe',
      description: 'probe',
      input: { type: 'object', properties: { city: { type: 'string' } } },
      effect: 'read',
      run: () => jsonResult({ ok: true }),
    });
    expect(Object.isFrozen(frozen.spec.inputSchema)).toBe(true);
    const registry = new ToolRegistry({
      authorizer: { authorize: () => permission('allow') },
      tools: [frozen],
    });
    const [tool] = langChainTools(registry, { context: { runId: 'r' } });
    const reply = (await tool?.invoke({
      name: 'probe',
      args: { city: 'Paris' },
      id: 'c',
      type: 'tool_call',
    })) as ToolMessage;
    expect(reply).toMatchObject({ content: '{"ok":true}', status: 'success' });
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

/**
 * A registry of tools that count their runs: names starting with `ask` are asked about, the
 * others allowed. `runs` counts each tool call id (the context's `stepId`).
 */
function countingRegistry(names: readonly string[]) {
  const runs: Record<string, number> = {};
  const tools: Tool[] = names.map((name) => ({
    spec: { name, description: name, inputSchema: { type: 'object' } },
    invoke: async (_args, context) => {
      const id = context.stepId ?? '(none)';
      runs[id] = (runs[id] ?? 0) + 1;
      return textResult(`${name} ran`);
    },
  }));
  const registry = new ToolRegistry({
    authorizer: {
      authorize: ({ toolName }) => permission(toolName.startsWith('ask') ? 'ask' : 'allow'),
    },
    tools,
  });
  return { registry, runs };
}

/**
 * LangGraph's own loop around its prebuilt `ToolNode` (every call of a step in one task, as
 * `createReactAgent` runs them by default): one step with the given calls, resumed with
 * `decision` for every pending interrupt until the graph ends.
 */
async function runStep(
  registry: ToolRegistry,
  calls: readonly string[],
  options: Partial<LangChainToolsOptions> = {},
  decision: unknown = { type: 'approve' },
) {
  const tools = langChainTools(registry, { context: { runId: 'r' }, ...options });
  const graph = new StateGraph(MessagesAnnotation)
    .addNode('tools', new ToolNode(tools))
    .addEdge(START, 'tools')
    .compile({ checkpointer: new MemorySaver() });
  const config = { configurable: { thread_id: 't' } };
  const message = new AIMessage({
    content: '',
    tool_calls: calls.map((name, index) => ({ id: `c${index + 1}`, name, args: {} })),
  });
  let state = (await graph.invoke({ messages: [message] }, config)) as {
    messages: BaseMessage[];
    __interrupt__?: { id: string }[];
  };
  let resumes = 0;
  while ((state.__interrupt__?.length ?? 0) > 0 && resumes < 8) {
    resumes += 1;
    const resume = Object.fromEntries(
      (state.__interrupt__ ?? []).map((item) => [item.id, decision]),
    );
    state = (await graph.invoke(new Command({ resume }), config)) as typeof state;
  }
  return { state, resumes };
}

describe('langChainTools across a LangGraph resume', () => {
  it.each([
    ['an asked call and an allowed one', ['ask_write', 'read'], ['c1', 'c2']],
    ['an asked call and two allowed ones', ['read_a', 'ask_write', 'read_b'], ['c1', 'c2', 'c3']],
    ['two asked calls and an allowed one', ['ask_a', 'ask_b', 'read'], ['c1', 'c2', 'c3']],
  ])('%s in one ToolNode step: each call runs once', async (_name, calls, ids) => {
    const { registry, runs } = countingRegistry([...new Set(calls)]);
    const { state, resumes } = await runStep(registry, calls);
    expect(resumes).toBeGreaterThan(0);
    expect(runs).toEqual(Object.fromEntries(ids.map((id) => [id, 1])));
    expect(state.messages.filter((message) => message.getType() === 'tool')).toHaveLength(
      calls.length,
    );
  });

  it('a rejected call never runs, and its allowed sibling runs once', async () => {
    const { registry, runs } = countingRegistry(['ask_write', 'read']);
    await runStep(registry, ['ask_write', 'read'], {}, { type: 'reject' });
    expect(runs).toEqual({ c2: 1 });
  });

  it('keeps only the most recent completedCallMemory calls (the older sibling runs again)', async () => {
    const { registry, runs } = countingRegistry(['read_a', 'ask_write', 'read_b']);
    await runStep(registry, ['read_a', 'ask_write', 'read_b'], { completedCallMemory: 1 });
    expect((runs.c1 ?? 0) + (runs.c3 ?? 0)).toBe(3);
    expect(runs.c2).toBe(1);
  });

  it('defaults completedCallMemory to 1,000', () => {
    expect(DEFAULT_COMPLETED_CALL_MEMORY).toBe(1000);
  });

  it.each([
    ['zero', 0],
    ['negative', -1],
    ['fraction', 1.5],
    ['string', '10'],
    ['infinite', Number.POSITIVE_INFINITY],
  ])('refuses a completedCallMemory that is %s', (_name, value) => {
    const { registry } = countingRegistry(['read']);
    expect(() =>
      langChainTools(registry, { context: { runId: 'r' }, completedCallMemory: value as number }),
    ).toThrow(/completedCallMemory must be a positive integer/);
  });

  it('refuses an unknown option key with a suggestion', () => {
    const { registry } = countingRegistry(['read']);
    expect(() =>
      langChainTools(registry, {
        context: { runId: 'r' },
        completedCallMemry: 5,
      } as unknown as LangChainToolsOptions),
    ).toThrow(/did you mean "completedCallMemory"/);
  });
});
