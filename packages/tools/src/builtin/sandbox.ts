import type { SandboxLimit } from './resource-limits.js';

/** One process a sandbox runs: argv only, never a shell. */
export interface SandboxRunRequest {
  /** Absolute path of the program (resolved by the caller). */
  readonly program: string;
  /** Arguments passed to `program` as-is (argv, no shell parsing or expansion). */
  readonly args: readonly string[];
  /** Absolute working folder (inside the workspace), by name. */
  readonly cwd: string;
  /**
   * The same folder named by the host's descriptor (`/proc/<pid>/fd/<n>`, Linux), opened by
   * `ShellTool` through the workspace's descriptors and held open until `run` settles. A sandbox
   * that starts the process in the host's own mount namespace must start it here, not in `cwd`:
   * a folder on `cwd`'s path swapped for a symlink after the check would otherwise move the
   * process outside. Absent where `/proc` is missing.
   */
  readonly cwdHandle?: string;
  /** The complete environment (nothing is inherited). */
  readonly env: Readonly<Record<string, string>>;
  /** The workspace folder (bound read-write by isolating sandboxes). */
  readonly workspace: string;
  /** Wall-clock limit of the run in milliseconds; on expiry the process group is killed. */
  readonly timeoutMs: number;
  /** Shared byte budget of stdout and stderr together. */
  readonly maxOutputBytes: number;
  /** Aborts the run: the process group is killed when it fires. */
  readonly signal?: AbortSignal;
}

/** What a sandboxed run produced. */
export interface SandboxRunResult {
  /** Exit code, or `null` when a signal ended the process. */
  readonly exitCode: number | null;
  /** The signal that ended the process, or `null`. */
  readonly signal: string | null;
  /** Standard output decoded as UTF-8, cut at the output budget. */
  readonly stdout: string;
  /** Standard error decoded as UTF-8, cut at the output budget. */
  readonly stderr: string;
  /** The time limit was reached and the process group was killed. */
  readonly timedOut: boolean;
  /** The output budget was reached, the output cut there and the process group killed. */
  readonly truncated: boolean;
  /**
   * The resource limit the run most likely ran into, when the sandbox applies limits and the run
   * failed: read from the exit signal (`SIGXFSZ`) and the C-locale error texts in stderr. A hint
   * for the caller; the kernel enforces the limit either way.
   */
  readonly limit?: SandboxLimit;
}

/** What `ShellTool.start()` tells {@link Sandbox.verify}. */
export interface SandboxVerifyRequest {
  /** The workspace the tool will run commands in (real path). */
  readonly workspace: string;
}

/** Runs programs for `ShellTool`. */
export interface Sandbox {
  /** Short name for logs and results (`local`, `bubblewrap`). */
  readonly name: string;
  /** Runs one process as `request` describes; resolves with its outcome, rejects if it cannot start. */
  run(request: SandboxRunRequest): Promise<SandboxRunResult>;
  /**
   * Checks that the sandbox works here (and, given a workspace, that it can run there);
   * `ShellTool.start()` calls it with its workspace. Rejects when it does not.
   */
  verify?(request?: SandboxVerifyRequest): Promise<void>;
}
