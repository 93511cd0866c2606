import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { startFaultHttpServer } from './fault-http-server.js';
import { stopProcess } from './fixtures/teardown.js';
import { CHILD_ENV } from './helpers.js';

const CLIENT = fileURLToPath(new URL('./fixtures/close-exits-client.ts', import.meta.url));
const STDIO_SERVER = fileURLToPath(new URL('./fixtures/fault-stdio-server.mjs', import.meta.url));

/** Bound on the wait for the exit after close (the bugs kept the process 30 s or 23 days). */
const EXIT_BOUND_MS = 10_000;

interface Outcome {
  readonly output: string;
  /** Milliseconds from the "closed" line to the exit, or undefined when it did not exit in time. */
  readonly exitAfterCloseMs: number | undefined;
}

async function runClient(mode: string, ...args: string[]): Promise<Outcome> {
  const child = spawn(process.execPath, ['--import', 'tsx', CLIENT, mode, ...args], {
    env: { ...CHILD_ENV },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let closedAt: number | undefined;
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    if (closedAt === undefined && output.includes('closed')) closedAt = Date.now();
  });
  child.stderr.resume();
  const exited = new Promise<number>((resolve) => child.once('exit', () => resolve(Date.now())));
  const deadline = new Promise<undefined>((resolve) => {
    const check = setInterval(() => {
      if (closedAt !== undefined && Date.now() - closedAt > EXIT_BOUND_MS) {
        clearInterval(check);
        resolve(undefined);
      }
    }, 100);
    void exited.then(() => clearInterval(check));
  });
  const exitAt = await Promise.race([exited, deadline]);
  // A process still running is gone before the caller removes the folder it writes into.
  if (exitAt === undefined) await stopProcess(child, 'SIGKILL');
  return {
    output,
    exitAfterCloseMs:
      exitAt === undefined || closedAt === undefined ? undefined : exitAt - closedAt,
  };
}

describe('close() leaves no timer behind', () => {
  it('a process waiting out a huge SSE retry: exits at once after close', async () => {
    const server = await startFaultHttpServer({ resumableRetryMs: 2_000_000_000 });
    try {
      const outcome = await runClient('http', server.url);
      expect(outcome.output).toContain('waiting 30000');
      expect(outcome.output).toContain('closed CLIENT_AMBIGUOUS_DELIVERY');
      expect(outcome.exitAfterCloseMs).toBeDefined();
      expect(server.state.lastEventIds).toEqual([]);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('a process with a stdio record in flight exits at once after close', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'mcp-bridge-close-'));
    try {
      const outcome = await runClient('stdio', STDIO_SERVER, join(dir, 'calls.txt'));
      expect(outcome.output).toContain('closed CLIENT_AMBIGUOUS_DELIVERY');
      expect(outcome.exitAfterCloseMs).toBeDefined();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
