// Waiting helpers for tests of process lifetimes: a condition polled until it holds (bounded), and
// the processes of a process group still running, read from /proc (Linux).
import { readdir, readFile } from 'node:fs/promises';

/** Polls `condition` every 10 ms until it holds; throws after `timeoutMs`. */
export async function until(
  condition: () => boolean,
  what: string,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Processes of process group `group` still running (zombies do not count), from /proc. */
export async function livingInGroup(group: number): Promise<number> {
  let living = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === group && fields[0] !== 'Z') living++;
  }
  return living;
}

/** Waits (bounded) until no process of `group` runs; returns how many still do. */
export async function groupEnds(group: number, timeoutMs = 20_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let living = await livingInGroup(group);
  while (living > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    living = await livingInGroup(group);
  }
  return living;
}
