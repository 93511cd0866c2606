import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  Agent,
  type AgentInputItem,
  type Model,
  type ModelRequest,
  type ModelResponse,
  RunState,
  run,
  setTracingDisabled,
  Usage,
} from '@openai/agents';
import { openAiAgentsTools } from '@toolfence/tools/openai-agents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completedCalls, type Fixture, setup, startsByCall } from './setup.ts';

setTracingDisabled(true);

interface Turn {
  readonly tool: string;
  readonly args: Record<string, unknown>;
}

/** One response: one tool call, or several in one step (ids `call-<step>-<n>`). */
type Step = Turn | readonly Turn[];

/**
 * A `Model` for the Agents SDK, scripted: each response calls the next turn's tool, then
 * answers `done`. `seen` collects every tool output the model was shown, as JSON; `tools` the
 * tool definitions it was offered.
 */
class ScriptedModel implements Model {
  readonly seen: string[] = [];
  readonly offered: ModelRequest['tools'][] = [];
  readonly #turns: readonly Step[];
  readonly #shown = new Set<string>();
  #index = 0;

  constructor(turns: readonly Step[]) {
    this.#turns = turns;
  }

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.offered.push(request.tools);
    const items: AgentInputItem[] = typeof request.input === 'string' ? [] : request.input;
    for (const item of items) {
      if (item.type === 'function_call_result' && !this.#shown.has(item.callId)) {
        this.#shown.add(item.callId);
        this.seen.push(JSON.stringify(item.output));
      }
    }
    const turn = this.#turns[this.#index];
    this.#index += 1;
    if (turn === undefined) {
      return {
        usage: new Usage(),
        output: [
          {
            type: 'message',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: 'done' }],
          },
        ],
      };
    }
    const calls: readonly Turn[] = Array.isArray(turn) ? turn : [turn as Turn];
    return {
      usage: new Usage(),
      output: calls.map((call, position) => ({
        type: 'function_call' as const,
        callId: Array.isArray(turn) ? `call-${this.#index}-${position + 1}` : `call-${this.#index}`,
        name: call.tool,
        arguments: JSON.stringify(call.args),
        status: 'completed' as const,
      })),
    };
  }

  // biome-ignore lint/correctness/useYield: the tests only use non-streamed runs
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error('not used');
  }
}

let fixture: Fixture;
beforeAll(async () => {
  fixture = await setup();
});
afterAll(async () => {
  await fixture?.close();
});

function agentFor(turns: readonly Step[], runId: string) {
  const model = new ScriptedModel(turns);
  const agent = new Agent({
    name: 'toolfence-test',
    instructions: 'Use the tools.',
    model,
    tools: openAiAgentsTools(fixture.registry, { context: { runId } }),
  });
  return { model, agent };
}

