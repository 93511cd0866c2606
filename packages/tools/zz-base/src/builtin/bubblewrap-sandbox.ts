import { accessSync, chmodSync, constants, lstatSync, readlinkSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkOptionKeys } from '../registry/option-keys.js';
import {
  type AppliedResourceLimits,
  clampToHost,
  classifyLimit,
  DEFAULT_PROCESS_RESOURCE_LIMITS,
  hostHardLimits,
  limitOption,
  type ProcessResourceLimits,
  prlimitArguments,
  resolveProcessLimits,
} from './resource-limits.js';
import { runProcess } from './run-process.js';
import type {
  Sandbox,
  SandboxRunRequest,
  SandboxRunResult,
  SandboxVerifyRequest,
} from './sandbox.js';
import { SandboxUnavailableError } from './sandbox-unavailable-error.js';
import { ShellToolOptionsError } from './shell-tool-options-error.js';

/** A host user and group id. */
export interface SandboxUser {
  /** Host user id. */
  readonly uid: number;
  /** Host group id. */
  readonly gid: number;
}

/** Options of {@link BubblewrapSandbox}. */
export interface BubblewrapSandboxOptions extends ProcessResourceLimits {
  /** Absolute path of `bwrap`. Default: the first `bwrap` in `searchPath`. */
  readonly bwrapPath?: string;
  /** Absolute path of util-linux `prlimit`. Default: the first `prlimit` in `searchPath`. */
  readonly prlimitPath?: string;
  /** Folders searched for `bwrap` and `prlimit`. Default `/usr/bin:/bin:/usr/local/bin:/usr/sbin`. */
  readonly searchPath?: string;
  /**
   * Host paths bound read-only at the same place (missing ones are skipped; top-level symlinks
   * such as Debian's `/bin -> usr/bin` are recreated as symlinks). Default:
   * `/usr /bin /sbin /lib /lib32 /lib64 /etc/alternatives /etc/ld.so.cache /etc/ld.so.conf
   * /etc/ld.so.conf.d /etc/localtime`.
   */
  readonly readOnlyPaths?: readonly string[];
  /** Size in bytes of each private tmpfs (`/tmp` and `/dev/shm`), bwrap's `--size`. Default 67108864 (64 MiB). */
  readonly tmpSizeBytes?: number;
  /**
   * Processes and threads the sandbox may hold at once (`RLIMIT_NPROC`, counted in the
   * sandbox's own user namespace, so other processes of the same user do not count). Default
   * 128. `null` applies none. The kernel exempts host uid 0, so a root caller runs the sandbox
   * as an unprivileged `user`.
   */
  readonly maxProcesses?: number | null;
  /**
   * Host user the sandbox runs as. Default: `{ uid: 65534, gid: 65534 }` (`nobody`) when the
   * caller is root, else `'caller'` (the caller's own ids; only root may choose another user).
   * The workspace must be reachable by this user, and writable by it for writes.
   */
  readonly user?: SandboxUser | 'caller';
}

/** Defaults of {@link BubblewrapSandbox}'s limits. */
export const DEFAULT_BUBBLEWRAP_LIMITS: {
  /** `67108864` (64 MiB) for each of `/tmp` and `/dev/shm`. */
  readonly tmpSizeBytes: number;
  /** `128` processes and threads. */
  readonly maxProcesses: number;
  /** `2147483648` (2 GiB) address space per process. */
  readonly maxMemoryBytes: number;
  /** `134217728` (128 MiB) per file written. */
  readonly maxFileSizeBytes: number;
  /** `1024` descriptors per process. */
  readonly maxOpenFiles: number;
  /** `{ uid: 65534, gid: 65534 }`, used when the caller is root. */
  readonly rootCallerUser: SandboxUser;
} = Object.freeze({
  tmpSizeBytes: 67_108_864,
  maxProcesses: 128,
  ...DEFAULT_PROCESS_RESOURCE_LIMITS,
  rootCallerUser: Object.freeze({ uid: 65_534, gid: 65_534 }),
});

const optionError = (message: string, option: string): Error =>
  new ShellToolOptionsError(message, { details: { option } });

const OPTION_KEYS: readonly string[] = Object.freeze([
  'bwrapPath',
  'prlimitPath',
  'searchPath',
  'readOnlyPaths',
  'tmpSizeBytes',
  'maxProcesses',
  'maxMemoryBytes',
  'maxFileSizeBytes',
  'maxOpenFiles',
  'user',
]);

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

function isId(value: unknown): value is number {
  return (
    typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value < 2 ** 32 - 1
  );
}

function checkExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function callerIds(): SandboxUser | undefined {
  const uid = process.getuid?.();
  const gid = process.getgid?.();
  return uid === undefined || gid === undefined ? undefined : { uid, gid };
}

