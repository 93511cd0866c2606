import { accessSync, constants, lstatSync, readlinkSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runProcess } from './run-process.js';
import type { Sandbox, SandboxRunRequest, SandboxRunResult } from './sandbox.js';
import { SandboxUnavailableError } from './sandbox-unavailable-error.js';
import { ShellToolOptionsError } from './shell-tool-options-error.js';

/** Options of {@link BubblewrapSandbox}. */
export interface BubblewrapSandboxOptions {
  /** Absolute path of `bwrap`. Default: the first `bwrap` in `searchPath`. */
  readonly bwrapPath?: string;
  /** Folders searched for `bwrap`. Default `/usr/bin:/bin:/usr/local/bin:/usr/sbin`. */
  readonly searchPath?: string;
  /**
   * Host paths bound read-only at the same place (missing ones are skipped; top-level symlinks
   * such as Debian's `/bin -> usr/bin` are recreated as symlinks). Default:
   * `/usr /bin /sbin /lib /lib32 /lib64 /etc/alternatives /etc/ld.so.cache /etc/ld.so.conf
   * /etc/ld.so.conf.d /etc/localtime`.
   */
  readonly readOnlyPaths?: readonly string[];
}

/** Default read-only system binds of {@link BubblewrapSandbox}. */
export const DEFAULT_BUBBLEWRAP_READ_ONLY_PATHS: readonly string[] = Object.freeze([
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/etc/alternatives',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/localtime',
]);

function findExecutable(name: string, searchPath: string): string | undefined {
  for (const folder of searchPath.split(':')) {
    if (!folder.startsWith('/')) continue;
    const candidate = `${folder.replace(/\/+$/, '')}/${name}`;
    try {
      if (statSync(candidate).isFile()) {
        accessSync(candidate, constants.X_OK);
        return candidate;
      }
    } catch {
      // Not here.
    }
  }
  return undefined;
}

/**
 * Real isolation on Linux with bubblewrap, called directly with argv (no shell): new user, PID,
 * IPC, UTS, cgroup and network namespaces (`--unshare-all`: no network at all, not even
 * loopback of the host), `--clearenv` plus only the given variables, `--die-with-parent`,
 * `--new-session`, `--cap-drop ALL`, read-only system binds, the workspace bound read-write,
 * a private `/tmp`, a minimal `/dev` and a new `/proc`. Nothing else of the host filesystem is
 * visible. Construction fails with {@link SandboxUnavailableError} when `bwrap` is missing.
 */
export class BubblewrapSandbox implements Sandbox {
  readonly name: string = 'bubblewrap';
  readonly #bwrap: string;
  readonly #readOnlyPaths: readonly string[];

  /**
   * Finds `bwrap` and checks the options. Throws {@link ShellToolOptionsError} for an invalid
   * option and {@link SandboxUnavailableError} off Linux or when `bwrap` is not found.
   */
  constructor(options: BubblewrapSandboxOptions = {}) {
    if (typeof options !== 'object' || options === null) {
      throw new ShellToolOptionsError('BubblewrapSandbox options must be an object.');
    }
    if (process.platform !== 'linux') {
      throw new SandboxUnavailableError('BubblewrapSandbox needs Linux.');
    }
    const {
      bwrapPath,
      searchPath = '/usr/bin:/bin:/usr/local/bin:/usr/sbin',
      readOnlyPaths,
    } = options;
    if (bwrapPath !== undefined && (typeof bwrapPath !== 'string' || !bwrapPath.startsWith('/'))) {
      throw new ShellToolOptionsError('bwrapPath must be an absolute path.');
    }
    if (typeof searchPath !== 'string') {
      throw new ShellToolOptionsError('searchPath must be a string.');
    }
    if (
      readOnlyPaths !== undefined &&
      (!Array.isArray(readOnlyPaths) ||
        readOnlyPaths.some(
          (path) => typeof path !== 'string' || !path.startsWith('/') || path.includes('\0'),
        ))
    ) {
      throw new ShellToolOptionsError('readOnlyPaths must be absolute paths.');
    }
    let found: string | undefined;
    if (bwrapPath === undefined) {
      found = findExecutable('bwrap', searchPath);
    } else {
      try {
        accessSync(bwrapPath, constants.X_OK);
        found = statSync(bwrapPath).isFile() ? bwrapPath : undefined;
      } catch {
        found = undefined;
      }
    }
    if (found === undefined) {
      throw new SandboxUnavailableError(
        'bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: apt-get install bubblewrap) or use LocalProcessSandbox.',
      );
    }
    this.#bwrap = found;
    this.#readOnlyPaths = Object.freeze([...(readOnlyPaths ?? DEFAULT_BUBBLEWRAP_READ_ONLY_PATHS)]);
  }

  /** The `bwrap` executable in use. */
  get bwrapPath(): string {
    return this.#bwrap;
  }

  /** The full `bwrap` argv for a request (exposed for audit and tests). */
  argv(request: SandboxRunRequest): readonly string[] {
    const argv: string[] = [
      '--unshare-all',
      '--die-with-parent',
      '--new-session',
      '--clearenv',
      '--cap-drop',
      'ALL',
    ];
    for (const path of this.#readOnlyPaths) {
      let entry: ReturnType<typeof lstatSync>;
      try {
        entry = lstatSync(path);
      } catch {
        continue;
      }
      if (entry.isSymbolicLink()) argv.push('--symlink', readlinkSync(path), path);
      else argv.push('--ro-bind', path, path);
    }
    argv.push('--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp');
    argv.push('--bind', request.workspace, request.workspace, '--chdir', request.cwd);
    for (const [key, value] of Object.entries(request.env)) argv.push('--setenv', key, value);
    argv.push('--', request.program, ...request.args);
    return argv;
  }

  /**
   * Runs `true` inside a sandbox built like every other one; rejects with
   * {@link SandboxUnavailableError} when bubblewrap cannot create it here (for example when
   * user namespaces are disabled).
   */
  async verify(): Promise<void> {
    const program = findExecutable('true', '/usr/bin:/bin');
    if (program === undefined)
      throw new SandboxUnavailableError('`true` was not found to check the sandbox.');
    const workspace = await mkdtemp(join(tmpdir(), 'toolfence-bwrap-check-'));
    try {
      const result = await this.run({
        program,
        args: [],
        cwd: workspace,
        env: {},
        workspace,
        timeoutMs: 10_000,
        maxOutputBytes: 4096,
      });
      if (result.exitCode !== 0) {
        throw new SandboxUnavailableError(
          'bubblewrap could not create a sandbox here (are user namespaces allowed?).',
          { details: { exitCode: result.exitCode, signal: result.signal } },
        );
      }
    } finally {
      await rm(workspace, { recursive: true, force: true });
    }
  }

  /** Runs the request inside a fresh bubblewrap sandbox (see {@link BubblewrapSandbox.argv}). */
  run(request: SandboxRunRequest): Promise<SandboxRunResult> {
    return runProcess(this.#bwrap, this.argv(request), {
      cwd: request.cwd,
      env: {},
      timeoutMs: request.timeoutMs,
      maxOutputBytes: request.maxOutputBytes,
      ...(request.signal === undefined ? {} : { signal: request.signal }),
    });
  }
}