describe('OpenAI Agents SDK: run() of an Agent with registry tools', () => {
  it('offers model-safe names and non-strict schemas where strict mode cannot be met', async () => {
    const { model, agent } = agentFor([], 'agents-names');
    await run(agent, 'hi');
    const offered = model.offered[0] ?? [];
    const names = offered.map((tool) => (tool as { name: string }).name);
    // `-` is not kept by the Agents SDK, so such names are rewritten (with a hash suffix).
    expect(names).toContainEqual(expect.stringMatching(/^everything__get_tiny_image_[0-9a-f]{8}$/));
    expect(names).toContain('everything__echo');
    for (const name of names) expect(name).toMatch(/^[A-Za-z0-9_]{1,64}$/);
    const filesystem = offered.find((tool) => (tool as { name: string }).name === 'filesystem');
    expect(filesystem).toMatchObject({ strict: false });
  });

  it('allow: reads a file, echoes through server-everything and gets an image part', async () => {
    const image = openAiAgentsTools(fixture.registry, {
      context: { runId: 'x' },
      names: ['everything__get-tiny-image'],
    })[0]?.name as string;
    const { model, agent } = agentFor(
      [
        { tool: 'filesystem', args: { operation: 'read', path: 'notes.txt' } },
        { tool: 'everything__echo', args: { message: 'hi there' } },
        { tool: image, args: {} },
      ],
      'agents-allow',
    );
    const result = await run(agent, 'go');
    expect(result.finalOutput).toBe('done');
    expect(model.seen).toHaveLength(3);
    expect(model.seen[0]).toContain('hello from the root folder');
    expect(model.seen[1]).toContain('hi there');
    expect(model.seen[2]).toContain('input_image');
  });

  it('structured content: the model reads the JSON text block of the server once, not twice', async () => {
    const weather = openAiAgentsTools(fixture.registry, {
      context: { runId: 'x' },
      names: ['everything__get-structured-content'],
    })[0]?.name as string;
    const { model, agent } = agentFor(
      [{ tool: weather, args: { location: 'Chicago' } }],
      'agents-structured',
    );
    const result = await run(agent, 'go');
    expect(result.finalOutput).toBe('done');
    const shown = JSON.parse(model.seen[0] as string) as { type: string; text: string };
    // server-everything sends the weather as a JSON text block and as structuredContent.
    expect(shown).toEqual({
      type: 'text',
      text: JSON.stringify({ temperature: 36, conditions: 'Light rain / drizzle', humidity: 82 }),
    });
  });

  it('ask then approve: the interrupted write runs once after state.approve, no second gate', async () => {
    const before = completedCalls(fixture.events, 'filesystem');
    const { model, agent } = agentFor(
      [{ tool: 'filesystem', args: { operation: 'write', path: 'agents-ok.txt', content: 'yes' } }],
      'agents-approve',
    );
    const first = await run(agent, 'write');
    expect(first.interruptions).toHaveLength(1);
    expect(existsSync(join(fixture.root, 'agents-ok.txt'))).toBe(false);
    first.state.approve(first.interruptions[0] as never);
    const second = await run(agent, first.state);
    expect(second.finalOutput).toBe('done');
    expect(await readFile(join(fixture.root, 'agents-ok.txt'), 'utf8')).toBe('yes');
    expect(completedCalls(fixture.events, 'filesystem') - before).toBe(1);
    expect(model.seen.join('\n')).not.toContain('Error');
  });

  it('an allowed call beside an asked one in the same step runs once across the approval', async () => {
    const runId = 'agents-sibling';
    const { model, agent } = agentFor(
      [
        [
          {
            tool: 'filesystem',
            args: { operation: 'write', path: 'agents-sibling.txt', content: 's' },
          },
          { tool: 'everything__echo', args: { message: 'agents sibling' } },
        ],
      ],
      runId,
    );
    const first = await run(agent, 'go');
    expect(first.interruptions).toHaveLength(1);
    first.state.approve(first.interruptions[0] as never);
    const second = await run(agent, first.state);
    expect(second.finalOutput).toBe('done');
    expect(startsByCall(fixture.events, runId)).toEqual({ 'call-1-1': 1, 'call-1-2': 1 });
    expect(await readFile(join(fixture.root, 'agents-sibling.txt'), 'utf8')).toBe('s');
    expect(model.seen.join('\n')).toContain('agents sibling');
  });

  it('ask then approve across a serialized RunState and a new adapter: still exactly once', async () => {
    const before = completedCalls(fixture.events, 'filesystem');
    const { agent } = agentFor(
      [
        {
          tool: 'filesystem',
          args: { operation: 'write', path: 'agents-later.txt', content: 'z' },
        },
      ],
      'agents-serialized',
    );
    const first = await run(agent, 'write');
    const saved = first.state.toString();
    // Later, elsewhere: the same agent definition with freshly built tools.
    const later = agent.clone({
      tools: openAiAgentsTools(fixture.registry, { context: { runId: 'agents-serialized' } }),
    });
    const state = await RunState.fromString(later, saved);
    state.approve(state.getInterruptions()[0] as never);
    const second = await run(later, state);
    expect(second.finalOutput).toBe('done');
    expect(await readFile(join(fixture.root, 'agents-later.txt'), 'utf8')).toBe('z');
    expect(completedCalls(fixture.events, 'filesystem') - before).toBe(1);
  });

  it('ask then reject: state.reject keeps the tool unreached; the model reads the rejection', async () => {
    const before = fixture.events.length;
    const { model, agent } = agentFor(
      [{ tool: 'filesystem', args: { operation: 'write', path: 'agents-no.txt', content: 'no' } }],
      'agents-reject',
    );
    const first = await run(agent, 'write');
    first.state.reject(first.interruptions[0] as never);
    const second = await run(agent, first.state);
    expect(second.finalOutput).toBe('done');
    expect(existsSync(join(fixture.root, 'agents-no.txt'))).toBe(false);
    expect(fixture.events.slice(before)).toEqual([]);
    expect(model.seen[0]).toMatch(/not approved|rejected/i);
  });

  it('deny: the vetoed server tool is never called and the model reads the code', async () => {
    const { model, agent } = agentFor(
      [{ tool: 'fault__echo', args: { text: 'x' } }],
      'agents-deny',
    );
    const result = await run(agent, 'go');
    expect(result.finalOutput).toBe('done');
    expect(model.seen[0]).toContain('POLICY_PERMISSION_DENIED');
    expect(fixture.fault.calls.get('echo')).toBeUndefined();
  });

  it('invalid arguments: the model reads the validation error and corrects itself', async () => {
    const { model, agent } = agentFor(
      [
        { tool: 'filesystem', args: { operation: 'read', path: 5 } },
        { tool: 'filesystem', args: { operation: 'read', path: 'notes.txt' } },
      ],
      'agents-invalid',
    );
    const result = await run(agent, 'go');
    expect(result.finalOutput).toBe('done');
    expect(model.seen[0]).toContain('REGISTRY_INPUT_INVALID');
    expect(model.seen[0]).toContain('$.path must be string');
    expect(model.seen[1]).toContain('hello from the root folder');
  });

  it('ambiguous delivery: the model is told to verify before retrying; nothing is replayed', async () => {
    const before = fixture.fault.calls.get('drop') ?? 0;
    const { model, agent } = agentFor([{ tool: 'fault__drop', args: {} }], 'agents-ambiguous');
    const result = await run(agent, 'go');
    expect(result.finalOutput).toBe('done');
    expect(model.seen[0]).toContain('Verify external state before retrying');
    expect((fixture.fault.calls.get('drop') ?? 0) - before).toBe(1);
  });
});
