/**
 * Waits `milliseconds`, or less when `signal` aborts; never rejects, and leaves no timer or
 * listener behind. Backoff waits use it so a closing transport or an aborted call ends the wait.
 */
export function sleepUnlessAborted(milliseconds: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted || milliseconds <= 0) {
      resolve();
      return;
    }
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, milliseconds);
    signal.addEventListener('abort', done, { once: true });
  });
}
