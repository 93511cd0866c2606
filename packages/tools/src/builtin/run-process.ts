import { type StdioOptions, spawn } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import type { SandboxRunResult } from './sandbox.js';

/** `O_CLOEXEC` in the octal `flags` of `/proc/self/fdinfo/<fd>` (Linux). */
const O_CLOEXEC = 0o2000000;

/**
 * The descriptors above stderr this process holds without close-on-exec, which every child
 * would inherit: Node opens its own with close-on-exec, so these came from the agent's parent
 * (a supervisor, a test harness) or a native addon. Read from `/proc/self/fdinfo`; none where
 * `/proc` is missing.
 */
function inheritableDescriptors(): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc/self/fd');
  } catch {
    return [];
  }
  const found: number[] = [];
  const limit = softOpenFilesLimit();
  for (const entry of entries) {
    const fd = Number(entry);
    // libuv moves descriptors above the highest one it sets up, which must stay below the limit.
    if (!Number.isSafeInteger(fd) || fd <= 2 || fd + 1 >= limit) continue;
    try {
      const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'));
      if (flags?.[1] !== undefined && (Number.parseInt(flags[1], 8) & O_CLOEXEC) === 0) {
        found.push(fd);
      }
    } catch {
      // Closed meanwhile (the listing's own descriptor, for one).
    }
  }
  return found;
}

/**
 * The soft limit on this process's descriptors (`Max open files` in `/proc/self/limits`), or
 * `Infinity` where unknown. The child is set up with descriptors below it only: a descriptor
 * at or above it (inherited before the limit was lowered) cannot be covered, and would make the
 * spawn fail (`EINVAL`) if it were tried.
 */
function softOpenFilesLimit(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((candidate) => candidate.startsWith('Max open files'));
    const soft = line?.slice(26).trim().split(/\s+/)[0];
    return soft !== undefined && /^[0-9]+$/.test(soft) ? Number(soft) : Number.POSITIVE_INFINITY;
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/**
 * The child's stdio: stdin closed, stdout and stderr piped, and `/dev/null` (`devNull`) over
 * every inherited descriptor, so the program cannot reach what they name (Node does not close
 * descriptors without close-on-exec when it spawns, and bubblewrap passes them on).
 */
function stdioFor(inherited: readonly number[], devNull: number | undefined): StdioOptions {
  const stdio: StdioOptions = ['ignore', 'pipe', 'pipe'];
  if (devNull === undefined) return stdio;
  const highest = Math.max(...inherited);
  for (let fd = 3; fd <= highest; fd += 1) {
    stdio.push(inherited.includes(fd) ? devNull : 'ignore');
  }
  return stdio;
}

/** How {@link runProcess} starts and bounds a process. */
export interface RunProcessOptions {
  readonly cwd: string;
  readonly env: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly maxOutputBytes: number;
  readonly signal?: AbortSignal;
  /** Host user id the process runs as (the caller must be allowed to switch to it). */
  readonly uid?: number;
  /** Host group id the process runs as; supplementary groups are dropped with it. */
  readonly gid?: number;
}

function killGroup(pid: number | undefined): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    // The group is already gone.
  }
}

/**
 * Spawns `file` with `args` (no shell) in its own process group, stdin closed, stdout and stderr
 * piped and counted against one byte budget, and every descriptor the agent inherited without
 * close-on-exec replaced by `/dev/null` in the child. On timeout, budget, abort, or once the main process
 * has exited, the whole group is killed with SIGKILL (grandchildren too, unless they left the
 * group with `setsid`) and the pipes are destroyed.
 */
export function runProcess(
  file: string,
  args: readonly string[],
  options: RunProcessOptions,
): Promise<SandboxRunResult> {
  return new Promise((resolve, reject) => {
    let child: ReturnType<typeof spawn>;
    let devNull: number | undefined;
    try {
      const inherited = inheritableDescriptors();
      if (inherited.length > 0) devNull = openSync('/dev/null', 'r');
      child = spawn(file, [...args], {
        cwd: options.cwd,
        env: { ...options.env },
        shell: false,
        detached: true,
        stdio: stdioFor(inherited, devNull),
        windowsHide: true,
        ...(options.uid === undefined ? {} : { uid: options.uid }),
        ...(options.gid === undefined ? {} : { gid: options.gid }),
      });
    } catch (error) {
      reject(error);
      return;
    } finally {
      // The child has its own copies once spawn returns.
      if (devNull !== undefined) closeSync(devNull);
    }
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    let used = 0;
    let truncated = false;
    let timedOut = false;
    let exitCode: number | null = null;
    let exitSignal: string | null = null;
    let settled = false;
    let closeTimer: ReturnType<typeof setTimeout> | undefined;

    const stop = (): void => {
      killGroup(child.pid);
      child.stdout?.destroy();
      child.stderr?.destroy();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, options.timeoutMs);
    const onAbort = (): void => stop();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.signal?.aborted) stop();

    const collect =
      (target: Buffer[]) =>
      (chunk: Buffer): void => {
        if (truncated) return;
        const room = options.maxOutputBytes - used;
        if (chunk.length > room) {
          if (room > 0) target.push(chunk.subarray(0, room));
          used = options.maxOutputBytes;
          truncated = true;
          stop();
          return;
        }
        used += chunk.length;
        target.push(chunk);
      };
    child.stdout?.on('data', collect(stdout));
    child.stderr?.on('data', collect(stderr));

    const finish = (): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (closeTimer !== undefined) clearTimeout(closeTimer);
      options.signal?.removeEventListener('abort', onAbort);
      resolve({
        exitCode,
        signal: exitSignal,
        stdout: Buffer.concat(stdout).toString('utf8'),
        stderr: Buffer.concat(stderr).toString('utf8'),
        timedOut,
        truncated,
      });
    };
    child.on('error', (error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
      reject(error);
    });
    child.on('exit', (code, signal) => {
      exitCode = code;
      exitSignal = signal;
      // Background processes the command left behind die with it; the pipes then close.
      killGroup(child.pid);
      closeTimer = setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
        finish();
      }, 2_000);
    });
    child.on('close', (code, signal) => {
      if (exitCode === null && exitSignal === null) {
        exitCode = code;
        exitSignal = signal;
      }
      finish();
    });
  });
}
