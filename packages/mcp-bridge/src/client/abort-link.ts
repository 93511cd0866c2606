/**
 * One `abort` listener per caller signal, however many calls share it.
 *
 * The SDK's JSON-RPC layer adds an `abort` listener to a request's signal and never removes it,
 * so a host that passes one long-lived signal to many calls collects a listener (and the
 * request's closures) per call, and Node warns `MaxListenersExceededWarning` at the eleventh.
 * Each call gets its own signal instead, linked to the caller's through one shared listener that
 * is removed when the last call in flight on that signal settles.
 */
interface Link {
  readonly members: Set<AbortController>;
  readonly onAbort: () => void;
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

/** Links a call to the caller's `signal` (undefined when the caller gave none). */
export function linkSignal(outer: AbortSignal | undefined): LinkedSignal | undefined {
  if (outer === undefined) return undefined;
  const controller = new AbortController();
  if (outer.aborted) {
    controller.abort(outer.reason);
    return { signal: controller.signal, release: NOTHING };
  }
  let link = LINKS.get(outer);
  if (link === undefined) {
    const members = new Set<AbortController>();
    const onAbort = (): void => {
      LINKS.delete(outer);
      for (const member of members) member.abort(outer.reason);
      members.clear();
    };
    link = { members, onAbort };
    LINKS.set(outer, link);
    outer.addEventListener('abort', onAbort, { once: true });
  }
  const { members, onAbort } = link;
  members.add(controller);
  return {
    signal: controller.signal,
    release: () => {
      if (!members.delete(controller) || members.size > 0) return;
      outer.removeEventListener('abort', onAbort);
      if (LINKS.get(outer)?.members === members) LINKS.delete(outer);
    },
  };
}
