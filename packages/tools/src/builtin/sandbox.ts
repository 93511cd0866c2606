/** One process a sandbox runs: argv only, never a shell. */
export interface SandboxRunRequest {
  /** Absolute path of the program (resolved by the caller). */
  readonly program: string;
  readonly args: readonly string[];
  /** Absolute working folder (inside the workspace). */
  readonly cwd: string;
  /** The complete environment (nothing is inherited). */
  readonly env: Readonly<Record<string, string>>;
  /** The workspace folder (bound read-write by isolating sandboxes). */
  readonly workspace: string;
  readonly timeoutMs: number;
  /** Shared byte budget of stdout and stderr together. */
  readonly maxOutputBytes: number;
  readonly signal?: AbortSignal;
}

/** What a sandboxed run produced. */
export interface SandboxRunResult {
  /** Exit code, or `null` when a signal ended the process. */
  readonly exitCode: number | null;
  /** The signal that ended the process, or `null`. */
  readonly signal: string | null;
  readonly stdout: string;
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
  run(request: SandboxRunRequest): Promise<SandboxRunResult>;
  /** Checks that the sandbox works here; `ShellTool.start()` calls it. Rejects when it does not. */
  verify?(): Promise<void>;
}
