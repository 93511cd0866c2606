/**
 * One `abort` listener per caller signal, however many calls share it.
 *
 * The SDK's JSON-RPC layer adds an `abort` listener to a request's signal and never removes it,
 * so a host that passes one long-lived signal to many calls collects a listener (and the
 * request's closures) per call, and Node warns `MaxListenersExceededWarning` at the eleventh.
 * Each call gets its own signal instead, linked to the caller's through one shared listener that
 * is removed when the last call in flight on that signal settles. The session's own requests
 * (which need no signal of their own) join the same listener as members ({@link watchAbort}).
 */

/** What a signal's shared listener aborts: a call's own controller, or a request in flight. */
export interface AbortMember {
  abort(reason: unknown): void;
}

/**
 * The members watching one signal: the first in `one` (most signals have one call in flight at
 * a time, such as a call's own signal, so no set is made for them), any more in `more`.
 */
interface Link {
  one: AbortMember | undefined;
  more: Set<AbortMember> | undefined;
  onAbort: () => void;
  /**
   * The signal of an {@link OwnedAbort}: its `abort` runs `onAbort` itself, so no `abort`
   * listener is on the signal, and the link stays while members come and go.
   */
  readonly owned: boolean;
}

const LINKS = new WeakMap<AbortSignal, Link>();

/** A call's own signal, aborted when the caller's is; `release()` once the call settled. */
export interface LinkedSignal {
  /** Aborted (with the caller's reason) when the caller's signal aborts. */
  readonly signal: AbortSignal;
  /** Unlinks the call; the caller's listener goes when no call in flight uses it. */
  release(): void;
}

const NOTHING = (): void => {};

/**
 * Adds `member` to the shared listener of `outer` (not yet aborted): `member.abort(reason)` runs
 * once when it aborts, unless {@link unwatchAbort} took the member out first.
 */
export function watchAbort(outer: AbortSignal, member: AbortMember): void {
  const link = LINKS.get(outer);
  if (link !== undefined) {
    if (link.one === undefined) link.one = member;
    else {
      link.more ??= new Set();
      link.more.add(member);
    }
    return;
  }
  const created = newLink(outer, member, false);
  LINKS.set(outer, created);
  outer.addEventListener('abort', created.onAbort, { once: true });
}

/** A link of `outer` whose `onAbort` aborts its members once, with `outer`'s reason. */
function newLink(outer: AbortSignal, member: AbortMember | undefined, owned: boolean): Link {
  const created: Link = { one: member, more: undefined, onAbort: NOTHING, owned };
  created.onAbort = () => {
    LINKS.delete(outer);
    const { one, more } = created;
    const aborted = more === undefined ? [] : [...more];
    created.one = undefined;
    created.more = undefined;
    one?.abort(outer.reason);
    for (const each of aborted) each.abort(outer.reason);
  };
  return created;
}

/**
 * A fresh signal that only its `abort` aborts, for a caller that keeps its controller to itself
 * (the gateway's fast path: one per call, aborted by a cancellation or the connection closing).
 * What {@link watchAbort} adds to it joins without an `abort` listener on the signal (an event
 * listener added and removed per call costs more than the rest of the link): `abort(reason)`
 * aborts the signal (its own listeners run), then each member still watching, as the shared
 * listener would. A second `abort` does nothing, as on an AbortController.
 */
export interface OwnedAbort {
  readonly signal: AbortSignal;
  abort(reason?: unknown): void;
}

/** Makes an {@link OwnedAbort}. */
export function ownedAbort(): OwnedAbort {
  const controller = new AbortController();
  const signal = controller.signal;
  const link = newLink(signal, undefined, true);
  LINKS.set(signal, link);
  return {
    signal,
    abort: (reason?: unknown) => {
      if (signal.aborted) return;
      controller.abort(reason);
      link.onAbort();
    },
  };
}

/** Takes `member` out; the listener goes with the last member. */
export function unwatchAbort(outer: AbortSignal, member: AbortMember): void {
  const link = LINKS.get(outer);
  if (link === undefined) return;
  if (link.one === member) link.one = undefined;
  else if (link.more?.delete(member) !== true) return;
  if (link.owned || link.one !== undefined || (link.more !== undefined && link.more.size > 0)) {
    return;
  }
  outer.removeEventListener('abort', link.onAbort);
  LINKS.delete(outer);
}

/** Links a call to the caller's `signal` (undefined when the caller gave none). */
export function linkSignal(outer: AbortSignal | undefined): LinkedSignal | undefined {
  if (outer === undefined) return undefined;
  const controller = new AbortController();
  if (outer.aborted) {
    controller.abort(outer.reason);
    return { signal: controller.signal, release: NOTHING };
  }
  watchAbort(outer, controller);
  return {
    signal: controller.signal,
    release: () => unwatchAbort(outer, controller),
  };
}
