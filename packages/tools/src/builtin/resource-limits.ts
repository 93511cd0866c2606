import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import { ShellToolOptionsError } from './shell-tool-options-error.js';

/**
 * Per-process kernel resource limits (`setrlimit`) a sandbox applies to the program it runs,
 * through util-linux `prlimit`, which sets them and then `exec`s the program. `null` leaves a
 * limit as the host has it.
 */
export interface ProcessResourceLimits {
  /**
   * Address space of each process in bytes (`RLIMIT_AS`): an allocation beyond it fails with
   * `ENOMEM`. Per process, not a total.
   */
  readonly maxMemoryBytes?: number | null;
  /** Largest file a process may write, in bytes (`RLIMIT_FSIZE`): a bigger write gets `SIGXFSZ` / `EFBIG`. */
  readonly maxFileSizeBytes?: number | null;
  /** Open file descriptors per process (`RLIMIT_NOFILE`). */
  readonly maxOpenFiles?: number | null;
}

/** Defaults of {@link ProcessResourceLimits}: 2 GiB address space, 128 MiB files, 1024 descriptors. */
export const DEFAULT_PROCESS_RESOURCE_LIMITS: {
  /** `2147483648` (2 GiB). */
  readonly maxMemoryBytes: number;
  /** `134217728` (128 MiB). */
  readonly maxFileSizeBytes: number;
  /** `1024`. */
  readonly maxOpenFiles: number;
} = Object.freeze({
  maxMemoryBytes: 2_147_483_648,
  maxFileSizeBytes: 134_217_728,
  maxOpenFiles: 1024,
});

const SANDBOX_LIMITS_VALUES = [
  'processes',
  'memory',
  'file-size',
  'open-files',
  'disk-space',
] as const;

/** Which limit a run most likely ran into (see `SandboxRunResult.limit`). */
export const SANDBOX_LIMITS: typeof SANDBOX_LIMITS_VALUES = Object.freeze(SANDBOX_LIMITS_VALUES);

/** One of {@link SANDBOX_LIMITS}. */
export type SandboxLimit = (typeof SANDBOX_LIMITS)[number];

/** The limits a sandbox applies, checked and resolved (a number, or `null` for "not applied"). */
export interface AppliedResourceLimits {
  /** Address space per process in bytes (`RLIMIT_AS`), or `null`. */
  readonly maxMemoryBytes: number | null;
  /** Largest file written in bytes (`RLIMIT_FSIZE`), or `null`. */
  readonly maxFileSizeBytes: number | null;
  /** Open descriptors per process (`RLIMIT_NOFILE`), or `null`. */
  readonly maxOpenFiles: number | null;
}

/** Reads one limit option: `undefined` takes the default, `null` turns it off, else a positive safe integer. */
export function limitOption(
  value: unknown,
  name: string,
  fallback: number | null,
  minimum = 1,
): number | null {
  if (value === undefined) return fallback;
  if (value === null) return null;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < minimum) {
    throw new ShellToolOptionsError(
      `${name} must be an integer of at least ${minimum}, or null to leave the host's limit.`,
      { details: { option: name } },
    );
  }
  return value;
}

const LIMIT_NAMES = {
  processes: 'Max processes',
  memory: 'Max address space',
  fileSize: 'Max file size',
  openFiles: 'Max open files',
} as const;

/**
 * The hard limits of this process (Linux `/proc/self/limits`; `undefined` where unlimited or
 * unknown). A sandbox cannot raise a hard limit, so a requested limit above it is lowered to it
 * (otherwise `prlimit` would fail every run).
 */
export function hostHardLimits(): Readonly<Record<keyof typeof LIMIT_NAMES, number | undefined>> {
  let text = '';
  try {
    text = readFileSync('/proc/self/limits', 'utf8');
  } catch {
    // Not Linux, or no /proc: nothing known.
  }
  const hard = (name: string): number | undefined => {
    const line = text.split('\n').find((candidate) => candidate.startsWith(name));
    const value = line?.slice(26).trim().split(/\s+/)[1];
    return value === undefined || !/^[0-9]+$/.test(value) ? undefined : Number(value);
  };
  return {
    processes: hard(LIMIT_NAMES.processes),
    memory: hard(LIMIT_NAMES.memory),
    fileSize: hard(LIMIT_NAMES.fileSize),
    openFiles: hard(LIMIT_NAMES.openFiles),
  };
}