/**
 * Real isolation on Linux with bubblewrap, called directly with argv (no shell): new user, PID,
 * IPC, UTS, cgroup and network namespaces (`--unshare-all`: no network at all, not even
 * loopback of the host), `--clearenv` plus only the given variables, `--die-with-parent`,
 * `--new-session`, `--cap-drop ALL`, read-only system binds, the workspace bound read-write,
 * a private `/tmp` and `/dev/shm` of `tmpSizeBytes` each, a read-only minimal `/dev` and a new
 * `/proc`. Nothing else of the host filesystem is visible. The program runs under `prlimit`
 * with the process, memory, file-size and descriptor limits, as an unprivileged user when the
 * caller is root. Construction fails with {@link SandboxUnavailableError} when `bwrap` (or,
 * with limits, `prlimit`) is missing.
 */
export class BubblewrapSandbox implements Sandbox {
  readonly name: string = 'bubblewrap';
  readonly #bwrap: string;
  readonly #prlimit: string | undefined;
  readonly #readOnlyPaths: readonly string[];
  readonly #tmpSizeBytes: number;
  readonly #maxProcesses: number | null;
  readonly #limits: AppliedResourceLimits;
  readonly #user: SandboxUser | undefined;

  /**
   * Finds `bwrap` (and `prlimit`) and checks the options. Throws {@link ShellToolOptionsError}
   * for an invalid or unknown option and {@link SandboxUnavailableError} off Linux or when a
   * program is not found.
   */
  constructor(options: BubblewrapSandboxOptions = {}) {
    if (typeof options !== 'object' || options === null || Array.isArray(options)) {
      throw new ShellToolOptionsError('BubblewrapSandbox options must be an object.');
    }
    checkOptionKeys(options, OPTION_KEYS, 'BubblewrapSandbox', optionError);
    if (process.platform !== 'linux') {
      throw new SandboxUnavailableError('BubblewrapSandbox needs Linux.');
    }
    const {
      bwrapPath,
      prlimitPath,
      searchPath = '/usr/bin:/bin:/usr/local/bin:/usr/sbin',
      readOnlyPaths,
    } = options;
    for (const [name, value] of [
      ['bwrapPath', bwrapPath],
      ['prlimitPath', prlimitPath],
    ] as const) {
      if (value !== undefined && (typeof value !== 'string' || !value.startsWith('/'))) {
        throw new ShellToolOptionsError(`${name} must be an absolute path.`, {
          details: { option: name },
        });
      }
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
    this.#readOnlyPaths = Object.freeze([...(readOnlyPaths ?? DEFAULT_BUBBLEWRAP_READ_ONLY_PATHS)]);
    const tmpSizeBytes: unknown =
      options.tmpSizeBytes === undefined
        ? DEFAULT_BUBBLEWRAP_LIMITS.tmpSizeBytes
        : options.tmpSizeBytes;
    if (
      typeof tmpSizeBytes !== 'number' ||
      !Number.isSafeInteger(tmpSizeBytes) ||
      tmpSizeBytes < 1_048_576
    ) {
      throw new ShellToolOptionsError(
        'tmpSizeBytes must be an integer number of bytes, 1 MiB or more.',
        {
          details: { option: 'tmpSizeBytes' },
        },
      );
    }
    this.#tmpSizeBytes = tmpSizeBytes;
    this.#maxProcesses = clampToHost(
      limitOption(options.maxProcesses, 'maxProcesses', DEFAULT_BUBBLEWRAP_LIMITS.maxProcesses, 4),
      hostHardLimits().processes,
    );
    this.#limits = resolveProcessLimits(options, DEFAULT_PROCESS_RESOURCE_LIMITS);
    this.#user = this.#chooseUser(options.user);

    let found: string | undefined;
    if (bwrapPath === undefined) found = findExecutable('bwrap', searchPath);
    else found = checkExecutable(bwrapPath) ? bwrapPath : undefined;
    if (found === undefined) {
      throw new SandboxUnavailableError(
        'bubblewrap (bwrap) is not installed; install it (Debian/Ubuntu: apt-get install bubblewrap) or use LocalProcessSandbox.',
      );
    }
    this.#bwrap = found;
    const limited = this.#maxProcesses !== null || prlimitArguments(this.#limits).length > 0;
    if (limited) {
      const prlimit =
        prlimitPath === undefined
          ? findExecutable('prlimit', searchPath)
          : checkExecutable(prlimitPath)
            ? prlimitPath
            : undefined;
      if (prlimit === undefined) {
        throw new SandboxUnavailableError(
          'prlimit (util-linux) was not found; install util-linux, or set maxProcesses, maxMemoryBytes, maxFileSizeBytes and maxOpenFiles to null to run without those limits.',
        );
      }
      if (
        !this.#readOnlyPaths.some(
          (path) => prlimit === path || prlimit.startsWith(`${path.replace(/\/+$/, '')}/`),
        )
      ) {
        throw new ShellToolOptionsError(
          'prlimit must lie inside one of readOnlyPaths so the sandbox can run it.',
          { details: { option: 'readOnlyPaths' } },
        );
      }
      this.#prlimit = prlimit;
    }
  }

  #chooseUser(user: unknown): SandboxUser | undefined {
    const caller = callerIds();
    const root = caller?.uid === 0;
    if (user === undefined) {
      return root ? DEFAULT_BUBBLEWRAP_LIMITS.rootCallerUser : undefined;
    }
    if (user === 'caller') {
      if (root && this.#maxProcesses !== null) {
        throw new ShellToolOptionsError(
          "maxProcesses cannot hold for a root caller with user 'caller' (the kernel exempts uid 0): set user to an unprivileged { uid, gid }, or maxProcesses to null to run without a process limit.",
          { details: { option: 'user' } },
        );
      }
      return undefined;
    }
    if (typeof user !== 'object' || user === null) {
      throw new ShellToolOptionsError("user must be 'caller' or { uid, gid }.", {
        details: { option: 'user' },
      });
    }
    const { uid, gid, ...rest } = user as Record<string, unknown>;
    if (!isId(uid) || !isId(gid) || Object.keys(rest).length > 0) {
      throw new ShellToolOptionsError("user must be 'caller' or { uid, gid } with integer ids.", {
        details: { option: 'user' },
      });
    }
    if (uid === 0 && this.#maxProcesses !== null) {
      throw new ShellToolOptionsError(
        'maxProcesses cannot hold for uid 0 (the kernel exempts it): choose an unprivileged uid, or set maxProcesses to null.',
        { details: { option: 'user' } },
      );
    }
    if (!root && (uid !== caller?.uid || gid !== caller?.gid)) {
      throw new ShellToolOptionsError(
        'Only a root caller can run the sandbox as another user; omit user.',
        { details: { option: 'user' } },
      );
    }
    return root ? Object.freeze({ uid, gid }) : undefined;
  }

  /** The `bwrap` executable in use. */
  get bwrapPath(): string {
    return this.#bwrap;
  }

  /** The host user the sandbox runs as, or `undefined` for the caller's own. */
  get user(): SandboxUser | undefined {
    return this.#user;
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
    const size = String(this.#tmpSizeBytes);
    // /dev is a tmpfs too: bound its shm folder and make the rest read-only, or it is an
    // unbounded place to fill memory.
    argv.push('--dev', '/dev', '--size', size, '--tmpfs', '/dev/shm', '--remount-ro', '/dev');
    argv.push('--proc', '/proc', '--size', size, '--tmpfs', '/tmp');
    argv.push('--bind', request.workspace, request.workspace, '--chdir', request.cwd);
    for (const [key, value] of Object.entries(request.env)) argv.push('--setenv', key, value);
    argv.push('--');
    if (this.#prlimit !== undefined) {
      argv.push(this.#prlimit, ...prlimitArguments(this.#limits, this.#maxProcesses), '--');
    }
    argv.push(request.program, ...request.args);
    return argv;
  }

  /**
   * Runs `true` inside a sandbox built like every other one (in `request.workspace` when given);
   * rejects with {@link SandboxUnavailableError} when bubblewrap cannot create it here (for
   * example when user namespaces are disabled, or the sandbox user cannot reach the workspace).
   */
  async verify(request?: SandboxVerifyRequest): Promise<void> {
    const program = findExecutable('true', '/usr/bin:/bin');
    if (program === undefined)
      throw new SandboxUnavailableError('`true` was not found to check the sandbox.');
    const owned = request === undefined;
    const workspace = owned
      ? await mkdtemp(join(tmpdir(), 'toolfence-bwrap-check-'))
      : request.workspace;
    try {
      // mkdtemp makes the folder 0700: let an unprivileged sandbox user enter it.
      if (owned && this.#user !== undefined) chmodSync(workspace, 0o755);
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
        const who = this.#user === undefined ? '' : ` as uid ${this.#user.uid}`;
        throw new SandboxUnavailableError(
          owned
            ? `bubblewrap could not create a sandbox here${who} (are user namespaces allowed?).`
            : `bubblewrap could not run in the workspace${who}: the sandbox user must be able to reach it (chown or chmod it, or set user), and user namespaces must be allowed.`,
          { details: { exitCode: result.exitCode, signal: result.signal } },
        );
      }
    } finally {
      if (owned) await rm(workspace, { recursive: true, force: true });
    }
  }

  /** Runs the request inside a fresh bubblewrap sandbox (see {@link BubblewrapSandbox.argv}). */
  async run(request: SandboxRunRequest): Promise<SandboxRunResult> {
    const result = await runProcess(this.#bwrap, this.argv(request), {
      cwd: '/',
      env: {},
      timeoutMs: request.timeoutMs,
      maxOutputBytes: request.maxOutputBytes,
      ...(request.signal === undefined ? {} : { signal: request.signal }),
      ...(this.#user === undefined ? {} : { uid: this.#user.uid, gid: this.#user.gid }),
    });
    if (result.exitCode === 0 && !result.timedOut) return result;
    const limit = classifyLimit(result.signal, result.stderr, result.exitCode);
    return limit === undefined ? result : { ...result, limit };
  }
}
