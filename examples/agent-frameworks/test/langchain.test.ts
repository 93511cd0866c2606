import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage, type BaseMessage, ToolMessage } from '@langchain/core/messages';
import type { ChatResult } from '@langchain/core/outputs';
import type { StructuredToolInterface } from '@langchain/core/tools';
import { Command, MemorySaver } from '@langchain/langgraph';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { langChainTools } from '@toolfence/tools/langchain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completedCalls, type Fixture, setup, startsByCall } from './setup.ts';

interface Turn {
  readonly tool: string;
  readonly args: Record<string, unknown>;
}

/** One generation: one tool call, or several in one step (ids `call-<step>-<n>`). */
type Step = Turn | readonly Turn[];

/**
 * A fake tool-calling chat model, scripted: each generation calls the next turn's tool, then
 * answers `done`. `seen` collects every tool message the model was shown (content and status).
 */
class ScriptedChatModel extends BaseChatModel {
  readonly seen: string[] = [];
  readonly offered: string[][] = [];
  readonly #turns: readonly Step[];
  readonly #shown = new Set<string>();
  #index = 0;

  constructor(turns: readonly Step[]) {
    super({});
    this.#turns = turns;
  }

  _llmType(): string {
    return 'scripted';
  }

  override bindTools(tools: StructuredToolInterface[]): this {
    this.offered.push(tools.map((tool) => tool.name));
    return this;
  }

  async _generate(messages: BaseMessage[]): Promise<ChatResult> {
    for (const message of messages) {
      if (ToolMessage.isInstance(message) && !this.#shown.has(message.tool_call_id)) {
        this.#shown.add(message.tool_call_id);
        this.seen.push(JSON.stringify({ status: message.status, content: message.content }));
      }
    }
    const turn = this.#turns[this.#index];
    this.#index += 1;
    const calls = turn === undefined ? [] : Array.isArray(turn) ? turn : [turn as Turn];
    const message =
      turn === undefined
        ? new AIMessage('done')
        : new AIMessage({
            content: '',
            tool_calls: calls.map((call, position) => ({
              id: Array.isArray(turn)
                ? `call-${this.#index}-${position + 1}`
                : `call-${this.#index}`,
              name: call.tool,
              args: call.args,
              type: 'tool_call' as const,
            })),
          });
    return { generations: [{ message, text: turn === undefined ? 'done' : '' }] };
  }
}

let fixture: Fixture;
beforeAll(async () => {
  fixture = await setup();
});
afterAll(async () => {
  await fixture?.close();
});

function agentFor(turns: readonly Step[], runId: string, version: 'v1' | 'v2' = 'v1') {
  const model = new ScriptedChatModel(turns);
  const agent = createReactAgent({
    llm: model,
    tools: langChainTools(fixture.registry, { context: { runId } }),
    checkpointSaver: new MemorySaver(),
    version,
  });
  const config = { configurable: { thread_id: runId } };
  return { model, agent, config };
}

function lastText(state: { messages: BaseMessage[] }): unknown {
  return state.messages.at(-1)?.content;
}

