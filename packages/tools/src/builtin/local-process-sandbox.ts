import { accessSync, constants, statSync } from 'node:fs';
import { checkOptionKeys } from '../registry/option-keys.js';
import {
  type AppliedResourceLimits,
  classifyLimit,
  DEFAULT_PROCESS_RESOURCE_LIMITS,
  type ProcessResourceLimits,
  prlimitArguments,
  resolveProcessLimits,
} from './resource-limits.js';
import { runProcess } from './run-process.js';
import type { Sandbox, SandboxRunRequest, SandboxRunResult } from './sandbox.js';
import { SandboxUnavailableError } from './sandbox-unavailable-error.js';
import { ShellToolOptionsError } from './shell-tool-options-error.js';

/** Options of {@link LocalProcessSandbox}. */
export interface LocalProcessSandboxOptions extends ProcessResourceLimits {
  /** Absolute path of util-linux `prlimit`. Default: the first `prlimit` in `/usr/bin:/bin:/usr/sbin:/sbin`. */
  readonly prlimitPath?: string;
}

const optionError = (message: string, option: string): Error =>
  new ShellToolOptionsError(message, { details: { option } });

const OPTION_KEYS: readonly string[] = Object.freeze([
  'prlimitPath',
  'maxMemoryBytes',
  'maxFileSizeBytes',
  'maxOpenFiles',
]);

const NO_LIMITS: AppliedResourceLimits = Object.freeze({
  maxMemoryBytes: null,
  maxFileSizeBytes: null,
  maxOpenFiles: null,
});

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/**
 * Runs the program directly as a child process: argv only, an explicit environment, a working
 * folder, a time limit and an output budget, a process-group kill and, on Linux, per-process
 * memory, file-size and descriptor limits through `prlimit`. It is NOT isolation: the program
 * can read and write anything the agent's user can, and use the network. It applies no
 * process-count limit (`RLIMIT_NPROC` would count every process of the agent's user, and
 * exempts root) and has no private `/tmp`.
 */
export class LocalProcessSandbox implements Sandbox {
  readonly name: string = 'local';
  readonly #prlimit: string | undefined;
  readonly #limits: AppliedResourceLimits;

  /**
   * Checks the options. On Linux the limits default to {@link DEFAULT_PROCESS_RESOURCE_LIMITS}
   * and need `prlimit` (else {@link SandboxUnavailableError}); elsewhere they default to `null`
   * and setting one throws {@link SandboxUnavailableError}. Throws {@link ShellToolOptionsError}
   * for an invalid or unknown option.
   */
  constructor(options: LocalProcessSandboxOptions = {}) {
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw new ShellToolOptionsError('LocalProcessSandbox options must be an object.');
    }
    checkOptionKeys(options, OPTION_KEYS, 'LocalProcessSandbox', optionError);
    const { prlimitPath } = options;
    if (
      prlimitPath !== undefined &&
      (typeof prlimitPath !== 'string' || !prlimitPath.startsWith('/'))
    ) {
      throw new ShellToolOptionsError('prlimitPath must be an absolute path.', {
        details: { option: 'prlimitPath' },
      });
    }
    const linux = process.platform === 'linux';
    this.#limits = resolveProcessLimits(
      options,
      linux ? DEFAULT_PROCESS_RESOURCE_LIMITS : NO_LIMITS,
    );
    if (prlimitArguments(this.#limits).length === 0) {
      this.#prlimit = undefined;
      return;
    }
    const candidates =
      prlimitPath === undefined
        ? ['/usr/bin/prlimit', '/bin/prlimit', '/usr/sbin/prlimit', '/sbin/prlimit']
        : [prlimitPath];
    const found = linux ? candidates.find(executable) : undefined;
    if (found === undefined) {
      throw new SandboxUnavailableError(
        linux
          ? 'prlimit (util-linux) was not found; install util-linux, or set maxMemoryBytes, maxFileSizeBytes and maxOpenFiles to null to run without limits.'
          : 'LocalProcessSandbox applies resource limits on Linux only; leave maxMemoryBytes, maxFileSizeBytes and maxOpenFiles unset here.',
      );
    }
    this.#prlimit = found;
  }

  /** The per-process limits applied (`null`: the host's own). */
  get limits(): AppliedResourceLimits {
    return this.#limits;
  }

  /**
   * Runs the program as a direct child in its own process group, with only `request.env`, in
   * `request.cwdHandle` when given (the folder `ShellTool` opened), else in `request.cwd`.
   */
  async run(request: SandboxRunRequest): Promise<SandboxRunResult> {
    const options = {
      cwd: request.cwdHandle ?? request.cwd,
      env: request.env,
      timeoutMs: request.timeoutMs,
      maxOutputBytes: request.maxOutputBytes,
      ...(request.signal === undefined ? {} : { signal: request.signal }),
    };
    if (this.#prlimit === undefined) return runProcess(request.program, request.args, options);
    const result = await runProcess(
      this.#prlimit,
      [...prlimitArguments(this.#limits), '--', request.program, ...request.args],
      options,
    );
    if (result.exitCode === 0 && !result.timedOut) return result;
    const limit = classifyLimit(result.signal, result.stderr, result.exitCode);
    return limit === undefined ? result : { ...result, limit };
  }
}
