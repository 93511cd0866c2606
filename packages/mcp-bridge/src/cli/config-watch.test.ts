import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ConfigWatch, watchConfigFile } from './config-watch.js';

let folder: string;
let config: string;
let watching: ConfigWatch | undefined;
let calls = 0;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'toolfence-watch-'));
  config = join(folder, 'toolfence.json');
  await writeFile(config, '{}');
  calls = 0;
  watching = watchConfigFile(config, () => {
    calls += 1;
  });
});
afterEach(async () => {
  watching?.close();
  await rm(folder, { recursive: true, force: true });
});

/** Waits until the listener ran more often than `before`. */
const changedSince = (before: number) =>
  expect.poll(() => calls, { timeout: 5_000, interval: 10 }).toBeGreaterThan(before);
const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

describe('watchConfigFile', () => {
  it('hears a write in place', async () => {
    await writeFile(config, '{"a":1}');
    await changedSince(0);
  });

  // Each way an editor or a deploy replaces the file; after it, a plain write is still heard
  // (the watch followed the path, not the old file).
  it.each([
    [
      'renamed over',
      async () => {
        await writeFile(`${config}.tmp`, '{"b":1}');
        await rename(`${config}.tmp`, config);
      },
    ],
    [
      'removed and created again',
      async () => {
        await unlink(config);
        await settle();
        await writeFile(config, '{"c":1}');
      },
    ],
    [
      'moved away and another moved in',
      async () => {
        await rename(config, `${config}.old`);
        await settle();
        await writeFile(`${config}.new`, '{"d":1}');
        await rename(`${config}.new`, config);
      },
    ],
  ])('hears the file %s, and a write after it', async (_name, replace) => {
    await replace();
    await changedSince(0);
    await settle();
    const before = calls;
    await writeFile(config, '{"e":1}');
    await changedSince(before);
  });

  // A folder watch would be woken (an inotify event and two reads) by every audited call; the
  // process's read syscalls, counted by Linux in /proc/self/io, show it is not.
  it('is not woken by writes to the files beside the config (the audit log, the lock file)', async () => {
    const reads = () => Number(/syscr: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))?.[1]);
    await settle();
    const before = reads();
    for (let n = 0; n < 100; n += 1) {
      appendFileSync(join(folder, 'toolfence-audit.jsonl'), `{"n":${n}}\n`);
      // One turn of the event loop per write, as between two gateway calls.
      await new Promise((resolve) => setImmediate(resolve));
    }
    writeFileSync(join(folder, 'toolfence.lock.json'), '{}');
    await settle();
    expect(reads() - before).toBeLessThan(50);
    expect(calls).toBe(0);
    await writeFile(config, '{"f":1}');
    await changedSince(0);
  });

  it('stops at close', async () => {
    watching?.close();
    await writeFile(config, '{"g":1}');
    await writeFile(`${config}.tmp`, '{}');
    await rename(`${config}.tmp`, config);
    await settle();
    expect(calls).toBe(0);
  });
});