/** `requested`, lowered to the host's hard limit when that is smaller. */
export function clampToHost(requested: number | null, hard: number | undefined): number | null {
  return requested === null || hard === undefined ? requested : Math.min(requested, hard);
}

/** Resolves {@link ProcessResourceLimits} against `defaults`; throws {@link ShellToolOptionsError}. */
export function resolveProcessLimits(
  options: ProcessResourceLimits,
  defaults: AppliedResourceLimits,
): AppliedResourceLimits {
  const hard = hostHardLimits();
  return Object.freeze({
    // Below a few MiB nothing (not even the loader) starts; refuse such a value outright.
    maxMemoryBytes: clampToHost(
      limitOption(options.maxMemoryBytes, 'maxMemoryBytes', defaults.maxMemoryBytes, 16_777_216),
      hard.memory,
    ),
    maxFileSizeBytes: clampToHost(
      limitOption(options.maxFileSizeBytes, 'maxFileSizeBytes', defaults.maxFileSizeBytes),
      hard.fileSize,
    ),
    maxOpenFiles: clampToHost(
      limitOption(options.maxOpenFiles, 'maxOpenFiles', defaults.maxOpenFiles, 8),
      hard.openFiles,
    ),
  });
}

/**
 * `prlimit` arguments (before `--`) for the limits; soft and hard limit are the same, so the
 * program cannot raise them again. With any limit, core dumps are turned off too (a crash
 * would otherwise write the process's memory into the workspace).
 */
export function prlimitArguments(
  limits: AppliedResourceLimits,
  maxProcesses: number | null = null,
): string[] {
  const argv: string[] = [];
  if (maxProcesses !== null) argv.push(`--nproc=${maxProcesses}:${maxProcesses}`);
  if (limits.maxMemoryBytes !== null) {
    argv.push(`--as=${limits.maxMemoryBytes}:${limits.maxMemoryBytes}`);
  }
  if (limits.maxFileSizeBytes !== null) {
    argv.push(`--fsize=${limits.maxFileSizeBytes}:${limits.maxFileSizeBytes}`);
  }
  if (limits.maxOpenFiles !== null) {
    argv.push(`--nofile=${limits.maxOpenFiles}:${limits.maxOpenFiles}`);
  }
  if (argv.length > 0) argv.push('--core=0:0');
  return argv;
}

// The C-locale texts of the errno values a limit produces (glibc strerror, dash and bash).
const LIMIT_TEXTS: readonly (readonly [SandboxLimit, RegExp])[] = [
  ['disk-space', /No space left on device/],
  ['file-size', /File too large|File size limit exceeded/],
  ['open-files', /Too many open files/i],
  [
    'processes',
    /Cannot fork|can't fork|fork: retry|fork: Resource temporarily unavailable|spawn EAGAIN/,
  ],
  ['memory', /Cannot allocate memory|out of memory|allocation failed/i],
];

/**
 * Best-effort guess of the limit a finished run ran into: `SIGXFSZ` (or exit status 128 +
 * `SIGXFSZ`, as bubblewrap reports a child killed by it) is the file-size limit; otherwise the
 * first C-locale errno text of a limit in stderr. The kernel enforces the limits either way;
 * this only names the likely cause (a program can print these words itself).
 */
export function classifyLimit(
  signal: string | null,
  stderr: string,
  exitCode: number | null = null,
): SandboxLimit | undefined {
  if (signal === 'SIGXFSZ') return 'file-size';
  const xfsz = constants.signals.SIGXFSZ as number | undefined;
  if (xfsz !== undefined && exitCode === 128 + xfsz) return 'file-size';
  for (const [limit, pattern] of LIMIT_TEXTS) if (pattern.test(stderr)) return limit;
  return undefined;
}
