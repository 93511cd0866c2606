import type { JSONRPCMessage } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { type FastCallInFlight, FastCallsInFlight } from './fast-calls-in-flight.js';

function entry(): FastCallInFlight {
  return { controller: new AbortController() };
}

function cancellation(params: unknown, extra: Record<string, unknown> = {}): JSONRPCMessage {
  return { jsonrpc: '2.0', method: 'notifications/cancelled', params, ...extra } as JSONRPCMessage;
}

describe('FastCallsInFlight', () => {
  it('add keeps a call in flight (cancellable) until it is forgotten, starting nothing', () => {
    const calls = new FastCallsInFlight();
    const call = entry();
    calls.add(3, call);
    expect(calls.get(3)).toBe(call);
    calls.cancel(cancellation({ requestId: 3, reason: 'user stopped it' }));
    expect(call.controller.signal.reason).toBe('user stopped it');
    expect(calls.forget(3, entry())).toBe(false);
    expect(calls.forget(3, call)).toBe(true);
    expect(calls.size).toBe(0);
  });

  it('by default keeps a settled call until it is forgotten', async () => {
    const calls = new FastCallsInFlight();
    const call = entry();
    await calls.run(1, call, async () => 'done');
    expect(calls.get(1)).toBe(call);
    expect(calls.forget(1, call)).toBe(true);
    expect(calls.has(1)).toBe(false);
    expect(calls.forget(1, call)).toBe(false);
  });

  it('forgets only the call still in flight under an id', async () => {
    const calls = new FastCallsInFlight();
    const first = entry();
    const second = entry();
    await calls.run(1, first, async () => undefined);
    await calls.run(1, second, async () => undefined);
    expect(calls.forget(1, first)).toBe(false);
    expect(calls.get(1)).toBe(second);
  });

  it('gives the call its own abort signal', async () => {
    const calls = new FastCallsInFlight();
    const call = entry();
    let seen: AbortSignal | undefined;
    await calls.run(1, call, async (signal) => {
      seen = signal;
    });
    expect(seen).toBe(call.controller.signal);
  });

  it('aborts the call a well-formed notifications/cancelled names, with its reason', async () => {
    const calls = new FastCallsInFlight();
    const call = entry();
    const other = entry();
    await calls.run(3, call, async () => undefined);
    await calls.run('3', other, async () => undefined);
    calls.cancel(cancellation({ requestId: 3, reason: 'user stopped it' }));
    expect(call.controller.signal.aborted).toBe(true);
    expect(call.controller.signal.reason).toBe('user stopped it');
    expect(other.controller.signal.aborted).toBe(false);
  });

  it.each([
    ['a reason that is not text', cancellation({ requestId: 3, reason: 5 })],
    ['an id of its own (a request, not a notification)', cancellation({ requestId: 3 }, { id: 9 })],
    ['a fractional request id', cancellation({ requestId: 3.5 })],
    ['no params', cancellation(undefined)],
    [
      'another method',
      { jsonrpc: '2.0', method: 'notifications/progress', params: { requestId: 3 } },
    ],
  ])('ignores a cancellation with %s', async (_name, message) => {
    const calls = new FastCallsInFlight();
    const call = entry();
    await calls.run(3, call, async () => undefined);
    calls.cancel(message as JSONRPCMessage);
    expect(call.controller.signal.aborted).toBe(false);
  });

  it('aborts and forgets every call when the connection closes, each in turn', async () => {
    const calls = new FastCallsInFlight();
    const first = entry();
    const second = entry();
    await calls.run(1, first, async () => undefined);
    await calls.run(2, second, async () => undefined);
    const seen: [FastCallInFlight, boolean][] = [];
    const reason = new Error('Connection closed');
    calls.abortAll(reason, (call) => seen.push([call, second.controller.signal.aborted]));
    // Each call's follow-up runs right after its own abort, before the next call is aborted.
    expect(seen).toEqual([
      [first, false],
      [second, true],
    ]);
    expect(first.controller.signal.reason).toBe(reason);
    expect(calls.size).toBe(0);
  });
});
