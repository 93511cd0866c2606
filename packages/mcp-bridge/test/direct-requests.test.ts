// The session's own request path (no SDK `Protocol.request` per call), against a real
// server-everything over stdio: no timer per request (one deadline timer for every request in
// flight), a shorter deadline behind a longer one still ends on time, an abort ends only its own
// call, and the connection closing ends every request in flight.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AmbiguousDeliveryError } from '../src/client/errors.js';
import { McpClient } from '../src/client/mcp-client.js';
import { CHILD_ENV, EVERYTHING_ENTRY } from './helpers.js';

const everything = (): McpClient =>
  new McpClient({ command: [process.execPath, EVERYTHING_ENTRY, 'stdio'], env: CHILD_ENV });

/** A call that runs on the server for `seconds` (server-everything's long-running operation). */
const slow = (
  client: McpClient,
  seconds: number,
  options: { timeoutMs?: number; signal?: AbortSignal } = {},
) =>
  client.callTool('trigger-long-running-operation', { duration: seconds, steps: 1 }, options).then(
    () => 'answered' as const,
    (error: unknown) => error,
  );

describe('requests on the session', { timeout: 60_000 }, () => {
  let client: McpClient | undefined;
  afterEach(async () => {
    vi.restoreAllMocks();
    await client?.close();
    client = undefined;
  });

  it('arms no timer per call: 50 calls in a row start at most one timer', async () => {
    client = everything();
    await client.callTool('echo', { message: 'warm' });
    const timers = vi.spyOn(globalThis, 'setTimeout');
    for (let index = 0; index < 50; index++) {
      const result = await client.callTool('echo', { message: `m${index}` });
      expect(result.content).toEqual([{ type: 'text', text: `Echo: m${index}` }]);
    }
    expect(timers.mock.calls.length).toBeLessThanOrEqual(1);
  });

  it('a shorter deadline behind a longer one times out on time; the longer call is answered', async () => {
    client = everything();
    await client.connect();
    const long = slow(client, 2, { timeoutMs: 20_000 });
    const began = performance.now();
    const short = await slow(client, 10, { timeoutMs: 300 });
    const took = performance.now() - began;
    expect(AmbiguousDeliveryError.isInstance(short)).toBe(true);
    expect((short as AmbiguousDeliveryError).reason).toBe('timeout');
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(1_500);
    expect(await long).toBe('answered');
    // The session stays: a timeout is not a broken connection.
    const after = await client.callTool('echo', { message: 'after' });
    expect(after.content).toEqual([{ type: 'text', text: 'Echo: after' }]);
  });

  it('an abort ends only the calls on its signal, and an answered call is never cancelled', async () => {
    client = everything();
    await client.connect();
    const mine = new AbortController();
    const other = new AbortController();
    const answered = await client.callTool('echo', { message: 'done' }, { signal: mine.signal });
    expect(answered.content).toEqual([{ type: 'text', text: 'Echo: done' }]);
    const aborted = slow(client, 10, { signal: mine.signal });
    const kept = slow(client, 1, { signal: other.signal });
    await new Promise((resolve) => setTimeout(resolve, 100));
    mine.abort();
    const outcome = await aborted;
    expect(AmbiguousDeliveryError.isInstance(outcome)).toBe(true);
    expect((outcome as AmbiguousDeliveryError).reason).toBe('aborted');
    expect(await kept).toBe('answered');
  });

  it('the connection closing ends every request in flight', async () => {
    client = everything();
    await client.connect();
    const calls = [slow(client, 10), slow(client, 10, { timeoutMs: 30_000 })];
    await new Promise((resolve) => setTimeout(resolve, 100));
    const began = performance.now();
    await client.close();
    const outcomes = await Promise.all(calls);
    expect(performance.now() - began).toBeLessThan(5_000);
    for (const outcome of outcomes) {
      expect(outcome).toBeInstanceOf(Error);
      expect(outcome).not.toBe('answered');
    }
  });
});
