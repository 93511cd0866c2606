import { constants, type Dirent, existsSync, type Stats } from 'node:fs';
import { type FileHandle, open, readdir, readlink, realpath } from 'node:fs/promises';
import { join } from 'node:path';
import { SkillConfigurationError, SkillReadError, SkillUnsafeFileError } from './errors.js';
import {
  checkUnchangedAfterRead,
  decodeSkillText,
  isErrno,
  lstatOrUndefined,
  readFileSafely,
  readOpenedFile,
  sameFile,
  unsafe,
} from './safe-read.js';

/**
 * How a skills root is read: through descriptors (`/proc/self/fd`, Linux), or by path (the
 * weaker mode for platforms without `/proc`, where a swap can win a race).
 */
export type SkillConfinement = 'descriptor' | 'by-path';

/** The SKILL.md of one folder of the root, read safely; `undefined` when there is none. */
export interface SkillRoot {
  /** The root's entries (not sorted). */
  list(): Promise<Dirent[]>;
  /**
   * The text of `<name>/SKILL.md`; `undefined` when the folder or the file is gone.
   * @throws SkillUnsafeFileError, SkillLimitError, SkillFormatError, SkillReadError.
   */
  readSkill(name: string, maxBytes: number): Promise<string | undefined>;
  /**
   * How many skills the folder `name` of the root holds without being scanned: itself when it
   * holds a SKILL.md, plus each of its sub-folders that does (one level, at most `maxEntries`
   * entries looked at). Links are not followed; a folder that cannot be read counts 0.
   */
  countSkillsIn(name: string, maxEntries: number): Promise<number>;
  /** Refuses (`root_swapped`) when the root's path no longer names the folder read. */
  verify(): Promise<void>;
  close(): Promise<void>;
}

const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const FILE_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;

function symlinkedRoot(): SkillUnsafeFileError {
  return new SkillUnsafeFileError('Skill file is unsafe to read', {
    details: { reason: 'symlinked_root' },
  });
}

function rootSwapped(): SkillUnsafeFileError {
  return new SkillUnsafeFileError('Skill file is unsafe to read', {
    details: { reason: 'root_swapped' },
  });
}

/** True when this process can reach its descriptors as folders (`/proc/self/fd`, Linux). */
export function descriptorPathsWork(): boolean {
  return process.platform === 'linux' && existsSync('/proc/self/fd');
}

