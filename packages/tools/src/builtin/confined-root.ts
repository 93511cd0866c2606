import {
  closeSync,
  constants,
  existsSync,
  fstatSync,
  lstatSync,
  openSync,
  readlinkSync,
  realpathSync,
  type Stats,
  statSync,
} from 'node:fs';
import { type FileHandle, lstat, open, readlink, stat as statPath } from 'node:fs/promises';
import { resolve as resolvePath } from 'node:path';
import { quoteForMessage } from './confined-path.js';
import { FileSystemAccessError } from './file-system-error.js';
import { FileSystemToolOptionsError } from './file-system-tool-options-error.js';

/** How folders are reached: through descriptors (`/proc/self/fd`), or by path (weaker). */
export type ConfinementMode = 'descriptor' | 'by-path';

/** What to do with a symbolic link met on the way. */
export type SymlinkPolicy = 'refuse' | 'follow-inside';

const DIRECTORY_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function sameFile(left: Stats, right: Stats): boolean {
  return left.dev === right.dev && left.ino === right.ino;
}

/**
 * An open folder inside the root. `entry(name)` is a path the kernel resolves inside this very
 * folder: `/proc/self/fd/<fd>/<name>` in descriptor mode (the `openat` Node lacks), so renaming
 * or swapping the folder's name afterwards redirects nothing.
 */
export interface ConfinedDirectory {
  /** The folder itself, as a path that reaches it (its descriptor path in descriptor mode). */
  readonly self: string;
  /** A path that reaches `name` inside this folder. */
  entry(name: string): string;
  /** Fsyncs the folder (after a create, rename or unlink in it). */
  sync(): Promise<void>;
  /** `fstat` of the folder (through its descriptor when it has one). */
  stat(): Promise<Stats>;
}

/** Where a walk ended: the open parent folder and the last name in it. */
export interface ConfinedLocation {
  /** The folder holding `name` (the root when the path is the root). */
  readonly parent: ConfinedDirectory;
  /** The last name; `undefined` when the path is the root itself. */
  readonly name: string | undefined;
  /** The real root-relative path walked (`.` for the root). */
  readonly relative: string;
  /** Closes the descriptors the walk opened (never the root's). */
  release(): Promise<void>;
}

/** A folder opened by {@link ConfinedRoot.openDirectory}; `close` is a no-op for the root. */
export interface OpenedDirectory {
  readonly directory: ConfinedDirectory;
  close(): Promise<void>;
}

/** Options of {@link ConfinedRoot}. */
export interface ConfinedRootOptions {
  readonly confinement: ConfinementMode;
  readonly symlinks: SymlinkPolicy;
  readonly maxSymlinkHops: number;
}

/** How the last component is treated by {@link ConfinedRoot.walk}. */
export interface WalkOptions {
  /** With `follow-inside`, a link as the last component is followed (read, list, stat). */
  readonly followFinal: boolean;
}

class OpenDirectory implements ConfinedDirectory {
  readonly self: string;
  readonly #handle: FileHandle | undefined;

  constructor(self: string, handle: FileHandle | undefined) {
    this.self = self;
    this.#handle = handle;
  }

  entry(name: string): string {
    return `${this.self}/${name}`;
  }

