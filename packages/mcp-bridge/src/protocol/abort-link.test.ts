import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { linkSignal, ownedAbort, unwatchAbort, watchAbort } from './abort-link.js';

/** A member that records the reasons it was aborted with. */
const member = () => {
  const reasons: unknown[] = [];
  return { reasons, abort: (reason: unknown) => reasons.push(reason) };
};

describe('watchAbort', () => {
  it('one listener for any number of members, removed with the last (in any order)', () => {
    const outer = new AbortController();
    const [a, b, c] = [member(), member(), member()];
    watchAbort(outer.signal, a);
    watchAbort(outer.signal, b);
    watchAbort(outer.signal, c);
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(1);
    unwatchAbort(outer.signal, a);
    unwatchAbort(outer.signal, c);
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(1);
    unwatchAbort(outer.signal, b);
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(0);
    outer.abort('late');
    expect([a.reasons, b.reasons, c.reasons]).toEqual([[], [], []]);
  });

  it('aborts each member still watching once, with the reason, and keeps no listener', () => {
    const outer = new AbortController();
    const [a, b, gone] = [member(), member(), member()];
    watchAbort(outer.signal, a);
    watchAbort(outer.signal, gone);
    watchAbort(outer.signal, b);
    unwatchAbort(outer.signal, gone);
    outer.abort('stop');
    expect([a.reasons, b.reasons, gone.reasons]).toEqual([['stop'], ['stop'], []]);
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(0);
    // Taking a member out after the abort changes nothing.
    unwatchAbort(outer.signal, a);
    expect(a.reasons).toEqual(['stop']);
  });

  it('a member added after the first left takes its place', () => {
    const outer = new AbortController();
    const [a, b] = [member(), member()];
    watchAbort(outer.signal, a);
    unwatchAbort(outer.signal, a);
    watchAbort(outer.signal, b);
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(1);
    outer.abort('now');
    expect([a.reasons, b.reasons]).toEqual([[], ['now']]);
  });

  it('linkSignal shares the listener with the watching members', () => {
    const outer = new AbortController();
    const a = member();
    watchAbort(outer.signal, a);
    const link = linkSignal(outer.signal);
    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(1);
    outer.abort('both');
    expect(link?.signal.aborted).toBe(true);
    expect(link?.signal.reason).toBe('both');
    expect(a.reasons).toEqual(['both']);
    link?.release();
  });
});

describe('ownedAbort', () => {
  it('members join with no abort listener, and its abort aborts the signal, then each member', () => {
    const owned = ownedAbort();
    const [a, b, gone] = [member(), member(), member()];
    const order: string[] = [];
    owned.signal.addEventListener('abort', () => order.push(`signal:${a.reasons.length}`));
    watchAbort(owned.signal, a);
    watchAbort(owned.signal, b);
    watchAbort(owned.signal, gone);
    unwatchAbort(owned.signal, gone);
    // Only the test's own listener: the members added none.
    expect(getEventListeners(owned.signal, 'abort')).toHaveLength(1);
    owned.abort('cancelled');
    owned.abort('again');
    expect(owned.signal.aborted).toBe(true);
    expect(owned.signal.reason).toBe('cancelled');
    expect(order).toEqual(['signal:0']);
    expect([a.reasons, b.reasons, gone.reasons]).toEqual([['cancelled'], ['cancelled'], []]);
  });

  it('keeps its link while members come and go, for the next member to join', () => {
    const owned = ownedAbort();
    const [first, second] = [member(), member()];
    watchAbort(owned.signal, first);
    unwatchAbort(owned.signal, first);
    watchAbort(owned.signal, second);
    expect(getEventListeners(owned.signal, 'abort')).toHaveLength(0);
    owned.abort();
    expect(first.reasons).toEqual([]);
    expect(second.reasons).toHaveLength(1);
    expect(second.reasons[0]).toBeInstanceOf(DOMException);
  });

  it('links a linkSignal call to it the same way, and releases it', () => {
    const owned = ownedAbort();
    const linked = linkSignal(owned.signal);
    const released = linkSignal(owned.signal);
    released?.release();
    expect(getEventListeners(owned.signal, 'abort')).toHaveLength(0);
    owned.abort('stop');
    expect(linked?.signal.reason).toBe('stop');
    expect(released?.signal.aborted).toBe(false);
  });
});
