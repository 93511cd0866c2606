import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { stopProcess } from './fixtures/teardown.js';
import { CHILD_ENV, type RecordedRequest } from './helpers.js';

const SERVER = fileURLToPath(new URL('./fixtures/v2-listen-tasks-server.mjs', import.meta.url));

/** One task as the test server keeps it. */
export interface ServerTask {
  readonly tool: string;
  readonly status: string;
  readonly polls: number;
  readonly cancels: number;
  readonly updates: readonly Readonly<Record<string, unknown>>[];
}

/** What the test server counted. */
export interface ServerState {
  readonly toolCalls: Readonly<Record<string, number>>;
  readonly tasks: Readonly<Record<string, ServerTask>>;
  readonly listens: number;
}

/** A running test/fixtures/v2-listen-tasks-server.mjs (SDK v2, stateless modern HTTP). */
export interface ListenTasksServer {
  readonly url: string;
  log(): Promise<readonly RecordedRequest[]>;
  state(): Promise<ServerState>;
  /** POSTs a test control (`change`, `poison?bytes=N`, `drop-gets?count=N`). */
  control(path: string): Promise<void>;
  close(): Promise<void>;
}

export async function startListenTasksServer(
  mode: 'tasks' | 'no-tasks',
): Promise<ListenTasksServer> {
  const child = spawn(process.execPath, [SERVER, mode], {
    env: { ...CHILD_ENV },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error('the listen/tasks server did not start')),
      8000,
    );
    child.stdout?.once('data', (chunk: Buffer) => {
      clearTimeout(timer);
      resolve((JSON.parse(chunk.toString()) as { url: string }).url);
    });
    child.once('exit', () => reject(new Error('the listen/tasks server exited')));
  });
  const base = url.replace(/\/mcp$/, '');
  return {
    url,
    async log() {
      return (await (await fetch(`${base}/__log`)).json()) as RecordedRequest[];
    },
    async state() {
      return (await (await fetch(`${base}/__state`)).json()) as ServerState;
    },
    async control(path) {
      const response = await fetch(`${base}/__${path}`, { method: 'POST' });
      await response.arrayBuffer();
    },
    close: () => stopProcess(child),
  };
}

/** Resolves when `check` holds, polling every 20 ms; fails after `limitMs`. */
export async function eventually(check: () => Promise<boolean>, limitMs = 5000): Promise<void> {
  const until = Date.now() + limitMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > until) throw new Error('the condition did not hold in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
