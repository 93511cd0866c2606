import { getEventListeners } from 'node:events';
import {
  AmbiguousDeliveryError,
  ClientConfigurationError,
  InputRequestError,
  McpClient,
  type McpClientOptions,
  type McpTaskOptions,
  TaskError,
} from '@toolfence/mcp-bridge';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allowLoopback, type RecordedRequest, scripted } from './helpers.js';
import {
  eventually,
  type ListenTasksServer,
  type ServerTask,
  startListenTasksServer,
} from './listen-tasks-server.js';

const TASKS = 'io.modelcontextprotocol/tasks';

const byMethod = (log: readonly RecordedRequest[], method: string): readonly RecordedRequest[] =>
  log.filter((entry) => entry.body?.method === method);

describe('the Tasks extension (SEP-2663) against an SDK v2 server with the task methods', () => {
  let server: ListenTasksServer;
  beforeAll(async () => {
    server = await startListenTasksServer('tasks');
  });
  afterAll(async () => {
    await server.close();
  });

  /** Runs `run` on a fresh client; returns what it gave and the requests it caused. */
  async function withClient<T>(
    options: Partial<McpClientOptions>,
    run: (client: McpClient) => Promise<T>,
  ): Promise<{ result: T; log: readonly RecordedRequest[] }> {
    const seen = (await server.log()).length;
    const client = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      standaloneStream: false,
      ...options,
    });
    try {
      const result = await run(client);
      return { result, log: (await server.log()).slice(seen) };
    } finally {
      await client.close();
    }
  }

  async function onlyTask(tool: string): Promise<ServerTask> {
    const tasks = Object.values((await server.state()).tasks).filter((task) => task.tool === tool);
    expect(tasks).toHaveLength(1);
    return tasks[0] as ServerTask;
  }

  it('polls a task handle to its result: one tools/call, N tasks/get with Mcp-Name, the extension declared', async () => {
    const { result, log } = await withClient({ tasks: { minPollIntervalMs: 10 } }, (client) =>
      client.callTool('slow', { polls: 3, pollIntervalMs: 10 }),
    );
    expect(result.content).toEqual([{ type: 'text', text: 'done after 3 polls' }]);
    const [call, ...rest] = byMethod(log, 'tools/call');
    expect(rest).toEqual([]);
    const capabilities = call?.body?.params?._meta?.['io.modelcontextprotocol/clientCapabilities'];
    expect(capabilities).toMatchObject({ extensions: { [TASKS]: {} } });
    const gets = byMethod(log, 'tasks/get');
    expect(gets).toHaveLength(3);
    const task = await onlyTask('slow');
    expect(task.polls).toBe(3);
    expect(task.status).toBe('completed');
    for (const get of gets) {
      expect(get.headers['mcp-method']).toBe('tasks/get');
      expect(get.headers['mcp-name']).toBe(get.body?.params?.taskId);
    }
    expect((await server.state()).toolCalls.slow).toBe(1);
  });

  it.each([
    // The server asks for 1 ms: at most 1000 / 200 polls (plus one) fit in maxWaitMs.
    ['a too-short suggestion is raised to minPollIntervalMs', 1, { minPollIntervalMs: 200 }, 1, 6],
    // The server asks for 100 s: maxPollIntervalMs keeps polling going.
    [
      'a too-long suggestion is cut to maxPollIntervalMs',
      100_000,
      { minPollIntervalMs: 10, maxPollIntervalMs: 50 },
      8,
      25,
    ],
  ])(
    'honours the suggested poll interval within bounds: %s',
    async (_name, suggested, bounds, least, most) => {
      const { result } = await withClient({ tasks: { ...bounds, maxWaitMs: 1000 } }, (client) =>
        client.callTool('forever', { pollIntervalMs: suggested }).catch((error: unknown) => error),
      );
      expect(TaskError.isInstance(result) && result.reason).toBe('timeout');
      const tasks = Object.values((await server.state()).tasks).filter(
        (task) => task.tool === 'forever' && task.status === 'cancelled',
      );
      const polls = tasks.at(-1)?.polls ?? -1;
      expect(polls).toBeGreaterThanOrEqual(least);
      expect(polls).toBeLessThanOrEqual(most);
    },
  );

  // Issue 35 item 12: every poll used to leave an abort listener behind (45 after 45 polls), and
  // Node printed MaxListenersExceededWarning to the host's stderr.
  it('leaves no abort listener per poll: 45 polls, no MaxListenersExceededWarning', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => {
      warnings.push(warning.name);
    };
    process.on('warning', onWarning);
    try {
      const controller = new AbortController();
      const { result } = await withClient({ tasks: { minPollIntervalMs: 1 } }, (client) =>
        client.callTool('slow', { polls: 45, pollIntervalMs: 1 }, { signal: controller.signal }),
      );
      expect(result.content).toEqual([{ type: 'text', text: 'done after 45 polls' }]);
      // The caller's signal keeps nothing of the call either.
      expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
      // Warnings are emitted on a later tick.
      await new Promise((resolve) => setImmediate(resolve));
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });

  it('cancels the task when the caller aborts; the server sees tasks/cancel', async () => {
    const controller = new AbortController();
    const before = Object.keys((await server.state()).tasks);
    const { result } = await withClient({ tasks: { minPollIntervalMs: 10 } }, async (client) => {
      const pending = client
        .callTool('forever', { pollIntervalMs: 10 }, { signal: controller.signal })
        .catch((error: unknown) => error);
      await eventually(async () => {
        const state = await server.state();
        return Object.entries(state.tasks).some(
          ([id, task]) => !before.includes(id) && task.polls >= 2,
        );
      });
      controller.abort();
      return pending;
    });
    expect(TaskError.isInstance(result)).toBe(true);
    const error = result as TaskError;
    expect(error.reason).toBe('aborted');
    expect(error.cancelAcknowledged).toBe(true);
    expect(error.code).toBe('CLIENT_TASK_FAILED');
    expect(error.message).not.toContain(error.taskId as string);
    expect(JSON.stringify(error.details)).not.toContain(error.taskId as string);
    const task = (await server.state()).tasks[error.taskId as string];
    expect(task?.cancels).toBe(1);
    expect(task?.status).toBe('cancelled');
  });

  it('races abort against the handle: before it the call is ambiguous, after it the task is cancelled; never a second tools/call', async () => {
    const before = (await server.state()).toolCalls.forever ?? 0;
    const outcomes: string[] = [];
    const { log } = await withClient({ tasks: { minPollIntervalMs: 5 } }, async (client) => {
      for (let round = 0; round < 12; round++) {
        const controller = new AbortController();
        const pending = client
          .callTool('forever', { pollIntervalMs: 5 }, { signal: controller.signal })
          .catch((error: unknown) => error);
        setTimeout(() => controller.abort(), round * 3);
        const error = await pending;
        if (TaskError.isInstance(error)) {
          expect(error.reason).toBe('aborted');
          expect(error.cancelAcknowledged).toBe(true);
          outcomes.push('task-cancelled');
        } else if (AmbiguousDeliveryError.isInstance(error)) {
          expect(error.reason).toBe('aborted');
          outcomes.push('ambiguous');
        } else {
          expect((error as Error).name).toBe('AbortError');
          outcomes.push('not-sent');
        }
      }
    });
    const calls = byMethod(log, 'tools/call').length;
    expect(calls).toBeLessThanOrEqual(12);
    expect((await server.state()).toolCalls.forever).toBe(before + calls);
    expect(byMethod(log, 'tasks/cancel')).toHaveLength(
      outcomes.filter((outcome) => outcome === 'task-cancelled').length,
    );
    expect(outcomes).toContain('task-cancelled');
  });

  it('ends the wait at once on close(), leaving the task running (no cancel, no more polls)', async () => {
    const before = Object.keys((await server.state()).tasks);
    const client = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      standaloneStream: false,
      tasks: { minPollIntervalMs: 10, pollIntervalMs: 10_000 },
    });
    const pending = client
      .callTool('forever', { pollIntervalMs: 10 })
      .catch((error: unknown) => error);
    let id: string | undefined;
    await eventually(async () => {
      const state = await server.state();
      id = Object.keys(state.tasks).find(
        (key) => !before.includes(key) && (state.tasks[key]?.polls ?? 0) >= 2,
      );
      return id !== undefined;
    });
    await client.close();
    const result = await pending;
    expect(TaskError.isInstance(result) && result.reason).toBe('closed');
    const polls = (await server.state()).tasks[id as string]?.polls;
    await new Promise((resolve) => setTimeout(resolve, 200));
    const task = (await server.state()).tasks[id as string];
    expect(task?.polls).toBe(polls);
    expect(task?.cancels).toBe(0);
    expect(task?.status).toBe('working');
  });

  it('cancels the task at the total-time limit (tasks.maxWaitMs)', async () => {
    const { result, log } = await withClient(
      { tasks: { minPollIntervalMs: 20, maxWaitMs: 300 } },
      (client) =>
        client.callTool('forever', { pollIntervalMs: 20 }).catch((error: unknown) => error),
    );
    expect(TaskError.isInstance(result) && result.reason).toBe('timeout');
    expect(byMethod(log, 'tasks/cancel')).toHaveLength(1);
    expect(byMethod(log, 'tools/call')).toHaveLength(1);
    const task = (await server.state()).tasks[(result as TaskError).taskId as string];
    expect(task?.cancels).toBe(1);
  });

  it('polls again after a dropped connection and never sends tools/call twice', async () => {
    await server.control('drop-gets?count=2');
    const callsBefore = (await server.state()).toolCalls.slow ?? 0;
    const { result, log } = await withClient({ tasks: { minPollIntervalMs: 10 } }, (client) =>
      client.callTool('slow', { polls: 2, pollIntervalMs: 10 }),
    );
    // Two polls lost their connection (the server never answered them), two more finished it.
    expect(result.content).toEqual([{ type: 'text', text: 'done after 2 polls' }]);
    expect(byMethod(log, 'tasks/get')).toHaveLength(4);
    expect(byMethod(log, 'tools/call')).toHaveLength(1);
    expect((await server.state()).toolCalls.slow).toBe(callsBefore + 1);
  });

  it('gives up after tasks.maxPollFailures polls in a row fail, without cancelling or repeating', async () => {
    await server.control('drop-gets?count=1000');
    const callsBefore = (await server.state()).toolCalls.slow ?? 0;
    const { result, log } = await withClient(
      { tasks: { minPollIntervalMs: 10, maxPollFailures: 2 } },
      (client) =>
        client.callTool('slow', { polls: 2, pollIntervalMs: 10 }).catch((error: unknown) => error),
    );
    await server.control('drop-gets?count=0');
    expect(TaskError.isInstance(result) && result.reason).toBe('poll-failed');
    expect(byMethod(log, 'tasks/get')).toHaveLength(2);
    expect(byMethod(log, 'tools/call')).toHaveLength(1);
    expect((await server.state()).toolCalls.slow).toBe(callsBefore + 1);
  });

  it('answers input a task asks for with tasks/update through the elicitation callback', async () => {
    const asked: unknown[] = [];
    const { result, log } = await withClient(
      {
        tasks: { minPollIntervalMs: 10, pollIntervalMs: 10 },
        elicitation: {
          handler: async (params) => {
            asked.push(params.message);
            return { action: 'accept', content: { ok: true } };
          },
        },
      },
      (client) => client.callTool('ask'),
    );
    expect(asked).toEqual(['Approve the long job?']);
    expect(result.content).toEqual([
      {
        type: 'text',
        text: 'approved [{"approve-1":{"action":"accept","content":{"ok":true}}}]',
      },
    ]);
    const [update, ...more] = byMethod(log, 'tasks/update');
    expect(more).toEqual([]);
    expect(update?.headers['mcp-name']).toBe(update?.body?.params?.taskId);
  });

  // Issue 35 item 12: a task's input draws from the same per-call prompt allowance.
  it('refuses a task that asks for more prompts than maxInputPrompts, asking nobody, and cancels it', async () => {
    let asked = 0;
    const { result } = await withClient(
      {
        tasks: { minPollIntervalMs: 10, pollIntervalMs: 10 },
        maxInputPrompts: 2,
        elicitation: {
          handler: async () => {
            asked += 1;
            return { action: 'accept', content: { ok: true } };
          },
        },
      },
      (client) => client.callTool('ask', { count: 3 }).catch((error: unknown) => error),
    );
    expect(InputRequestError.isInstance(result)).toBe(true);
    expect(result).toMatchObject({ reason: 'too-many-prompts', details: { maxInputPrompts: 2 } });
    expect(asked).toBe(0);
    const tasks = Object.values((await server.state()).tasks).filter(
      (task) => task.tool === 'ask' && task.status === 'cancelled',
    );
    expect(tasks.length).toBeGreaterThan(0);
  });

  it('sends a lost tasks/update again without asking the host twice', async () => {
    await server.control('drop-updates?count=1');
    const asked: unknown[] = [];
    const { result, log } = await withClient(
      {
        tasks: { minPollIntervalMs: 10, pollIntervalMs: 10 },
        elicitation: {
          handler: async (params) => {
            asked.push(params.message);
            return { action: 'accept', content: { ok: true } };
          },
        },
      },
      (client) => client.callTool('ask'),
    );
    expect(asked).toEqual(['Approve the long job?']);
    expect(byMethod(log, 'tasks/update')).toHaveLength(2);
    expect(result.content).toEqual([
      {
        type: 'text',
        text: 'approved [{"approve-1":{"action":"accept","content":{"ok":true}}}]',
      },
    ]);
  });

  it('declares nothing and never polls when the host does not opt in', async () => {
    const { result, log } = await withClient({}, (client) => client.callTool('slow', { polls: 2 }));
    expect(result.content).toEqual([{ type: 'text', text: 'slow done in place' }]);
    const [call] = byMethod(log, 'tools/call');
    const capabilities = call?.body?.params?._meta?.['io.modelcontextprotocol/clientCapabilities'];
    expect(capabilities).not.toHaveProperty(['extensions', TASKS]);
    expect(byMethod(log, 'tasks/get')).toEqual([]);
  });
});