describe('LangChain: a LangGraph ReAct agent with registry StructuredTools', () => {
  it('allow: reads a file, echoes through server-everything and gets an image block', async () => {
    const { model, agent, config } = agentFor(
      [
        { tool: 'filesystem', args: { operation: 'read', path: 'notes.txt' } },
        { tool: 'everything__echo', args: { message: 'hi there' } },
        { tool: 'everything__get-tiny-image', args: {} },
      ],
      'lc-allow',
    );
    const state = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] }, config);
    expect(lastText(state)).toBe('done');
    expect(model.seen).toHaveLength(3);
    expect(model.seen[0]).toContain('hello from the root folder');
    expect(model.seen[1]).toContain('hi there');
    expect(model.seen[2]).toContain('"type":"image"');
    expect(model.seen[2]).toContain('image/png');
  });

  it('ask then approve: interrupt() pauses the graph; resumed with approve it writes once', async () => {
    const before = completedCalls(fixture.events, 'filesystem');
    const { model, agent, config } = agentFor(
      [{ tool: 'filesystem', args: { operation: 'write', path: 'lc-ok.txt', content: 'yes' } }],
      'lc-approve',
    );
    const first = await agent.invoke({ messages: [{ role: 'user', content: 'write' }] }, config);
    const interrupts = (first as { __interrupt__?: { value: unknown }[] }).__interrupt__ ?? [];
    expect(interrupts).toHaveLength(1);
    expect(interrupts[0]?.value).toMatchObject({
      type: 'toolfence-approval',
      toolName: 'filesystem',
      args: { operation: 'write', path: 'lc-ok.txt', content: 'yes' },
    });
    expect(existsSync(join(fixture.root, 'lc-ok.txt'))).toBe(false);
    const second = await agent.invoke(new Command({ resume: { type: 'approve' } }), config);
    expect(lastText(second)).toBe('done');
    expect(await readFile(join(fixture.root, 'lc-ok.txt'), 'utf8')).toBe('yes');
    expect(completedCalls(fixture.events, 'filesystem') - before).toBe(1);
    expect(model.seen[0]).toContain('"status":"success"');
  });

  it.for(['v1', 'v2'] as const)(
    'an allowed call beside an asked one in the same step runs once across the resume (createReactAgent %s)',
    async (version) => {
      const runId = `lc-sibling-${version}`;
      const { model, agent, config } = agentFor(
        [
          [
            {
              tool: 'filesystem',
              args: { operation: 'write', path: `${runId}.txt`, content: 's' },
            },
            { tool: 'everything__echo', args: { message: `sibling ${version}` } },
          ],
        ],
        runId,
        version,
      );
      const first = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] }, config);
      expect((first as { __interrupt__?: unknown[] }).__interrupt__).toHaveLength(1);
      // The allowed echo ran in the interrupted step; the asked write waits for the human.
      expect(startsByCall(fixture.events, runId)).toEqual({ 'call-1-2': 1 });
      const second = await agent.invoke(new Command({ resume: { type: 'approve' } }), config);
      expect(lastText(second)).toBe('done');
      expect(startsByCall(fixture.events, runId)).toEqual({ 'call-1-1': 1, 'call-1-2': 1 });
      expect(await readFile(join(fixture.root, `${runId}.txt`), 'utf8')).toBe('s');
      expect(model.seen).toHaveLength(2);
      expect(model.seen.join('\n')).toContain(`sibling ${version}`);
    },
  );

  it('ask then reject: the tool is never reached and the model reads the message', async () => {
    const before = fixture.events.length;
    const { model, agent, config } = agentFor(
      [{ tool: 'filesystem', args: { operation: 'write', path: 'lc-no.txt', content: 'no' } }],
      'lc-reject',
    );
    await agent.invoke({ messages: [{ role: 'user', content: 'write' }] }, config);
    const second = await agent.invoke(
      new Command({ resume: { type: 'reject', message: 'Not today.' } }),
      config,
    );
    expect(lastText(second)).toBe('done');
    expect(existsSync(join(fixture.root, 'lc-no.txt'))).toBe(false);
    expect(fixture.events.slice(before)).toEqual([]);
    expect(model.seen[0]).toContain('Not today.');
    expect(model.seen[0]).toContain('"status":"error"');
  });

  it('deny: the vetoed server tool is never called and the model reads the code', async () => {
    const { model, agent, config } = agentFor(
      [{ tool: 'fault__echo', args: { text: 'x' } }],
      'lc-deny',
    );
    const state = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] }, config);
    expect(lastText(state)).toBe('done');
    expect(model.seen[0]).toContain('POLICY_PERMISSION_DENIED');
    expect(model.seen[0]).toContain('"status":"error"');
    expect(fixture.fault.calls.get('echo')).toBeUndefined();
  });

  it('invalid arguments: the model reads the validation error and corrects itself', async () => {
    const { model, agent, config } = agentFor(
      [
        { tool: 'filesystem', args: { operation: 'read', path: 5 } },
        { tool: 'filesystem', args: { operation: 'read', path: 'notes.txt' } },
      ],
      'lc-invalid',
    );
    const state = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] }, config);
    expect(lastText(state)).toBe('done');
    expect(model.seen[0]).toContain('"status":"error"');
    // LangChain checks the arguments against the same JSON Schema first (then the registry does).
    expect(model.seen[0]).toContain('did not match expected schema');
    expect(model.seen[0]).toContain('Instance type \\"number\\" is invalid');
    expect(model.seen[1]).toContain('hello from the root folder');
  });

  it('ambiguous delivery: the model is told to verify before retrying; nothing is replayed', async () => {
    const before = fixture.fault.calls.get('drop') ?? 0;
    const { model, agent, config } = agentFor([{ tool: 'fault__drop', args: {} }], 'lc-ambiguous');
    const state = await agent.invoke({ messages: [{ role: 'user', content: 'go' }] }, config);
    expect(lastText(state)).toBe('done');
    expect(model.seen[0]).toContain('Verify external state before retrying');
    expect((fixture.fault.calls.get('drop') ?? 0) - before).toBe(1);
  });
});
