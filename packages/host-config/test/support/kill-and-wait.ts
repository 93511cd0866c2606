// Teardown of a child process before the folder it writes into is removed.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';

/** How long {@link killGroupAndWait} waits for the rest of a process group to go. */
const GROUP_GONE_MS = 5_000;

/**
 * Kills a process that still runs (SIGKILL) and resolves once it exited: removing a folder it
 * writes into sooner races with it (ENOTEMPTY, or a file written after the removal).
 */
export async function killAndWait(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

/**
 * For a child spawned `detached` (its own process group, e.g. a wrapper that starts a native
 * binary): kills the whole group, waits for the child's exit, then until no process of the
 * group is left (bounded by 5 s).
 */
export async function killGroupAndWait(child: ChildProcess): Promise<void> {
  const group = child.pid;
  if (group === undefined) return;
  const exited =
    child.exitCode !== null || child.signalCode !== null ? undefined : once(child, 'exit');
  try {
    process.kill(-group, 'SIGKILL');
  } catch {
    // The group is gone already.
  }
  await exited;
  const deadline = Date.now() + GROUP_GONE_MS;
  while (Date.now() < deadline) {
    try {
      process.kill(-group, 0);
    } catch {
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
