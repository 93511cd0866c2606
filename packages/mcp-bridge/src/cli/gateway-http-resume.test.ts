// The resumptions of sealed legacy sessions (serve --http with a sealing key) are shared only by
// requests of the same session and the same principal: a request of another principal arriving
// while the owner's resumption runs is never handed the owner's session, and the owner's request
// never gets the answer of another principal's (failed) resumption.
import { describe, expect, it } from 'vitest';
import { SharedResumptions } from './gateway-http.js';

/** A promise settled by hand. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((settle) => {
    resolve = settle;
  });
  return { promise, resolve };
}

describe('SharedResumptions', () => {
  it("never hands one principal's resumption to another asking for the same session id", async () => {
    const resumptions = new SharedResumptions<string | undefined>();
    const alice = deferred<string | undefined>();
    const starts: string[] = [];
    const owners = resumptions.run('sealed-id', 'alice', () => {
      starts.push('alice');
      return alice.promise;
    });
    // Bob presents Alice's id while her resumption is in progress: his own runs (and, sealed for
    // someone else, finds nothing).
    const bobs = resumptions.run('sealed-id', 'bob', async () => {
      starts.push('bob');
      return undefined;
    });
    expect(starts).toEqual(['alice', 'bob']);
    expect(await bobs).toBeUndefined();
    alice.resolve("alice's session");
    expect(await owners).toBe("alice's session");
  });

  it("never hands another principal's failed resumption to the owner", async () => {
    const resumptions = new SharedResumptions<string | undefined>();
    const bob = deferred<string | undefined>();
    const bobs = resumptions.run('sealed-id', 'bob', () => bob.promise);
    const owners = resumptions.run('sealed-id', 'alice', async () => "alice's session");
    expect(await owners).toBe("alice's session");
    bob.resolve(undefined);
    expect(await bobs).toBeUndefined();
  });

  it('shares one resumption among requests of the same session and principal, then forgets it', async () => {
    const resumptions = new SharedResumptions<string>();
    const first = deferred<string>();
    let starts = 0;
    const start = () => {
      starts += 1;
      return first.promise;
    };
    const one = resumptions.run('sealed-id', 'alice', start);
    const two = resumptions.run('sealed-id', 'alice', start);
    expect(starts).toBe(1);
    expect(resumptions.size).toBe(1);
    first.resolve('session');
    expect([await one, await two]).toEqual(['session', 'session']);
    expect(resumptions.size).toBe(0);
    await resumptions.run('sealed-id', 'alice', async () => {
      starts += 1;
      return 'again';
    });
    expect(starts).toBe(2);
  });

  it('keys by both values with no separator to forge', () => {
    const resumptions = new SharedResumptions<number>();
    const pending = new Promise<number>(() => undefined);
    let starts = 0;
    const start = () => {
      starts += 1;
      return pending;
    };
    void resumptions.run('a|b', 'c', start);
    void resumptions.run('a', 'b|c', start);
    void resumptions.run('a","b', 'c', start);
    void resumptions.run('a', 'b","c', start);
    expect(starts).toBe(4);
  });
});