describe('the Tasks extension against a server that does not declare it', () => {
  it('makes a plain call: the extension is not declared and nothing is polled', async () => {
    const server = await startListenTasksServer('no-tasks');
    const client = new McpClient({
      url: server.url,
      allowNonPublic: allowLoopback,
      tasks: {},
    });
    try {
      const result = await client.callTool('slow', { polls: 2 });
      expect(result.content).toEqual([{ type: 'text', text: 'slow done in place' }]);
      const log = await server.log();
      const [call] = byMethod(log, 'tools/call');
      const capabilities =
        call?.body?.params?._meta?.['io.modelcontextprotocol/clientCapabilities'];
      expect(capabilities).not.toHaveProperty(['extensions', TASKS]);
      expect(byMethod(log, 'tasks/get')).toEqual([]);
    } finally {
      await client.close();
      await server.close();
    }
  });

  it('reports a task handle the client did not negotiate as an ambiguous, invalid response', async () => {
    const endpoint = await scripted((body) => {
      if (body.method === 'server/discover') {
        return {
          status: 200,
          body: {
            jsonrpc: '2.0',
            id: body.id,
            result: {
              supportedVersions: ['2026-07-28'],
              capabilities: { tools: {}, extensions: { [TASKS]: {} } },
              serverInfo: { name: 'scripted', version: '1' },
            },
          },
        };
      }
      return {
        status: 200,
        body: {
          jsonrpc: '2.0',
          id: body.id,
          result: { resultType: 'task', taskId: 't-1', status: 'working' },
        },
      };
    });
    const client = new McpClient({ url: endpoint.url, allowNonPublic: allowLoopback });
    try {
      const error = await client.callTool('anything').catch((caught: unknown) => caught);
      expect(AmbiguousDeliveryError.isInstance(error) && error.reason).toBe('invalid-response');
      expect(endpoint.requests.filter((request) => request.body?.method === 'tasks/get')).toEqual(
        [],
      );
    } finally {
      await client.close();
      await endpoint.close();
    }
  });

  it.each([
    ['an unknown key (with a suggestion)', { pollIntervalMS: 10 }, /did you mean "pollIntervalMs"/],
    ['a fractional interval', { pollIntervalMs: 1.5 }, /tasks\.pollIntervalMs/],
    ['a zero wait', { maxWaitMs: 0 }, /tasks\.maxWaitMs/],
    [
      'a minimum above the maximum',
      { minPollIntervalMs: 500, maxPollIntervalMs: 100 },
      /minPollIntervalMs/,
    ],
    ['a non-object', 'yes', /tasks options must be an object/],
  ])('refuses %s in the tasks option', (_name, tasks, message) => {
    expect(
      () =>
        new McpClient({
          url: 'http://127.0.0.1:1/mcp',
          allowNonPublic: allowLoopback,
          tasks: tasks as McpTaskOptions,
        }),
    ).toThrow(message);
  });

  it('refuses the Tasks extension through extensions (the tasks option declares it)', () => {
    const build = () =>
      new McpClient({
        url: 'http://127.0.0.1:1/mcp',
        allowNonPublic: allowLoopback,
        extensions: { [TASKS]: {} },
      });
    let thrown: unknown;
    try {
      build();
    } catch (error) {
      thrown = error;
    }
    expect(ClientConfigurationError.isInstance(thrown)).toBe(true);
    expect((thrown as Error).message).toMatch(/tasks option/);
  });
});