/** Opens the skills root `root` (absolute, resolved) for one scan. */
export async function openSkillRoot(root: string, mode: SkillConfinement): Promise<SkillRoot> {
  const stats = await lstatOrUndefined(root);
  if (stats === undefined) throw new SkillReadError('Skills root does not exist');
  if (stats.isSymbolicLink()) throw symlinkedRoot();
  if (!stats.isDirectory()) throw new SkillConfigurationError('Skills root is not a folder');
  if (mode === 'by-path') return openByPath(root, stats);
  if (!descriptorPathsWork()) {
    throw new SkillConfigurationError(
      "SkillLoader needs /proc/self/fd (Linux with /proc mounted) to read skills through descriptors. Mount /proc, or pass confinement: 'by-path' to accept the weaker, race-prone mode the README describes.",
      { details: { option: 'confinement', reason: 'no-proc-self-fd' } },
    );
  }
  let handle: FileHandle;
  try {
    handle = await open(root, DIRECTORY_FLAGS);
  } catch (error) {
    if (isErrno(error, 'ELOOP') || isErrno(error, 'ENOTDIR')) throw symlinkedRoot();
    if (isErrno(error, 'ENOENT')) throw new SkillReadError('Skills root does not exist');
    throw new SkillReadError('Skills root could not be opened');
  }
  try {
    return await DescriptorRoot.create(root, handle);
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/**
 * Descriptor mode. The root is opened once with `O_DIRECTORY | O_NOFOLLOW` and the kernel's
 * name for that descriptor must be the root exactly (so no folder on its path is a link); each
 * skill folder is opened inside the root's descriptor (`/proc/self/fd/<root>/<name>`, the
 * `openat` Node lacks) with `O_DIRECTORY | O_NOFOLLOW`, and its SKILL.md inside the folder's
 * descriptor with `O_NOFOLLOW`. No name is resolved twice, so swapping a folder for a link
 * at any moment reaches nothing outside: the open fails (`ELOOP`) or gets the real folder.
 */
class DescriptorRoot implements SkillRoot {
  readonly #root: string;
  readonly #handle: FileHandle;
  readonly #stats: Stats;
  readonly #self: string;

  private constructor(root: string, handle: FileHandle, stats: Stats) {
    this.#root = root;
    this.#handle = handle;
    this.#stats = stats;
    this.#self = `/proc/self/fd/${handle.fd}`;
  }

  static async create(root: string, handle: FileHandle): Promise<DescriptorRoot> {
    const stats = await handle.stat();
    let name: string;
    try {
      name = await readlink(`/proc/self/fd/${handle.fd}`);
    } catch {
      throw new SkillReadError('Skills root could not be resolved');
    }
    if (name !== root) throw symlinkedRoot();
    return new DescriptorRoot(root, handle, stats);
  }

  async list(): Promise<Dirent[]> {
    try {
      return await readdir(this.#self, { withFileTypes: true });
    } catch {
      throw new SkillReadError('Skills root could not be listed');
    }
  }

  async readSkill(name: string, maxBytes: number): Promise<string | undefined> {
    let folder: FileHandle;
    try {
      folder = await open(`${this.#self}/${name}`, DIRECTORY_FLAGS);
    } catch (error) {
      if (isErrno(error, 'ENOENT')) return undefined;
      if (isErrno(error, 'ELOOP')) throw unsafe('symlink', name);
      if (isErrno(error, 'ENOTDIR')) throw unsafe('swapped', name);
      throw new SkillReadError('Skill folder could not be opened', { details: { skill: name } });
    }
    try {
      let file: FileHandle;
      try {
        file = await open(`/proc/self/fd/${folder.fd}/SKILL.md`, FILE_FLAGS);
      } catch (error) {
        if (isErrno(error, 'ENOENT')) return undefined;
        if (isErrno(error, 'ELOOP')) throw unsafe('symlink', name);
        throw new SkillReadError('Skill file could not be opened', { details: { skill: name } });
      }
      try {
        const opened = await file.stat();
        const bytes = await readOpenedFile(file, opened, maxBytes, name);
        await checkUnchangedAfterRead(file, opened, bytes.length, name);
        return decodeSkillText(bytes, name);
      } finally {
        await file.close();
      }
    } finally {
      await folder.close();
    }
  }

  async countSkillsIn(name: string, maxEntries: number): Promise<number> {
    let folder: FileHandle;
    try {
      folder = await open(`${this.#self}/${name}`, DIRECTORY_FLAGS);
    } catch {
      return 0;
    }
    try {
      const self = `/proc/self/fd/${folder.fd}`;
      return await countSkills(self, maxEntries, async (child) => {
        try {
          const handle = await open(`${self}/${child}`, DIRECTORY_FLAGS);
          try {
            return (
              (await lstatOrUndefined(`/proc/self/fd/${handle.fd}/SKILL.md`))?.isFile() === true
            );
          } finally {
            await handle.close();
          }
        } catch {
          return false;
        }
      });
    } finally {
      await folder.close();
    }
  }

  async verify(): Promise<void> {
    const after = await lstatOrUndefined(this.#root);
    if (after === undefined || after.isSymbolicLink() || !sameFile(after, this.#stats)) {
      throw rootSwapped();
    }
  }

  close(): Promise<void> {
    return this.#handle.close();
  }
}

/**
 * By-path mode (`confinement: 'by-path'`): each name is checked with `lstat` and opened with
 * `O_NOFOLLOW` on its last component, and identities are compared after the read. A folder
 * swapped for a link between those steps can still be read through: use it only where
 * `/proc/self/fd` is missing.
 */
async function openByPath(root: string, stats: Stats): Promise<SkillRoot> {
  let real: string;
  try {
    real = await realpath(root);
  } catch {
    throw new SkillReadError('Skills root could not be resolved');
  }
  if (real !== root) throw symlinkedRoot();
  return {
    async list() {
      try {
        return await readdir(root, { withFileTypes: true });
      } catch {
        throw new SkillReadError('Skills root could not be listed');
      }
    },
    async readSkill(name, maxBytes) {
      const folder = join(root, name);
      const folderStats = await lstatOrUndefined(folder);
      if (folderStats === undefined) return undefined;
      if (folderStats.isSymbolicLink() || !folderStats.isDirectory()) {
        throw unsafe('symlink', name);
      }
      const file = join(folder, 'SKILL.md');
      if ((await lstatOrUndefined(file)) === undefined) return undefined;
      return readFileSafely(file, {
        maxBytes,
        skill: name,
        folder: { path: folder, stats: folderStats },
      });
    },
    async countSkillsIn(name, maxEntries) {
      const folder = join(root, name);
      const stats = await lstatOrUndefined(folder);
      if (stats === undefined || !stats.isDirectory()) return 0;
      return countSkills(folder, maxEntries, async (child) => {
        const inner = await lstatOrUndefined(join(folder, child)).catch(() => undefined);
        if (inner === undefined || !inner.isDirectory()) return false;
        return (
          (
            await lstatOrUndefined(join(folder, child, 'SKILL.md')).catch(() => undefined)
          )?.isFile() === true
        );
      });
    },
    async verify() {
      const after = await lstatOrUndefined(root);
      if (after === undefined || after.isSymbolicLink() || !sameFile(after, stats)) {
        throw rootSwapped();
      }
    },
    async close() {},
  };
}

/**
 * Counts SKILL.md in `folder` itself and in its sub-folders (`holdsSkill(child)`), looking at
 * no more than `maxEntries` entries; an unreadable folder counts 0.
 */
async function countSkills(
  folder: string,
  maxEntries: number,
  holdsSkill: (child: string) => Promise<boolean>,
): Promise<number> {
  let entries: Dirent[];
  try {
    entries = await readdir(folder, { withFileTypes: true });
  } catch {
    return 0;
  }
  let count = 0;
  for (const entry of entries.slice(0, maxEntries)) {
    if (entry.name === 'SKILL.md' && entry.isFile()) count += 1;
    else if (entry.isDirectory() && (await holdsSkill(entry.name))) count += 1;
  }
  return count;
}
