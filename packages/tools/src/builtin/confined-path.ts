import { constants, existsSync, type Stats } from 'node:fs';
import { type FileHandle, lstat, open } from 'node:fs/promises';
import { FileSystemAccessError } from './file-system-error.js';

/** Longest relative path accepted, in UTF-8 bytes. */
export const MAX_RELATIVE_PATH_BYTES = 4096;
/** Longest path segment accepted, in UTF-8 bytes. */
export const MAX_SEGMENT_BYTES = 255;

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
const WINDOWS_DEVICE = /^(?:con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(?:\..*)?$/i;

/**
 * Parses a root-relative POSIX path into segments (`'.'` is the root itself, `[]`). Refuses:
 * non-strings, empty, over-long, NUL and control characters, backslashes, `:` (drive letters,
 * alternate streams), a leading `/` or `~`, empty segments (`a//b`, trailing `/`), `.` and `..`
 * segments, segments ending in a dot or space, and Windows device names. Nothing is decoded,
 * expanded or normalised.
 */
export function parseRelativePath(path: unknown): readonly string[] {
  const invalid = (why: string): never => {
    throw new FileSystemAccessError(`The path is not allowed: ${why}.`, 'FS_PATH_INVALID');
  };
  if (typeof path !== 'string') return invalid('it must be a string');
  if (path === '.') return [];
  if (path.length === 0) return invalid('it is empty');
  if (Buffer.byteLength(path, 'utf8') > MAX_RELATIVE_PATH_BYTES) return invalid('it is too long');
  if (CONTROL.test(path)) return invalid('it contains control characters');
  if (path.includes('\\')) return invalid('it contains a backslash');
  if (path.includes(':')) return invalid('it contains a colon');
  if (path.startsWith('/')) return invalid('it must be relative to the root');
  if (path.startsWith('~')) return invalid('it must not start with ~');
  const segments = path.split('/');
  for (const segment of segments) {
    if (segment === '') return invalid('it has an empty segment');
    if (segment === '.' || segment === '..') return invalid('it has a . or .. segment');
    if (Buffer.byteLength(segment, 'utf8') > MAX_SEGMENT_BYTES) {
      return invalid('a segment is too long');
    }
    if (segment.endsWith('.') || segment.endsWith(' ')) {
      return invalid('a segment ends with a dot or a space');
    }
    if (WINDOWS_DEVICE.test(segment)) return invalid('a segment is a reserved device name');
  }
  return segments;
}

/** Separator-aware containment: `/root` contains `/root` and `/root/x`, never `/root-evil`. */
export function isInside(root: string, candidate: string): boolean {
  if (candidate === root) return true;
  const prefix = root.endsWith('/') ? root : `${root}/`;
  return candidate.startsWith(prefix);
}

/** A path inside the root whose existing segments were all checked with `lstat`. */
export interface ResolvedPath {
  readonly absolute: string;
  readonly relative: string;
  /** The folder holding the last segment (the root itself for the root). */
  readonly parent: string;
  readonly parentStat: Stats;
  /** The last segment; `undefined` for the root. */
  readonly name: string | undefined;
  /** `lstat` of the target, or `undefined` when it does not exist (and that was allowed). */
  readonly stat: Stats | undefined;
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

/**
 * Walks `segments` from `rootReal` with `lstat`, refusing any symbolic link (inside or outside
 * the root) and any non-folder in a folder position. Only the last segment may be missing, and
 * only with `allowMissing`.
 */
export async function resolveInside(
  rootReal: string,
  rootStat: Stats,
  segments: readonly string[],
  options: { readonly allowMissing: boolean },
): Promise<ResolvedPath> {
  let current = rootReal;
  let parent = rootReal;
  let parentStat = rootStat;
  let stat: Stats | undefined = rootStat;
  for (let index = 0; index < segments.length; index += 1) {
    const segment = segments[index] as string;
    parent = current;
    parentStat = stat as Stats;
    current = `${current === '/' ? '' : current}/${segment}`;
    try {
      stat = await lstat(current);
    } catch (error) {
      const code = codeOf(error);
      if (
        (code === 'ENOENT' || code === 'ENOTDIR') &&
        index === segments.length - 1 &&
        options.allowMissing
      ) {
        stat = undefined;
        break;
      }
      if (code === 'ENOENT') {
        throw new FileSystemAccessError('The path does not exist.', 'FS_NOT_FOUND');
      }
      if (code === 'ENOTDIR') {
        throw new FileSystemAccessError(
          'A folder in the path is not a folder.',
          'FS_NOT_A_DIRECTORY',
        );
      }
      throw new FileSystemAccessError('The path could not be checked.', 'FS_IO_ERROR', {
        cause: error,
      });
    }
    if (stat.isSymbolicLink()) {
      throw new FileSystemAccessError(
        'The path goes through a symbolic link.',
        'FS_SYMLINK_REFUSED',
      );
    }
    if (index < segments.length - 1 && !stat.isDirectory()) {
      throw new FileSystemAccessError(
        'A folder in the path is not a folder.',
        'FS_NOT_A_DIRECTORY',
      );
    }
  }
  if (!isInside(rootReal, current)) {
    throw new FileSystemAccessError('The path leaves the root.', 'FS_PATH_INVALID');
  }
  return {
    absolute: current,
    relative: segments.length === 0 ? '.' : segments.join('/'),
    parent,
    parentStat,
    name: segments.length === 0 ? undefined : segments[segments.length - 1],
    stat,
  };
}

/** True when two stats describe the same file (device and inode). */
export function sameFile(left: Stats, right: Stats): boolean {
  return left.dev === right.dev && left.ino === right.ino;
}

let procFdAvailable: boolean | undefined;

function hasProcFd(): boolean {
  procFdAvailable ??= process.platform === 'linux' && existsSync('/proc/self/fd');
  return procFdAvailable;
}

/**
 * A folder opened without following links and checked (device and inode) against the walk.
 * On Linux, names inside it are reached through `/proc/self/fd/<fd>/<name>`, so the kernel
 * resolves them in exactly this folder even if its path is swapped for a link afterwards
 * (the `openat` Node lacks). Elsewhere, its path is used and re-checked.
 */
export interface VerifiedDirectory {
  readonly handle: FileHandle;
  /** A path that reaches `name` inside this very folder. */
  entry(name: string): string;
  /** The folder itself. */
  readonly self: string;
  /** Fsyncs the folder. */
  sync(): Promise<void>;
  close(): Promise<void>;
}

/** Opens a folder with `O_DIRECTORY | O_NOFOLLOW` and checks it is the one the walk saw. */
export async function openVerifiedDirectory(
  absolute: string,
  expected: Stats,
): Promise<VerifiedDirectory> {
  let handle: FileHandle;
  try {
    handle = await open(
      absolute,
      constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW,
    );
  } catch (error) {
    const code = codeOf(error);
    if (code === 'ELOOP' || code === 'ENOTDIR' || code === 'ENOENT') {
      throw new FileSystemAccessError(
        'The folder changed while it was being used.',
        'FS_CHANGED_DURING_ACCESS',
      );
    }
    throw new FileSystemAccessError('The folder could not be opened.', 'FS_IO_ERROR', {
      cause: error,
    });
  }
  const actual = await handle.stat();
  if (!actual.isDirectory() || !sameFile(actual, expected)) {
    await handle.close();
    throw new FileSystemAccessError(
      'The folder changed while it was being used.',
      'FS_CHANGED_DURING_ACCESS',
    );
  }
  const viaProc = hasProcFd();
  const self = viaProc ? `/proc/self/fd/${handle.fd}` : absolute;
  return {
    handle,
    self,
    entry: (name) => `${self}/${name}`,
    sync: () => handle.sync(),
    close: () => handle.close(),
  };
}
