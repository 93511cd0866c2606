import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, open } from 'node:fs/promises';
import {
  SkillFormatError,
  SkillLimitError,
  SkillReadError,
  SkillUnsafeFileError,
} from './errors.js';

/** Test seams: run between the checks so a test can swap files at exact points. */
export interface SafeReadHooks {
  readonly afterLstat?: () => Promise<void>;
  readonly afterRead?: () => Promise<void>;
}

export function sameFile(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

function unchanged(a: Stats, b: Stats): boolean {
  return sameFile(a, b) && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;
}

export function unsafe(reason: string, skill: string | undefined): SkillUnsafeFileError {
  return new SkillUnsafeFileError('Skill file is unsafe to read', {
    details: { reason, ...(skill === undefined ? {} : { skill }) },
  });
}

export function isErrno(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

/** `lstat` that maps ENOENT to `undefined` and other failures to {@link SkillReadError}. */
export async function lstatOrUndefined(path: string): Promise<Stats | undefined> {
  try {
    return await lstat(path);
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw new SkillReadError('Skill path could not be inspected', {
      details: { errno: isErrno(error, 'EACCES') ? 'EACCES' : 'other' },
    });
  }
}

/**
 * Reads one regular file as UTF-8 text, refusing: a symlink (checked with `lstat` and
 * `O_NOFOLLOW`), a hard link (`nlink` other than 1), anything but a regular file, more than
 * `maxBytes` (by `fstat` and again while reading), a file whose identity or size changed between
 * `lstat`, open and the end of the read, a path that points elsewhere after the read, invalid
 * UTF-8 and NUL characters. `folder` (when given) must keep its identity too.
 */
export async function readFileSafely(
  path: string,
  options: {
    readonly maxBytes: number;
    readonly skill?: string;
    readonly folder?: { readonly path: string; readonly stats: Stats };
  },
  hooks: SafeReadHooks = {},
): Promise<string> {
  const { maxBytes, skill } = options;
  const before = await lstatOrUndefined(path);
  if (before === undefined) throw unsafe('missing', skill);
  if (before.isSymbolicLink()) throw unsafe('symlink', skill);
  if (!before.isFile()) throw unsafe('not_regular_file', skill);
  if (before.nlink !== 1) throw unsafe('hard_link', skill);
  if (before.size > maxBytes) {
    throw new SkillLimitError('Skill file is larger than allowed', {
      details: { limit: 'maxFileBytes', maxFileBytes: maxBytes, ...(skill ? { skill } : {}) },
    });
  }
  await hooks.afterLstat?.();
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if (isErrno(error, 'ELOOP')) throw unsafe('symlink', skill);
    if (isErrno(error, 'ENOENT')) throw unsafe('swapped', skill);
    throw new SkillReadError('Skill file could not be opened', {
      details: { ...(skill ? { skill } : {}) },
    });
  }
  let bytes: Buffer;
  try {
    const opened = await handle.stat();
    if (opened.isFile() && !sameFile(before, opened)) throw unsafe('swapped', skill);
    bytes = await readOpenedFile(handle, opened, maxBytes, skill);
    await hooks.afterRead?.();
    const pathAfter = await lstatOrUndefined(path);
    if (pathAfter === undefined || pathAfter.isSymbolicLink() || !sameFile(pathAfter, opened)) {
      throw unsafe('swapped', skill);
    }
    await checkUnchangedAfterRead(handle, opened, bytes.length, skill);
    if (options.folder !== undefined) {
      const folderAfter = await lstatOrUndefined(options.folder.path);
      if (
        folderAfter === undefined ||
        folderAfter.isSymbolicLink() ||
        !sameFile(folderAfter, options.folder.stats)
      ) {
        throw unsafe('swapped', skill);
      }
    }
  } finally {
    await handle.close();
  }
  return decodeSkillText(bytes, skill);
}

/**
 * Reads an open SKILL.md whose `fstat` is `opened`: refuses anything but a regular file, a hard
 * link (`nlink` other than 1) and more than `maxBytes` (by `fstat`, then while reading).
 */
export async function readOpenedFile(
  handle: FileHandle,
  opened: Stats,
  maxBytes: number,
  skill: string | undefined,
): Promise<Buffer> {
  if (!opened.isFile()) throw unsafe('not_regular_file', skill);
  if (opened.nlink !== 1) throw unsafe('hard_link', skill);
  if (opened.size > maxBytes) {
    throw new SkillLimitError('Skill file is larger than allowed', {
      details: { limit: 'maxFileBytes', maxFileBytes: maxBytes, ...(skill ? { skill } : {}) },
    });
  }
  return readBounded(handle, maxBytes, skill);
}

/** Refuses (`changed_during_read`) a file whose `fstat` changed while it was read. */
export async function checkUnchangedAfterRead(
  handle: FileHandle,
  opened: Stats,
  bytes: number,
  skill: string | undefined,
): Promise<void> {
  const after = await handle.stat();
  if (!unchanged(opened, after) || after.size !== bytes || after.nlink !== 1) {
    throw unsafe('changed_during_read', skill);
  }
}

/** Reads at most `maxBytes` from an open file; more raises {@link SkillLimitError}. */
async function readBounded(
  handle: FileHandle,
  maxBytes: number,
  skill: string | undefined,
): Promise<Buffer> {
  const buffer = Buffer.alloc(maxBytes + 1);
  let total = 0;
  for (;;) {
    const { bytesRead } = await handle.read(buffer, total, buffer.length - total, total);
    if (bytesRead === 0) break;
    total += bytesRead;
    if (total > maxBytes) {
      throw new SkillLimitError('Skill file grew larger than allowed while read', {
        details: { limit: 'maxFileBytes', maxFileBytes: maxBytes, ...(skill ? { skill } : {}) },
      });
    }
  }
  return buffer.subarray(0, total);
}

/** UTF-8 text without NUL, else {@link SkillFormatError} (`not_utf8`, `nul`). */
export function decodeSkillText(bytes: Uint8Array, skill: string | undefined): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new SkillFormatError('Skill file is not valid UTF-8', {
      details: { reason: 'not_utf8', ...(skill ? { skill } : {}) },
    });
  }
  if (text.includes('\u0000')) {
    throw new SkillFormatError('Skill file contains a NUL character', {
      details: { reason: 'nul', ...(skill ? { skill } : {}) },
    });
  }
  return text;
}