  async sync(): Promise<void> {
    if (this.#handle !== undefined) {
      await this.#handle.sync();
      return;
    }
    // The root: fsync through a short-lived descriptor of the same folder (its descriptor path,
    // or in by-path mode its path).
    const handle = await open(this.self, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  stat(): Promise<Stats> {
    return this.#handle === undefined ? statPath(this.self) : this.#handle.stat();
  }

  get handle(): FileHandle | undefined {
    return this.#handle;
  }
}

/**
 * The root of a `FileSystemTool`, held open for the tool's life. Its device and inode are
 * recorded at construction and re-checked by path on every call ({@link verify}); every path is
 * walked from its descriptor one component at a time with `O_DIRECTORY | O_NOFOLLOW`, each
 * component opened relative to its parent's descriptor.
 */
export class ConfinedRoot {
  /** The real path of the folder opened at construction (the kernel's name for it then). */
  readonly path: string;
  /**
   * The root as configured, made absolute (not resolved): the only absolute spelling of the root
   * a model may send (so a `pathUnder` rule written on it sees every absolute path the tool
   * accepts), re-checked on every call.
   */
  readonly configured: string;

  readonly #fd: number;
  readonly #stat: Stats;
  readonly #mode: ConfinementMode;
  readonly #symlinks: SymlinkPolicy;
  readonly #maxHops: number;
  readonly #root: OpenDirectory;
  #closed = false;
  #inFlight = 0;

  /** Opens the root; throws {@link FileSystemToolOptionsError} when it cannot be confined. */
  constructor(root: string, options: ConfinedRootOptions) {
    this.#mode = options.confinement;
    this.#symlinks = options.symlinks;
    this.#maxHops = options.maxSymlinkHops;
    // Open first, then name what was opened: a path taken before the open (realpath, then open
    // by it) can name one folder while the descriptor holds another, when a parent of the root
    // is swapped for a link in between.
    let fd: number;
    try {
      fd = openSync(root, constants.O_RDONLY | constants.O_DIRECTORY);
    } catch (error) {
      throw new FileSystemToolOptionsError(
        codeOf(error) === 'ENOTDIR' ? 'root must be a folder.' : 'root must be an existing folder.',
        { details: { option: 'root' }, cause: error },
      );
    }
    this.#fd = fd;
    this.#stat = fstatSync(fd);
    this.configured = resolvePath(root);
    const path = this.#realPathOfDescriptor(root);
    if (
      path === undefined ||
      !this.#names(path, lstatSync) ||
      !this.#names(this.configured, statSync)
    ) {
      closeSync(fd);
      throw new FileSystemToolOptionsError(
        'root does not name the folder that was opened: it was moved or replaced while the ' +
          'tool was being created, or a ".." after a link in it leads elsewhere than the same ' +
          'text read without links; nothing was accessed. Write root without ".." after a link, ' +
          'and create the tool again.',
        { details: { option: 'root', reason: 'root-changed' } },
      );
    }
    this.path = path;
    if (this.#mode === 'descriptor' && !this.#procWorks()) {
      closeSync(fd);
      throw new FileSystemToolOptionsError(
        'FileSystemTool needs /proc/self/fd (Linux with /proc mounted) to confine paths by ' +
          "descriptor. Mount /proc, or pass confinement: 'by-path' to accept the weaker, " +
          'race-prone mode the README describes.',
        { details: { option: 'confinement', reason: 'no-proc-self-fd' } },
      );
    }
    const self = this.#mode === 'descriptor' ? `/proc/self/fd/${fd}` : this.path;
    this.#root = new OpenDirectory(self, undefined);
  }

  /**
   * The real path of the folder the descriptor holds: on Linux the kernel's own name for it
   * (`readlink /proc/self/fd/<fd>`), elsewhere `realpath` of `root` (compared by identity after).
   */
  #realPathOfDescriptor(root: string): string | undefined {
    try {
      const named = readlinkSync(`/proc/self/fd/${this.#fd}`);
      if (named.startsWith('/')) return named;
    } catch {
      // No /proc: fall back to realpath, which the identity check then holds to the descriptor.
    }
    try {
      return realpathSync(root);
    } catch {
      return undefined;
    }
  }

  /** True when `path` names (through `look`: `lstat` or `stat`) the folder held open. */
  #names(path: string, look: (path: string) => Stats): boolean {
    try {
      const stat = look(path);
      return stat.isDirectory() && sameFile(stat, this.#stat);
    } catch {
      return false;
    }
  }

  #procWorks(): boolean {
    if (process.platform !== 'linux') return false;
    const self = `/proc/self/fd/${this.#fd}`;
    try {
      return existsSync(self) && sameFile(statSync(self), this.#stat);
    } catch {
      return false;
    }
  }

  /**
   * Marks the root closed: {@link begin} fails from now on. The descriptor itself is closed once
   * the calls already begun have ended, so none of them ever reaches `/proc/self/fd/<n>` after the
   * number was handed to a descriptor opened elsewhere (another tool's root). Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#inFlight === 0) closeSync(this.#fd);
  }

  /**
   * Starts a call: refuses it (`FS_IO_ERROR`) after {@link close}, else holds the descriptor open
   * until the matching {@link end}.
   */
  begin(): void {
    if (this.#closed) {
      throw new FileSystemAccessError(
        'This FileSystemTool was closed; create a new one.',
        'FS_IO_ERROR',
      );
    }
    this.#inFlight += 1;
  }

  /** Ends a call {@link begin} started; the last one to end after {@link close} closes the root. */
  end(): void {
    this.#inFlight -= 1;
    if (this.#closed && this.#inFlight === 0) closeSync(this.#fd);
  }

  /**
   * Refuses the call (`FS_ROOT_CHANGED`) when the root's path no longer names the folder opened
   * at construction (moved, or replaced by a link).
   */
  async verify(): Promise<void> {
    // The real path must still name the folder held open (lstat: not a link now), and so must
    // the path as configured (stat: through its links), the only absolute spelling accepted.
    const names = async (path: string, look: typeof lstat): Promise<boolean> => {
      try {
        const current = await look(path);
        return current.isDirectory() && sameFile(current, this.#stat);
      } catch {
        return false;
      }
    };
    if (
      !(await names(this.path, lstat)) ||
      (this.configured !== this.path && !(await names(this.configured, statPath)))
    ) {
      throw new FileSystemAccessError(
        'The workspace root was moved or replaced after the tool was created; nothing was ' +
          'accessed. Recreate the tool for the new folder.',
        'FS_ROOT_CHANGED',
      );
    }
  }

  /**
   * Walks `segments` (from `normalisePath`; `..` only with `follow-inside`) from the root's
   * descriptor. Every folder component is opened with `O_DIRECTORY | O_NOFOLLOW` inside its
   * parent's descriptor. A link is refused (`FS_SYMLINK_REFUSED`), or with `follow-inside`
   * followed through the same walk: relative targets from the link's folder, absolute ones only
   * when they name a place under the root, `..` through the kernel's real parent and never above
   * the root, at most `maxSymlinkHops` links. The last component is not opened; see
   * {@link WalkOptions.followFinal}.
   */
  async walk(segments: readonly string[], options: WalkOptions): Promise<ConfinedLocation> {
    // Each pending segment remembers the link it came from, so a refusal can name that link.
    const queue: { segment: string; link: string | undefined }[] = segments.map((segment) => ({
      segment,
      link: undefined,
    }));
    const requested = segments.join('/') || '.';
    let current: OpenDirectory = this.#root;
    // Real names from the root to `current`, with identities only where `..` may need them.
    const names: string[] = [];
    const identities: Stats[] = [this.#stat];
    const follow = this.#symlinks === 'follow-inside';
    let hops = 0;
    const closeCurrent = async (): Promise<void> => {
      const handle = current.handle;
      current = this.#root;
      await handle?.close();
    };
    const enter = async (path: string, name: string): Promise<void> => {
      const handle = await open(path, DIRECTORY_FLAGS);
      let stat: Stats | undefined;
      if (follow) {
        try {
          stat = await handle.stat();
        } catch (error) {
          await handle.close();
          throw error;
        }
      }
      const next = new OpenDirectory(
        this.#mode === 'descriptor' ? `/proc/self/fd/${handle.fd}` : path,
        handle,
      );
      await closeCurrent();
      current = next;
      names.push(name);
      if (stat !== undefined) identities.push(stat);
    };
    const fail = (message: string, code: ConstructorParameters<typeof FileSystemAccessError>[1]) =>
      new FileSystemAccessError(message, code);
    const shown = (name: string): string => quoteForMessage([...names, name].join('/'));
    const followLink = async (name: string): Promise<void> => {
      const link = [...names, name].join('/');
      hops += 1;
      if (hops > this.#maxHops) {
        throw fail(
          `The path ${quoteForMessage(requested)} goes through more than ${this.#maxHops} ` +
            'symbolic links (maxSymlinkHops); send the path they lead to, relative to the root.',
          'FS_SYMLINK_REFUSED',
        );
      }
      let target: string;
      try {
        target = await readlink(current.entry(name));
      } catch {
        throw fail(
          `${shown(name)} changed while the path was being walked; retry.`,
          'FS_CHANGED_DURING_ACCESS',
        );
      }
      let parts = target.split('/');
      if (target.startsWith('/')) {
        const prefix = this.path === '/' ? '' : this.path;
        if (target !== prefix && !target.startsWith(`${prefix}/`)) {
          throw fail(
            `The symbolic link ${shown(name)} points outside the workspace root; only links ` +
              'that stay inside are followed.',
            'FS_SYMLINK_REFUSED',
          );
        }
        parts = target.slice(prefix.length).split('/');
        await closeCurrent();
        names.length = 0;
        identities.length = 1;
      }
      queue.unshift(
        ...parts
          .filter((part) => part !== '' && part !== '.')
          .map((segment) => ({ segment, link })),
      );
    };
    const refuseLink = (name: string): never => {
      throw fail(
        `${shown(name)} is a symbolic link, and links are refused by default. Send the path ` +
          'it points to, relative to the root, or build the tool with symlinks: ' +
          "'follow-inside' to follow links that stay inside the root.",
        'FS_SYMLINK_REFUSED',
      );
    };
    try {
      while (queue.length > 0) {
        const { segment, link } = queue.shift() as { segment: string; link: string | undefined };
        if (segment === '..') {
          if (names.length === 0) {
            if (link !== undefined) {
              throw fail(
                `The symbolic link ${quoteForMessage(link)} points outside the workspace root; ` +
                  'only links that stay inside are followed.',
                'FS_SYMLINK_REFUSED',
              );
            }
            throw fail(
              `The path ${quoteForMessage(requested)} leaves the workspace root through "..".`,
              'FS_PATH_INVALID',
            );
          }
          const expected = identities[identities.length - 2] as Stats;
          const parentPath = current.entry('..');
          names.pop();
          identities.pop();
          const handle = await open(parentPath, DIRECTORY_FLAGS);
          const stat = await handle.stat().catch(async (error: unknown) => {
            await handle.close();
            throw error;
          });
          if (!sameFile(stat, expected)) {
            await handle.close();
            throw fail(
              `A folder in ${quoteForMessage(requested)} was moved while the path was being walked; retry.`,
              'FS_CHANGED_DURING_ACCESS',
            );
          }
          await closeCurrent();
          if (names.length === 0) {
            await handle.close();
          } else {
            current = new OpenDirectory(
              this.#mode === 'descriptor' ? `/proc/self/fd/${handle.fd}` : parentPath,
              handle,
            );
          }
          continue;
        }
        const last = queue.length === 0;
        if (last) {
          if (follow && options.followFinal) {
            let stat: Stats | undefined;
            try {
              stat = await lstat(current.entry(segment));
            } catch {
              stat = undefined;
            }
            if (stat?.isSymbolicLink()) {
              await followLink(segment);
              continue;
            }
          }
          const location = current;
          const relative = [...names, segment].join('/');
          return {
            parent: location,
            name: segment,
            relative,
            release: async () => {
              await location.handle?.close();
            },
          };
        }
        const path = current.entry(segment);
        try {
          await enter(path, segment);
        } catch (error) {
          const code = codeOf(error);
          if (code === 'ENOTDIR' || code === 'ELOOP') {
            let stat: Stats | undefined;
            try {
              stat = await lstat(path);
            } catch {
              stat = undefined;
            }
            if (stat?.isSymbolicLink()) {
              if (!follow) refuseLink(segment);
              await followLink(segment);
              continue;
            }
            if (stat === undefined || stat.isDirectory()) {
              throw fail(
                `${shown(segment)} changed while the path was being walked; retry.`,
                'FS_CHANGED_DURING_ACCESS',
              );
            }
            throw fail(
              `${shown(segment)} is not a folder, so ${quoteForMessage(requested)} cannot be inside it.`,
              'FS_NOT_A_DIRECTORY',
            );
          }
          if (code === 'ENOENT') {
            throw fail(
              `The folder ${shown(segment)} does not exist. Use list to see what the root holds.`,
              'FS_NOT_FOUND',
            );
          }
          if (code === 'EACCES' || code === 'EPERM') {
            throw fail(`The folder ${shown(segment)} is not readable.`, 'FS_IO_ERROR');
          }
          throw new FileSystemAccessError('The path could not be walked.', 'FS_IO_ERROR', {
            cause: error,
          });
        }
      }
      const location = current;
      return {
        parent: location,
        name: undefined,
        relative: names.length === 0 ? '.' : names.join('/'),
        release: async () => {
          await location.handle?.close();
        },
      };
    } catch (error) {
      await closeCurrent();
      throw error;
    }
  }

  /**
   * Opens the folder a walk ended at (the root itself when `location.name` is undefined) with
   * `O_DIRECTORY | O_NOFOLLOW` inside its parent's descriptor. Refuses a link, a non-folder and
   * a missing name with messages naming `location.relative`.
   */
  async openDirectory(location: ConfinedLocation): Promise<OpenedDirectory> {
    if (location.name === undefined) return { directory: location.parent, close: async () => {} };
    return this.openChild(location.parent, location.name, location.relative);
  }

  /** Opens folder `name` inside `parent` as {@link openDirectory} does; `relative` names it. */
  async openChild(
    parent: ConfinedDirectory,
    name: string,
    relative: string,
  ): Promise<OpenedDirectory> {
    const path = parent.entry(name);
    let handle: FileHandle;
    try {
      handle = await open(path, DIRECTORY_FLAGS);
    } catch (error) {
      const code = codeOf(error);
      if (code === 'ENOENT') {
        throw new FileSystemAccessError(
          `The folder ${quoteForMessage(relative)} does not exist. Use list to see what the root holds.`,
          'FS_NOT_FOUND',
        );
      }
      if (code === 'ENOTDIR' || code === 'ELOOP') {
        const stat = await lstat(path).catch(() => undefined);
        if (stat?.isSymbolicLink()) this.refuseLink(relative);
        if (stat === undefined || stat.isDirectory()) {
          throw new FileSystemAccessError(
            `${quoteForMessage(relative)} changed while it was being opened; retry.`,
            'FS_CHANGED_DURING_ACCESS',
          );
        }
        throw new FileSystemAccessError(
          `${quoteForMessage(relative)} is not a folder.`,
          'FS_NOT_A_DIRECTORY',
        );
      }
      throw new FileSystemAccessError('The folder could not be opened.', 'FS_IO_ERROR', {
        cause: error,
      });
    }
    const directory = new OpenDirectory(
      this.#mode === 'descriptor' ? `/proc/self/fd/${handle.fd}` : path,
      handle,
    );
    return { directory, close: () => handle.close() };
  }

  /**
   * Opens the folder `levels` above `from` again (`<from>/..`, through the kernel's real parent,
   * with `O_DIRECTORY | O_NOFOLLOW`), for a walk that closed it to bound the descriptors it holds.
   * Refuses (`FS_CHANGED_DURING_ACCESS`, naming `relative`) unless it is the folder `expected`
   * describes (device and inode): a folder moved meanwhile is not walked from its new place.
   */
  async openAncestor(
    from: ConfinedDirectory,
    levels: number,
    expected: Stats,
    relative: string,
  ): Promise<OpenedDirectory> {
    const moved = (cause?: unknown) =>
      new FileSystemAccessError(
        `The folder ${quoteForMessage(relative || '.')} was moved while it was being walked; retry.`,
        'FS_CHANGED_DURING_ACCESS',
        cause === undefined ? undefined : { cause },
      );
    const path = `${from.self}${'/..'.repeat(levels)}`;
    let handle: FileHandle;
    try {
      handle = await open(path, DIRECTORY_FLAGS);
    } catch (error) {
      throw moved(error);
    }
    try {
      if (!sameFile(await handle.stat(), expected)) throw moved();
    } catch (error) {
      await handle.close();
      throw error;
    }
    const directory = new OpenDirectory(
      this.#mode === 'descriptor' ? `/proc/self/fd/${handle.fd}` : path,
      handle,
    );
    return { directory, close: () => handle.close() };
  }

  /** Refuses a link found as the last component (the message names the option). */
  refuseLink(relative: string): never {
    if (this.#symlinks === 'follow-inside') {
      throw new FileSystemAccessError(
        `${quoteForMessage(relative)} is a symbolic link; this operation acts on real files and folders only.`,
        'FS_SYMLINK_REFUSED',
      );
    }
    throw new FileSystemAccessError(
      `${quoteForMessage(relative)} is a symbolic link, and links are refused by default. Send ` +
        'the path it points to, relative to the root, or build the tool with symlinks: ' +
        "'follow-inside' to follow links that stay inside the root.",
      'FS_SYMLINK_REFUSED',
    );
  }
}
