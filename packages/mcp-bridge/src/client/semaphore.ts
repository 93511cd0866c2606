interface Waiter {
  readonly grant: () => void;
}

/**
 * A counting semaphore that runs tasks with at most `limit` in flight, in arrival order. A task
 * that is still waiting for its turn when its signal aborts leaves the queue at once and rejects
 * with the signal's reason (it never started, so nothing was sent).
 */
export class Semaphore {
  readonly #limit: number;
  #active = 0;
  readonly #waiting: Waiter[] = [];

  constructor(limit: number) {
    this.#limit = limit;
  }

  run<T>(task: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.#active < this.#limit) {
      this.#active++;
      return this.#start(task);
    }
    return new Promise<T>((resolve, reject) => {
      if (signal?.aborted === true) {
        reject(signal.reason);
        return;
      }
      const onAbort = (): void => {
        const index = this.#waiting.indexOf(waiter);
        if (index !== -1) this.#waiting.splice(index, 1);
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          this.#start(task).then(resolve, reject);
        },
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#waiting.push(waiter);
    });
  }

  #start<T>(task: () => Promise<T>): Promise<T> {
    let running: Promise<T>;
    try {
      running = task();
    } catch (error) {
      this.#release();
      return Promise.reject(error);
    }
    return running.then(
      (value) => {
        this.#release();
        return value;
      },
      (error: unknown) => {
        this.#release();
        throw error;
      },
    );
  }

  /** Hands the slot to the next waiter, or frees it. */
  #release(): void {
    const next = this.#waiting.shift();
    if (next === undefined) this.#active--;
    else next.grant();
  }
}
