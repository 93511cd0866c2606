// Many calls sharing one AbortSignal, against a real server-everything over stdio: no
// MaxListenersExceededWarning, no listener left on the signal once the calls settled, and an
// abort still reaches every call in flight and every call waiting for its turn.
import { getEventListeners } from 'node:events';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { AmbiguousDeliveryError } from '../src/client/errors.js';
import { McpClient } from '../src/client/mcp-client.js';
import {
  allowLoopback,
  CHILD_ENV,
  EVERYTHING_ENTRY,
  type EverythingHttp,
  startEverythingHttp,
} from './helpers.js';

function everything(maxConcurrentRequests: number, url?: string): McpClient {
  return url === undefined
    ? new McpClient({
        command: [process.execPath, EVERYTHING_ENTRY, 'stdio'],
        env: CHILD_ENV,
        maxConcurrentRequests,
      })
    : new McpClient({ url, allowNonPublic: allowLoopback, maxConcurrentRequests });
}

/** Collects the process warnings emitted while `run` runs (and one turn after). */
async function warningsDuring(run: () => Promise<void>): Promise<Error[]> {
  const warnings: Error[] = [];
  const onWarning = (warning: Error): void => {
    warnings.push(warning);
  };
  process.on('warning', onWarning);
  try {
    await run();
    await nextTurn();
    await nextTurn();
  } finally {
    process.off('warning', onWarning);
  }
  return warnings;
}

describe('calls sharing one AbortSignal', { timeout: 30_000 }, () => {
  let client: McpClient | undefined;
  let server: EverythingHttp | undefined;
  afterEach(async () => {
    await client?.close();
    client = undefined;
    await server?.close();
    server = undefined;
  });

  it.each([
    ['stdio: 64 concurrent calls, 64 in flight', 'stdio', 64, 64],
    ['stdio: 64 concurrent calls, 8 in flight', 'stdio', 8, 64],
    ['stdio: 40 sequential calls', 'stdio', 1, 1],
    ['HTTP: 64 concurrent calls, 64 in flight', 'http', 64, 64],
  ])(
    '%s: no MaxListenersExceededWarning and no listener left',
    async (_name, mode, limit, width) => {
      if (mode === 'http') server = await startEverythingHttp();
      client = everything(limit, server?.url);
      await client.connect();
      const controller = new AbortController();
      const { signal } = controller;
      const warnings = await warningsDuring(async () => {
        const rounds = width === 1 ? 40 : 1;
        for (let round = 0; round < rounds; round++) {
          const results = await Promise.all(
            Array.from({ length: width }, (_, index) =>
              (client as McpClient).callTool('echo', { message: `m${index}` }, { signal }),
            ),
          );
          expect(results.map((result) => result.content)).toEqual(
            Array.from({ length: width }, (_, index) => [
              { type: 'text', text: `Echo: m${index}` },
            ]),
          );
        }
      });
      expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual(
        [],
      );
      expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    },
  );

  it('aborts every call in flight and every waiting call through one listener', async () => {
    client = everything(4);
    await client.connect();
    const controller = new AbortController();
    const { signal } = controller;
    const warnings = await warningsDuring(async () => {
      const calls = Array.from({ length: 32 }, () =>
        (client as McpClient)
          .callTool('trigger-long-running-operation', { duration: 30, steps: 1 }, { signal })
          .then(
            () => 'resolved',
            (error: unknown) => error,
          ),
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(getEventListeners(signal, 'abort')).toHaveLength(1);
      const aborted = performance.now();
      controller.abort();
      const outcomes = await Promise.all(calls);
      expect(performance.now() - aborted).toBeLessThan(5_000);
      // The 4 in flight may have reached the server: ambiguous. The 28 waiting never started.
      const ambiguous = outcomes.filter((outcome) => AmbiguousDeliveryError.isInstance(outcome));
      const notStarted = outcomes.filter(
        (outcome) => outcome instanceof Error && outcome.name === 'AbortError',
      );
      expect(ambiguous).toHaveLength(4);
      expect(notStarted).toHaveLength(28);
    });
    expect(warnings.filter((warning) => warning.name === 'MaxListenersExceededWarning')).toEqual(
      [],
    );
    expect(getEventListeners(signal, 'abort')).toHaveLength(0);
    // The client still works after the abort.
    const result = await client.callTool('echo', { message: 'after' });
    expect(result.content).toEqual([{ type: 'text', text: 'Echo: after' }]);
  });
});
