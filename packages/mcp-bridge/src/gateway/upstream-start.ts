import { UpstreamStartTimeoutError } from './errors.js';

/**
 * Bounds one upstream's load (connect, handshake, listing): resolves as `work` does, or rejects
 * with {@link UpstreamStartTimeoutError} after `timeoutMs` or when `signal` aborts (the gateway
 * closes). `work` is left to settle on its own (the caller closes the upstream, which ends it);
 * its late rejection is observed here.
 */
export function withStartTimeout<T>(
  work: Promise<T>,
  timeoutMs: number,
  server: string,
  signal: AbortSignal,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let timer: NodeJS.Timeout | undefined;
    const settle = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', stop);
    };
    const stop = (): void => {
      settle();
      reject(
        new UpstreamStartTimeoutError(
          `The gateway closed while the upstream ${server} was starting`,
          {
            details: { server, timeoutMs },
          },
        ),
      );
    };
    if (signal.aborted) {
      stop();
      work.catch(() => undefined);
      return;
    }
    signal.addEventListener('abort', stop, { once: true });
    timer = setTimeout(() => {
      settle();
      reject(
        new UpstreamStartTimeoutError(
          `The upstream ${server} did not start and list its tools within ${timeoutMs} ms (startTimeoutMs)`,
          { details: { server, timeoutMs } },
        ),
      );
    }, timeoutMs);
    work.then(
      (value) => {
        settle();
        resolve(value);
      },
      (error: unknown) => {
        settle();
        reject(error);
      },
    );
  });
}

/**
 * The gateway's first start, for downstream requests that arrive while it runs: a `tools/list`
 * may wait a bounded time for upstreams still starting, and then answers with what is ready.
 */
export class StartGate {
  #settled = true;
  #done: Promise<void> = Promise.resolve();

  /** Marks a start in progress until `run` settles (either way). */
  begin(run: Promise<unknown>): void {
    this.#settled = false;
    const done = run.then(
      () => undefined,
      () => undefined,
    );
    this.#done = done;
    void done.then(() => {
      if (this.#done === done) this.#settled = true;
    });
  }

  /** True while a start runs. */
  get starting(): boolean {
    return !this.#settled;
  }

  /** Resolves when the start settled, or after `ms` milliseconds, whichever is first. */
  wait(ms: number): Promise<void> {
    if (this.#settled || ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      void this.#done.then(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}
