import { spawn } from 'node:child_process';
import type { SandboxRunResult } from './sandbox.js';

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
 * piped and counted against one byte budget. On timeout, budget, abort, or once the main process
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
    try {
      child = spawn(file, [...args], {
        cwd: options.cwd,
        env: { ...options.env },
        shell: false,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
        windowsHide: true,
        ...(options.uid === undefined ? {} : { uid: options.uid }),
        ...(options.gid === undefined ? {} : { gid: options.gid }),
      });
    } catch (error) {
      reject(error);
      return;
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
