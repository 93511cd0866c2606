import { execFile } from 'node:child_process';
import { mkdtemp, rename, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
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

  // A folder watch would be woken (an inotify event and two reads) by every audited call. Linux
  // counts a process's read syscalls in /proc/self/io; the count is taken in a child process of
  // its own that does nothing else, because the test runner's process reads for every other
  // test file it runs at the same time.
  it('is not woken by writes to the files beside the config (the audit log, the lock file)', async () => {
    const outcome = await inChild(folder);
    expect(outcome.reads).toBeLessThan(50);
    expect(outcome.calls).toBe(0);
    // The watch was live all along: a write to the config itself is heard.
    expect(outcome.heard).toBe(true);
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

/** The built module, so that a plain `node` child can load it. */
const BUILT = fileURLToPath(new URL('../../dist/cli/config-watch.js', import.meta.url));

/**
 * In a fresh `node` that only watches: 100 appends to the audit log beside the config (one
 * event-loop turn each, as between two gateway calls) and a lock-file write, then the child's
 * read syscalls over that stretch, the listener's calls, and whether a write to the config
 * itself is heard afterwards.
 */
function inChild(dir: string): Promise<{ reads: number; calls: number; heard: boolean }> {
  const script = `
    import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
    import { join } from 'node:path';
    const { watchConfigFile } = await import(${JSON.stringify(BUILT)});
    const dir = ${JSON.stringify(dir)};
    const reads = () => Number(/syscr: (\\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))[1]);
    const settle = () => new Promise((resolve) => setTimeout(resolve, 300));
    let calls = 0;
    const watching = watchConfigFile(join(dir, 'toolfence.json'), () => { calls += 1; });
    await settle();
    const before = reads();
    for (let n = 0; n < 100; n += 1) {
      appendFileSync(join(dir, 'toolfence-audit.jsonl'), '{"n":' + n + '}\\n');
      await new Promise((resolve) => setImmediate(resolve));
    }
    writeFileSync(join(dir, 'toolfence.lock.json'), '{}');
    await settle();
    // The read of /proc/self/io itself is one more.
    const counted = reads() - before - 1;
    const quiet = calls;
    writeFileSync(join(dir, 'toolfence.json'), '{"f":1}');
    for (let waited = 0; calls === quiet && waited < 5000; waited += 10) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    watching.close();
    process.stdout.write(JSON.stringify({ reads: counted, calls: quiet, heard: calls > quiet }));
  `;
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--input-type=module', '-e', script],
      { timeout: 20_000 },
      (error, stdout, stderr) => {
        if (error) reject(new Error(`${error.message}\n${stderr}`));
        else resolve(JSON.parse(stdout));
      },
    );
  });
}
