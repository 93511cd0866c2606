import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { PromptAllowance } from '../protocol/prompt-allowance.js';
import { awaitTask, resolveTaskOptions, type TaskPort, type TaskSettings } from './task-polling.js';

describe('awaitTask', () => {
  // Issue 35 item 12: the JSON-RPC layer leaves a listener on the signal of every request; the
  // polls used to share one signal, which collected one listener per poll (45 after 45 polls).
  it('gives each poll its own signal, so no listener piles up on a shared one', async () => {
    const counts: number[] = [];
    let polls = 0;
    const port: TaskPort = {
      get: async (_taskId, _timeoutMs, signal) => {
        // What the SDK's JSON-RPC layer does with a request's signal: a listener, never removed.
        signal.addEventListener('abort', () => undefined);
        counts.push(getEventListeners(signal, 'abort').length);
        polls += 1;
        return {
          ok: true,
          task:
            polls < 45 ? { status: 'working' } : { status: 'completed', result: { content: [] } },
        };
      },
      update: async () => true,
      cancel: async () => true,
    };
    const caller = new AbortController();
    const result = await awaitTask(
      { taskId: 'task-1', pollIntervalMs: 0 },
      {
        settings: resolveTaskOptions({ minPollIntervalMs: 1 }) as TaskSettings,
        port,
        handlers: {},
        maxInputRounds: 8,
        prompts: new PromptAllowance(32),
        requestTimeoutMs: 1_000,
        signal: caller.signal,
      },
    );
    expect(result).toEqual({ content: [] });
    expect(counts).toHaveLength(45);
    expect(Math.max(...counts)).toBe(1);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
  });
});
