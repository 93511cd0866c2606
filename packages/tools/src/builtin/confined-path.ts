import type { Stats } from 'node:fs';
import { lstat } from 'node:fs/promises';
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

/** How a `FileSystemTool` path is accepted, besides the fixed rules of {@link normalisePath}. */
export interface NormaliseOptions {
  /**
   * The one absolute spelling of the root accepted (the root as configured): an absolute path
   * starting with it is made relative to it.
   */
  readonly rootPath: string;
  /**
   * Other absolute spellings of the same folder (its real path, when the root was configured
   * through a link): an absolute path starting with one is refused with a message naming
   * {@link rootPath}, so a policy rule written on `rootPath` sees every absolute path accepted.
   */
  readonly otherRootPaths: readonly string[];
  /**
   * Keep `..` segments for the descriptor walk to resolve against the real parent (used with
   * `symlinks: 'follow-inside'`); otherwise `..` is resolved lexically and may not leave the root.
   */
  readonly keepParentSegments: boolean;
  /** Also refuse names Windows cannot hold (device names, trailing dot or space, `<>:"|?*`). */
  readonly portableNames: boolean;
}

/** The accepted form, appended to every refusal so a model can correct itself. */
export const ACCEPTED_PATH_FORM =
  'Paths are relative to the workspace root and use "/", for example "src/index.ts" ("." is the root).';

const URL_SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
const DRIVE_LETTER = /^[A-Za-z]:/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL_AT = /[\u0000-\u001f\u007f-\u009f]/;
const NOT_PORTABLE = /[<>:"|?*]/;

/** A short, escaped rendering of a model-supplied string for an error message. */
export function quoteForMessage(value: string): string {
  const shown = value.length > 80 ? `${value.slice(0, 77)}...` : value;
  return JSON.stringify(shown);
}

function stripRoot(path: string, rootPath: string): string | undefined {
  if (rootPath === '/') return path.slice(1);
  if (path === rootPath) return '';
  if (path.startsWith(`${rootPath}/`)) return path.slice(rootPath.length + 1);
  return undefined;
}

/**
 * Normalises a path a model sent, once, before any walk: `./a`, `a/./b`, `a//b` and a trailing
 * `/` become `a`, `a/b`; an absolute path inside `rootPath` becomes relative to it;
 * `a/b/../c` becomes `a/c` unless `keepParentSegments`. Returns the segments (`[]` is the root).
 * Refuses, with `FS_PATH_INVALID` and a message naming what is wrong: empty, over
 * {@link MAX_RELATIVE_PATH_BYTES}, NUL or control characters, backslashes, URLs, drive letters,
 * a leading `~`, an absolute path outside `rootPath` (one under `otherRootPaths` with its own
 * message), `..` that leaves the root, a segment over
 * {@link MAX_SEGMENT_BYTES}, and with `portableNames` names Windows cannot hold. Nothing is
 * decoded or case-folded.
 */
export function normalisePath(path: unknown, options: NormaliseOptions): readonly string[] {
  if (typeof path !== 'string') {
    throw new FileSystemAccessError(
      `The argument path must be a string. ${ACCEPTED_PATH_FORM}`,
      'FS_INVALID_ARGUMENTS',
    );
  }
  const invalid = (why: string): never => {
    throw new FileSystemAccessError(
      `The path ${quoteForMessage(path)} is not allowed: ${why}. ${ACCEPTED_PATH_FORM}`,
      'FS_PATH_INVALID',
    );
  };
  if (path.length === 0) return invalid('it is empty');
  if (Buffer.byteLength(path, 'utf8') > MAX_RELATIVE_PATH_BYTES) {
    return invalid(`it is longer than ${MAX_RELATIVE_PATH_BYTES} bytes`);
  }
  const control = CONTROL_AT.exec(path);
  if (control !== null) {
    return invalid(`it contains a control character at position ${control.index}`);
  }
  if (path.includes('\\')) return invalid('it contains a backslash; use "/" between folders');
  if (URL_SCHEME.test(path)) return invalid('it is a URL; send the path inside the root instead');
  if (DRIVE_LETTER.test(path)) return invalid('it starts with a drive letter');
  if (path.startsWith('~')) return invalid('it starts with "~"; home folders are not reachable');
  let relative = path;
  if (path.startsWith('/')) {
    const trimmed = path.replace(/\/+$/, '') || '/';
    const inside = stripRoot(trimmed, options.rootPath);
    if (inside === undefined) {
      if (options.otherRootPaths.some((other) => stripRoot(trimmed, other) !== undefined)) {
        return invalid(
          'it spells the workspace root another way (its real path); this tool takes absolute ' +
            `paths only under the root as configured, ${quoteForMessage(options.rootPath)}, or a ` +
            'path relative to the root',
        );
      }
      return invalid('it is an absolute path outside the workspace root');
    }
    relative = inside;
  }
  const segments: string[] = [];
  for (const segment of relative.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (options.keepParentSegments) {
        segments.push(segment);
        continue;
      }
      if (segments.length === 0) return invalid('its ".." leaves the workspace root');
      segments.pop();
      continue;
    }
    if (Buffer.byteLength(segment, 'utf8') > MAX_SEGMENT_BYTES) {
      return invalid(
        `the name ${quoteForMessage(segment)} is longer than ${MAX_SEGMENT_BYTES} bytes`,
      );
    }
    if (options.portableNames) {
      const why =
        segment.endsWith('.') || segment.endsWith(' ')
          ? 'ends with a dot or a space'
          : WINDOWS_DEVICE.test(segment)
            ? 'is a Windows device name'
            : NOT_PORTABLE.test(segment)
              ? 'contains one of < > : " | ? *'
              : undefined;
      if (why !== undefined) {
        return invalid(
          `the name ${quoteForMessage(segment)} ${why}, which Windows cannot hold (portableNames is on)`,
        );
      }
    }
    segments.push(segment);
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
