import { describe, expect, it } from 'vitest';
import { Semaphore } from './semaphore.js';

/** A promise and the function that resolves it. */
function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

/** Lets every pending promise job run. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('Semaphore', () => {
  it('takes free slots at once and queues the rest', () => {
    const semaphore = new Semaphore(2);
    expect(semaphore.acquire()).toBeUndefined();
    expect(semaphore.acquire()).toBeUndefined();
    const third = semaphore.acquire();
    expect(third).toBeInstanceOf(Promise);
    void third;
  });

  it('tryAcquire takes a free slot and never waits; a released slot can be taken again', () => {
    const semaphore = new Semaphore(1);
    expect(semaphore.tryAcquire()).toBe(true);
    expect(semaphore.tryAcquire()).toBe(false);
    const waiting = semaphore.acquire();
    expect(waiting).toBeInstanceOf(Promise);
    // The slot passes to the waiter, not to a later tryAcquire.
    semaphore.release();
    expect(semaphore.tryAcquire()).toBe(false);
    semaphore.release();
    expect(semaphore.tryAcquire()).toBe(true);
  });

  it('hands released slots to waiters in arrival order, run and acquire alike', async () => {
    const semaphore = new Semaphore(1);
    expect(semaphore.acquire()).toBeUndefined();
    const order: string[] = [];
    const first = semaphore.acquire()?.then(() => order.push('acquire 1'));
    const task = deferred();
    const second = semaphore.run(async () => {
      order.push('run');
      await task.promise;
    });
    const third = semaphore.acquire()?.then(() => order.push('acquire 2'));
    semaphore.release();
    await first;
    expect(order).toEqual(['acquire 1']);
    semaphore.release();
    await settle();
    expect(order).toEqual(['acquire 1', 'run']);
    // The running task holds the slot until it settles.
    await settle();
    expect(order).toEqual(['acquire 1', 'run']);
    task.resolve();
    await second;
    await third;
    expect(order).toEqual(['acquire 1', 'run', 'acquire 2']);
    semaphore.release();
    // Every slot is free again.
    expect(semaphore.acquire()).toBeUndefined();
  });

  it('removes a waiter whose signal aborts and rejects it with the reason', async () => {
    const semaphore = new Semaphore(1);
    expect(semaphore.acquire()).toBeUndefined();
    const controller = new AbortController();
    const reason = new Error('stop');
    const aborted = semaphore.acquire(controller.signal);
    const next = semaphore.acquire();
    controller.abort(reason);
    await expect(aborted).rejects.toBe(reason);
    // The slot skips the aborted waiter.
    semaphore.release();
    await expect(next).resolves.toBeUndefined();
    semaphore.release();
    expect(semaphore.acquire()).toBeUndefined();
    expect(semaphore.acquire()).toBeInstanceOf(Promise);
  });

  it('rejects at once a caller whose signal already aborted while no slot is free', async () => {
    const semaphore = new Semaphore(1);
    expect(semaphore.acquire()).toBeUndefined();
    const reason = new Error('already');
    await expect(semaphore.acquire(AbortSignal.abort(reason))).rejects.toBe(reason);
    await expect(semaphore.run(async () => 1, AbortSignal.abort(reason))).rejects.toBe(reason);
    semaphore.release();
    expect(semaphore.acquire()).toBeUndefined();
  });

  it('keeps no abort listener on the signal of a waiter that got its turn', async () => {
    const semaphore = new Semaphore(1);
    expect(semaphore.acquire()).toBeUndefined();
    const controller = new AbortController();
    const waiting = semaphore.acquire(controller.signal);
    semaphore.release();
    await waiting;
    // Aborting now does not take the slot back from its holder.
    controller.abort();
    expect(semaphore.acquire()).toBeInstanceOf(Promise);
  });

  it('frees the slot of a task that throws or rejects', async () => {
    const semaphore = new Semaphore(1);
    await expect(
      semaphore.run(() => {
        throw new Error('sync');
      }),
    ).rejects.toThrow('sync');
    await expect(semaphore.run(async () => Promise.reject(new Error('async')))).rejects.toThrow(
      'async',
    );
    expect(semaphore.acquire()).toBeUndefined();
  });
});
