import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { linkSignal, unwatchAbort, watchAbort } from './abort-link.js';

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
