import { runProcess } from './run-process.js';
import type { Sandbox, SandboxRunRequest, SandboxRunResult } from './sandbox.js';

/**
 * Runs the program directly as a child process: argv only, an explicit environment, a working
 * folder, a time limit and an output budget, and a process-group kill. It is NOT isolation: the
 * program can read and write anything the agent's user can, and use the network.
 */
export class LocalProcessSandbox implements Sandbox {
  readonly name: string = 'local';

  /** Runs the program as a direct child in its own process group, with only `request.env`. */
  run(request: SandboxRunRequest): Promise<SandboxRunResult> {
    return runProcess(request.program, request.args, {
      cwd: request.cwd,
      env: request.env,
      timeoutMs: request.timeoutMs,
      maxOutputBytes: request.maxOutputBytes,
      ...(request.signal === undefined ? {} : { signal: request.signal }),
    });
  }
}
