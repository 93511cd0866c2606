/** One process a sandbox runs: argv only, never a shell. */
export interface SandboxRunRequest {
  /** Absolute path of the program (resolved by the caller). */
  readonly program: string;
  /** Arguments passed to `program` as-is (argv, no shell parsing or expansion). */
  readonly args: readonly string[];
  /** Absolute working folder (inside the workspace). */
  readonly cwd: string;
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
}

/** Runs programs for `ShellTool`. */
export interface Sandbox {
  /** Short name for logs and results (`local`, `bubblewrap`). */
  readonly name: string;
  /** Runs one process as `request` describes; resolves with its outcome, rejects if it cannot start. */
  run(request: SandboxRunRequest): Promise<SandboxRunResult>;
  /** Checks that the sandbox works here; `ShellTool.start()` calls it. Rejects when it does not. */
  verify?(): Promise<void>;
}
