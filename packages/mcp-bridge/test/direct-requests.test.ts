// The session's own request path (no SDK `Protocol.request` per call), against a real
// server-everything over stdio: no timer per request (one deadline timer for every request in
// flight), a shorter deadline behind a longer one still ends on time, an abort ends only its own
// call, and the connection closing ends every request in flight.
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { AmbiguousDeliveryError } from '../src/client/errors.js';
import { McpClient } from '../src/client/mcp-client.js';
import { ProtocolSession } from '../src/protocol/protocol-session.js';
import { StdioTransport } from '../src/transport/stdio-transport.js';
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

/** Messages the handler already on a transport saw (see {@link sessionOn}). */
let earlierSaw = 0;

/**
 * A session on a fresh transport, or on one that already has a message handler (which the peer
 * calls first for every message, as the SDK engine did): the outcomes must be the same.
 */
const sessionOn = async (path: 'fresh' | 'handled'): Promise<ProtocolSession> => {
  earlierSaw = 0;
  const session = new ProtocolSession({
    makeTransport: () => {
      const transport = new StdioTransport({
        command: [process.execPath, EVERYTHING_ENTRY, 'stdio'],
        env: CHILD_ENV,
      });
      if (path === 'handled') {
        transport.onmessage = () => {
          earlierSaw += 1;
        };
      }
      return transport;
    },
    protocolVersions: ['2025-11-25'],
    clientInfo: { name: 'engine-path-test', version: '1.0.0' },
    capabilities: {},
    handlers: {},
    maxInputRounds: 4,
    maxInputPrompts: 4,
    openTimeoutMs: 30_000,
    paramHeaders: () => undefined,
    onClose: () => undefined,
    onError: () => undefined,
  });
  await session.open();
  return session;
};

const sessionSlow = (
  session: ProtocolSession,
  seconds: number,
  options: { timeoutMs: number; signal?: AbortSignal },
) =>
  session
    .request(
      'tools/call',
      { name: 'trigger-long-running-operation', arguments: { duration: seconds, steps: 1 } },
      options,
    )
    .then(
      () => 'answered' as const,
      (error: unknown) => error,
    );

describe.each(['fresh', 'handled'] as const)(
  'requests of a session on a %s transport',
  { timeout: 60_000 },
  (path) => {
    let session: ProtocolSession | undefined;
    afterEach(async () => {
      await session?.close();
      session = undefined;
    });

    it('are answered, and a handler already on the transport sees every message first', async () => {
      session = await sessionOn(path);
      for (let index = 0; index < 5; index++) {
        const result = await session.request(
          'tools/call',
          { name: 'echo', arguments: { message: `m${index}` } },
          { timeoutMs: 10_000 },
        );
        expect(result.content).toEqual([{ type: 'text', text: `Echo: m${index}` }]);
      }
      // The handshake's answer and the five calls' answers, at least.
      if (path === 'handled') expect(earlierSaw).toBeGreaterThanOrEqual(6);
      else expect(earlierSaw).toBe(0);
    });

    it('a shorter deadline behind a longer one times out on time; the longer call is answered', async () => {
      session = await sessionOn(path);
      const long = sessionSlow(session, 2, { timeoutMs: 20_000 });
      const began = performance.now();
      const short = await sessionSlow(session, 10, { timeoutMs: 300 });
      const took = performance.now() - began;
      expect(short).toBeInstanceOf(McpError);
      expect((short as McpError).code).toBe(ErrorCode.RequestTimeout);
      expect(took).toBeGreaterThanOrEqual(290);
      expect(took).toBeLessThan(1_500);
      expect(await long).toBe('answered');
    });

    it('an abort ends only the calls on its signal', async () => {
      session = await sessionOn(path);
      const mine = new AbortController();
      const aborted = sessionSlow(session, 10, { timeoutMs: 30_000, signal: mine.signal });
      const kept = sessionSlow(session, 1, { timeoutMs: 30_000 });
      await new Promise((resolve) => setTimeout(resolve, 100));
      mine.abort(new Error('stop'));
      // A reason that is not an McpError is wrapped in one (McpClient reads the signal, so it is
      // an AmbiguousDeliveryError there).
      const outcome = await aborted;
      expect(outcome).toBeInstanceOf(McpError);
      expect((outcome as McpError).message).toContain('stop');
      expect(await kept).toBe('answered');
    });

    it('the connection closing ends every request in flight', async () => {
      session = await sessionOn(path);
      const calls = [
        sessionSlow(session, 10, { timeoutMs: 30_000 }),
        sessionSlow(session, 10, { timeoutMs: 30_000 }),
      ];
      await new Promise((resolve) => setTimeout(resolve, 100));
      await session.close();
      session = undefined;
      for (const outcome of await Promise.all(calls)) {
        expect(outcome).toBeInstanceOf(McpError);
        expect((outcome as McpError).code).toBe(ErrorCode.ConnectionClosed);
      }
    });
  },
);
