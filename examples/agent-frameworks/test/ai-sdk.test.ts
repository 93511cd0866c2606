import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { aiSdkTools } from '@toolfence/tools/ai-sdk';
import {
  generateText,
  type ModelMessage,
  simulateReadableStream,
  stepCountIs,
  streamText,
} from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { completedCalls, type Fixture, setup, startsByCall } from './setup.ts';

interface Turn {
  readonly tool: string;
  readonly args: Record<string, unknown>;
}

/** One generation: one tool call, or several in one step (ids `call-<step>-<n>`). */
type Step = Turn | readonly Turn[];

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

/**
 * The AI SDK's own mock model, scripted: each generation calls the next turn's tool, then
 * answers `done`. `seen` collects every tool output the model was shown, as JSON.
 */
function scriptedModel(turns: readonly Step[]) {
  const seen: string[] = [];
  let index = 0;
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      const last = prompt.at(-1);
      if (last?.role === 'tool') {
        for (const part of last.content) seen.push(JSON.stringify(part));
      }
      const turn = turns[index];
      index += 1;
      if (turn === undefined) {
        return {
          content: [{ type: 'text', text: 'done' }],
          finishReason: { unified: 'stop', raw: undefined },
          usage,
          warnings: [],
        };
      }
      const calls: readonly Turn[] = Array.isArray(turn) ? turn : [turn as Turn];
      return {
        content: calls.map((call, position) => ({
          type: 'tool-call' as const,
          toolCallId: Array.isArray(turn) ? `call-${index}-${position + 1}` : `call-${index}`,
          toolName: call.tool,
          input: JSON.stringify(call.args),
        })),
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
  return { model, seen };
}

let fixture: Fixture;
beforeAll(async () => {
  fixture = await setup();
});
afterAll(async () => {
  await fixture?.close();
});

/** The next request after `first`: the prompt, its messages and an approval of its request. */
function approvedTurn(
  prompt: string,
  first: Awaited<ReturnType<typeof generateText>>,
): ModelMessage[] {
  const request = first.content.find((part) => part.type === 'tool-approval-request');
  expect(request).toBeDefined();
  return [
    { role: 'user', content: prompt },
    ...first.response.messages,
    {
      role: 'tool',
      content: [
        {
          type: 'tool-approval-response',
          approvalId: (request as { approvalId: string }).approvalId,
          approved: true,
        },
      ],
    },
  ];
}

function run(turns: readonly Step[], runId: string) {
  const { model, seen } = scriptedModel(turns);
  const tools = aiSdkTools(fixture.registry, { context: { runId } });
  return { model, seen, tools };
}

describe('AI SDK: generateText with registry tools', () => {
  it('allow: reads a file, echoes through server-everything and gets an image part', async () => {
    const { model, seen, tools } = run(
      [
        { tool: 'filesystem', args: { operation: 'read', path: 'notes.txt' } },
        { tool: 'everything__echo', args: { message: 'hi there' } },
        { tool: 'everything__get-tiny-image', args: {} },
      ],
      'ai-allow',
    );
    const result = await generateText({ model, tools, prompt: 'go', stopWhen: stepCountIs(6) });
    expect(result.text).toBe('done');
    expect(seen).toHaveLength(3);
    expect(seen[0]).toContain('hello from the root folder');
    expect(seen[1]).toContain('hi there');
    expect(JSON.parse(seen[2] as string).output).toMatchObject({
      type: 'content',
      value: expect.arrayContaining([
        expect.objectContaining({ type: 'file', mediaType: 'image/png' }),
      ]),
    });
  });

  it('ask then approve: the approved write runs once, without a second gate', async () => {
    const before = completedCalls(fixture.events, 'filesystem');
    const { model, seen, tools } = run(
      [{ tool: 'filesystem', args: { operation: 'write', path: 'approved.txt', content: 'yes' } }],
      'ai-approve',
    );
    const first = await generateText({ model, tools, prompt: 'write', stopWhen: stepCountIs(6) });
    expect(existsSync(join(fixture.root, 'approved.txt'))).toBe(false);
    const messages = approvedTurn('write', first);
    // The approval comes back in a new request: a new tools object, as a stateless server has.
    const fresh = aiSdkTools(fixture.registry, { context: { runId: 'ai-approve' } });
    const second = await generateText({ model, tools: fresh, messages, stopWhen: stepCountIs(6) });
    expect(second.text).toBe('done');
    expect(await readFile(join(fixture.root, 'approved.txt'), 'utf8')).toBe('yes');
    expect(completedCalls(fixture.events, 'filesystem') - before).toBe(1);
    expect(seen.join('\n')).not.toContain('Error');
  });

  it('an allowed call beside an asked one in the same step runs once across the approval', async () => {
    const runId = 'ai-sibling';
    const { model, seen, tools } = run(
      [
        [
          {
            tool: 'filesystem',
            args: { operation: 'write', path: 'ai-sibling.txt', content: 's' },
          },
          { tool: 'everything__echo', args: { message: 'ai sibling' } },
        ],
      ],
      runId,
    );
    const first = await generateText({ model, tools, prompt: 'go', stopWhen: stepCountIs(6) });
    expect(startsByCall(fixture.events, runId)).toEqual({ 'call-1-2': 1 });
    const messages = approvedTurn('go', first);
    const fresh = aiSdkTools(fixture.registry, { context: { runId } });
    const second = await generateText({ model, tools: fresh, messages, stopWhen: stepCountIs(6) });
    expect(second.text).toBe('done');
    expect(startsByCall(fixture.events, runId)).toEqual({ 'call-1-1': 1, 'call-1-2': 1 });
    expect(await readFile(join(fixture.root, 'ai-sibling.txt'), 'utf8')).toBe('s');
    expect(seen.join('\n')).toContain('ai sibling');
  });

  it('ask then reject: the tool is never reached and the model reads the denial', async () => {
    const before = fixture.events.length;
    const { model, seen, tools } = run(
      [{ tool: 'filesystem', args: { operation: 'write', path: 'rejected.txt', content: 'no' } }],
      'ai-reject',
    );
    const first = await generateText({ model, tools, prompt: 'write', stopWhen: stepCountIs(6) });
    const request = first.content.find((part) => part.type === 'tool-approval-request');
    const messages: ModelMessage[] = [
      { role: 'user', content: 'write' },
      ...first.response.messages,
      {
        role: 'tool',
        content: [
          {
            type: 'tool-approval-response',
            approvalId: (request as { approvalId: string }).approvalId,
            approved: false,
            reason: 'not today',
          },
        ],
      },
    ];
    const second = await generateText({ model, tools, messages, stopWhen: stepCountIs(6) });
    expect(second.text).toBe('done');
    expect(existsSync(join(fixture.root, 'rejected.txt'))).toBe(false);
    expect(fixture.events.slice(before)).toEqual([]);
    expect(seen.join('\n')).toContain('execution-denied');
  });

  it('deny: the vetoed server tool is never called and the model reads the code', async () => {
    const { model, seen, tools } = run([{ tool: 'fault__echo', args: { text: 'x' } }], 'ai-deny');
    const result = await generateText({ model, tools, prompt: 'go', stopWhen: stepCountIs(6) });
    expect(result.text).toBe('done');
    expect(seen[0]).toContain('error-text');
    expect(seen[0]).toContain('POLICY_PERMISSION_DENIED');
    expect(fixture.fault.calls.get('echo')).toBeUndefined();
  });

  it('invalid arguments: the model reads the validation error and corrects itself', async () => {
    const { model, seen, tools } = run(
      [
        { tool: 'filesystem', args: { operation: 'read', path: 5 } },
        { tool: 'filesystem', args: { operation: 'read', path: 'notes.txt' } },
      ],
      'ai-invalid',
    );
    const result = await generateText({ model, tools, prompt: 'go', stopWhen: stepCountIs(6) });
    expect(result.text).toBe('done');
    expect(seen[0]).toContain('REGISTRY_INPUT_INVALID');
    expect(seen[0]).toContain('$.path must be string');
    expect(seen[1]).toContain('hello from the root folder');
  });

  it('ambiguous delivery: the model is told to verify before retrying; nothing is replayed', async () => {
    const { model, seen, tools } = run([{ tool: 'fault__drop', args: {} }], 'ai-ambiguous');
    const result = await generateText({ model, tools, prompt: 'go', stopWhen: stepCountIs(6) });
    expect(result.text).toBe('done');
    expect(seen[0]).toContain('error-text');
    expect(seen[0]).toContain('Verify external state before retrying');
    expect(fixture.fault.calls.get('drop')).toBe(1);
  });

  it('streamText: an ask streams an approval request; the approved call runs once', async () => {
    const before = completedCalls(fixture.events, 'filesystem');
    let index = 0;
    const finish = (unified: 'stop' | 'tool-calls') => ({
      type: 'finish',
      finishReason: { unified, raw: undefined },
      usage,
    });
    const model = new MockLanguageModelV4({
      doStream: async () => {
        index += 1;
        const chunks: unknown[] =
          index === 1
            ? [
                {
                  type: 'tool-call' as const,
                  toolCallId: 'stream-1',
                  toolName: 'filesystem',
                  input: JSON.stringify({ operation: 'write', path: 'streamed.txt', content: 's' }),
                },
                finish('tool-calls'),
              ]
            : [
                { type: 'text-start' as const, id: 't' },
                { type: 'text-delta' as const, id: 't', delta: 'done' },
                { type: 'text-end' as const, id: 't' },
                finish('stop'),
              ];
        // The stream parts of the provider spec (LanguageModelV4StreamPart).
        return { stream: simulateReadableStream({ chunks, chunkDelayInMs: null }) as never };
      },
    });
    const tools = aiSdkTools(fixture.registry, { context: { runId: 'ai-stream' } });
    const first = streamText({ model, tools, prompt: 'write', stopWhen: stepCountIs(6) });
    const parts: string[] = [];
    for await (const part of first.fullStream) parts.push(part.type);
    expect(parts).toContain('tool-approval-request');
    expect(existsSync(join(fixture.root, 'streamed.txt'))).toBe(false);
    const request = (await first.content).find((part) => part.type === 'tool-approval-request');
    const messages: ModelMessage[] = [
      { role: 'user', content: 'write' },
      ...(await first.response).messages,
      {
        role: 'tool',
        content: [
          {
            type: 'tool-approval-response',
            approvalId: (request as { approvalId: string }).approvalId,
            approved: true,
          },
        ],
      },
    ];
    const second = streamText({ model, tools, messages, stopWhen: stepCountIs(6) });
    expect(await second.text).toBe('done');
    expect(await readFile(join(fixture.root, 'streamed.txt'), 'utf8')).toBe('s');
    expect(completedCalls(fixture.events, 'filesystem') - before).toBe(1);
  });
});
