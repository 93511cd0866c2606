/** A caller waiting for its turn, with what settles its promise. */
interface Waiter {
  /** The task to start on its turn (`run`), or undefined when the caller holds the slot itself (`acquire`). */
  readonly task: (() => Promise<unknown>) | undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

/**
 * A counting semaphore that runs tasks with at most `limit` in flight, in arrival order. A
 * caller that is still waiting for its turn when its signal aborts leaves the queue at once and
 * rejects with the signal's reason (it never started, so nothing was sent).
 *
 * `run(task)` holds a slot for the task's life. `acquire()` and `release()` are the same slot
 * taken by hand, for a hot caller that awaits its own work inside `try { ... } finally {
 * release() }`: with a slot free it costs no promise at all, where `run` adds the task's promise
 * and the `then` that frees the slot (two promise jobs between the answer and the caller).
 *
 * The slot of a running task is freed by two handlers made once per semaphore (not a pair of
 * closures per task), and a waiter is one record: a burst of calls costs the queue one object
 * and one promise per waiting call.
 */
export class Semaphore {
  readonly #limit: number;
  #active = 0;
  #waiting: Waiter[] = [];
  /** Index of the next waiter in `#waiting` (a queue without `shift`). */
  #head = 0;
  readonly #settled = <T>(value: T): T => {
    this.release();
    return value;
  };
  readonly #failed = (error: unknown): never => {
    this.release();
    throw error;
  };

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Runs `task` on its turn; its slot is freed when its promise settles. */
  run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.#active < this.#limit) {
      this.#active++;
      return this.#start(task);
    }
    return this.#wait(task, signal) as Promise<T>;
  }

  /**
   * Takes a slot: undefined when one was free (the caller holds it now), otherwise a promise that
   * resolves when the slot is handed over, or rejects with the signal's reason if it aborts
   * first (then the caller holds nothing). The holder must call {@link Semaphore.release} once.
   */
  acquire(signal?: AbortSignal): Promise<void> | undefined {
    if (this.#active < this.#limit) {
      this.#active++;
      return undefined;
    }
    return this.#wait(undefined, signal) as Promise<void>;
  }

  /** Takes a slot if one is free now (true: the caller holds it), without waiting. */
  tryAcquire(): boolean {
    if (this.#active >= this.#limit) return false;
    this.#active++;
    return true;
  }

  /** Frees a slot taken by {@link Semaphore.acquire}: the next waiter gets it, or it is freed. */
  release(): void {
    const waiting = this.#waiting;
    if (this.#head >= waiting.length) {
      this.#active--;
      return;
    }
    const next = waiting[this.#head] as Waiter;
    waiting[this.#head] = undefined as unknown as Waiter;
    this.#head++;
    if (this.#head === waiting.length) {
      // The queue ran empty: start over with a fresh array (the old one held only holes).
      this.#waiting = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= waiting.length) {
      // Long queues drop their consumed front now and then, so memory follows the queue.
      this.#waiting = waiting.slice(this.#head);
      this.#head = 0;
    }
    if (next.onAbort !== undefined) next.signal?.removeEventListener('abort', next.onAbort);
    // The slot passes on as it is (the count stays): to the waiter's task, or to its holder.
    if (next.task === undefined) next.resolve(undefined);
    else this.#start(next.task).then(next.resolve, next.reject);
  }

  #wait(task: (() => Promise<unknown>) | undefined, signal: AbortSignal | undefined) {
    return new Promise<unknown>((resolve, reject) => {
      if (signal?.aborted === true) {
        reject(signal.reason);
        return;
      }
      const waiter: Waiter = { task, resolve, reject, signal, onAbort: undefined };
      if (signal !== undefined) {
        const onAbort = (): void => {
          const index = this.#waiting.indexOf(waiter, this.#head);
          if (index !== -1) this.#waiting.splice(index, 1);
          reject(signal.reason);
        };
        waiter.onAbort = onAbort;
        signal.addEventListener('abort', onAbort, { once: true });
      }
      this.#waiting.push(waiter);
    });
  }

  #start<T>(task: () => Promise<T>): Promise<T> {
    let running: Promise<T>;
    try {
      running = task();
    } catch (error) {
      this.release();
      return Promise.reject(error);
    }
    return running.then(this.#settled, this.#failed);
  }
}
