import { randomBytes } from 'node:crypto';
import { constants, realpathSync, type Stats, statSync } from 'node:fs';
import {
  type FileHandle,
  link,
  lstat,
  mkdir,
  open,
  opendir,
  rename,
  rmdir,
  unlink,
} from 'node:fs/promises';
import type { JsonObject, Tool, ToolContext, ToolResult, ToolSpec } from '../registry/tool.js';
import { errorResult, jsonResult } from '../registry/tool.js';
import {
  openVerifiedDirectory,
  parseRelativePath,
  type ResolvedPath,
  resolveInside,
  sameFile,
  type VerifiedDirectory,
} from './confined-path.js';
import { FileSystemAccessError } from './file-system-error.js';
import { FileSystemToolOptionsError } from './file-system-tool-options-error.js';
import { compileGlob } from './glob-pattern.js';

/** Options of {@link FileSystemTool}. */
export interface FileSystemToolOptions {
  /** The folder the tool is confined to; its real path is taken once, at construction. */
  readonly root: string;
  /** Tool name in a registry. Default `filesystem`. */
  readonly name?: string;
  /** Enables `write`, `mkdir`, `delete` and `move`. Default `false`. */
  readonly allowWrite?: boolean;
  /** Most bytes one `read` returns (reading stops there and flags `truncated`). Default 1,000,000. */
  readonly maxReadBytes?: number;
  /** Most bytes one `write` accepts (larger content is refused before anything is written). Default 1,000,000. */
  readonly maxWriteBytes?: number;
  /** Most entries one `list` returns (then `truncated`). Default 1,000. */
  readonly maxListEntries?: number;
  /** Most matches one `glob` returns (then `truncated`). Default 1,000. */
  readonly maxGlobResults?: number;
  /** Most folder entries one `glob` visits before it stops (then `truncated`). Default 100,000. */
  readonly maxGlobVisited?: number;
  /** Allow reading files with more than one hard link (their content may live outside the root). Default `false`. */
  readonly allowHardLinks?: boolean;
}

/** Operations of {@link FileSystemTool}. */
export const FILE_SYSTEM_OPERATIONS = [
  'read',
  'list',
  'exists',
  'stat',
  'glob',
  'write',
  'mkdir',
  'delete',
  'move',
] as const;

/** One of {@link FILE_SYSTEM_OPERATIONS}. */
export type FileSystemOperation = (typeof FILE_SYSTEM_OPERATIONS)[number];

const WRITE_OPERATIONS: ReadonlySet<string> = new Set(['write', 'mkdir', 'delete', 'move']);
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const READ_CHUNK = 1024 * 1024;

function limit(
  options: FileSystemToolOptions,
  key: keyof FileSystemToolOptions,
  fallback: number,
): number {
  const value = options[key];
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
    throw new FileSystemToolOptionsError(`${key} must be a positive safe integer.`, {
      details: { option: key },
    });
  }
  return value;
}

function flag(options: FileSystemToolOptions, key: 'allowWrite' | 'allowHardLinks'): boolean {
  const value = options[key];
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new FileSystemToolOptionsError(`${key} must be a boolean.`, { details: { option: key } });
  }
  return value;
}

function typeOf(stat: Stats): string {
  if (stat.isFile()) return 'file';
  if (stat.isDirectory()) return 'directory';
  if (stat.isSymbolicLink()) return 'symlink';
  return 'other';
}

function codeOf(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : undefined;
}

function fail(
  message: string,
  code: ConstructorParameters<typeof FileSystemAccessError>[1],
): never {
  throw new FileSystemAccessError(message, code);
}

function stringArgument(args: JsonObject, key: string, fallback?: string): string {
  const value = args[key];
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'string')
    fail(`The argument ${key} must be a string.`, 'FS_INVALID_ARGUMENTS');
  return value;
}

/**
 * A filesystem tool confined to one root folder.
 *
 * Paths are root-relative POSIX strings, checked lexically, then walked from the root's real
 * path with `lstat`; every symbolic link is refused, inside the root too. Files are opened with
 * `O_NOFOLLOW` and `fstat` must match the walked file (device and inode); folders are opened with
 * `O_DIRECTORY | O_NOFOLLOW` and, on Linux, used through their descriptor. Writes are atomic
 * (exclusive temp file, fsync, rename, folder fsync). See the package README for the security
 * model and its limits.
 */
export class FileSystemTool implements Tool {
  /** Name, description, input schema and risk of the tool as the registry and models see it. */
  readonly spec: ToolSpec;
  readonly #root: string;
  readonly #rootStat: Stats;
  readonly #allowWrite: boolean;
  readonly #allowHardLinks: boolean;
  readonly #maxReadBytes: number;
  readonly #maxWriteBytes: number;
  readonly #maxListEntries: number;
  readonly #maxGlobResults: number;
  readonly #maxGlobVisited: number;

  /**
   * Resolves `root` (following symlinks once, here) and checks the options. Throws
   * {@link FileSystemToolOptionsError} for an invalid option or a `root` that is not a folder.
   */
  constructor(options: FileSystemToolOptions) {
    if (typeof options !== 'object' || options === null) {
      throw new FileSystemToolOptionsError('FileSystemTool needs an options object.');
    }
    if (typeof options.root !== 'string' || options.root === '' || options.root.includes('\0')) {
      throw new FileSystemToolOptionsError('root must be a non-empty path.', {
        details: { option: 'root' },
      });
    }
    const name = options.name ?? 'filesystem';
    if (typeof name !== 'string' || !/^[a-zA-Z0-9_.-]{1,64}$/.test(name)) {
      throw new FileSystemToolOptionsError('name must be 1-64 letters, digits, _ . or -.', {
        details: { option: 'name' },
      });
    }
    this.#allowWrite = flag(options, 'allowWrite');
    this.#allowHardLinks = flag(options, 'allowHardLinks');
    this.#maxReadBytes = limit(options, 'maxReadBytes', 1_000_000);
    this.#maxWriteBytes = limit(options, 'maxWriteBytes', 1_000_000);
    this.#maxListEntries = limit(options, 'maxListEntries', 1_000);
    this.#maxGlobResults = limit(options, 'maxGlobResults', 1_000);
    this.#maxGlobVisited = limit(options, 'maxGlobVisited', 100_000);
    try {
      this.#root = realpathSync(options.root);
      this.#rootStat = statSync(this.#root);
    } catch (error) {
      throw new FileSystemToolOptionsError('root must be an existing folder.', {
        details: { option: 'root' },
        cause: error,
      });
    }
    if (!this.#rootStat.isDirectory()) {
      throw new FileSystemToolOptionsError('root must be a folder.', {
        details: { option: 'root' },
      });
    }
    const operations = this.#allowWrite
      ? FILE_SYSTEM_OPERATIONS
      : FILE_SYSTEM_OPERATIONS.filter((operation) => !WRITE_OPERATIONS.has(operation));
    const byValue: Record<string, 'read' | 'write'> = {};
    for (const operation of FILE_SYSTEM_OPERATIONS) {
      byValue[operation] = WRITE_OPERATIONS.has(operation) ? 'write' : 'read';
    }
    this.spec = Object.freeze({
      name,
      description:
        'Reads, lists, searches' +
        (this.#allowWrite ? ', writes, moves and deletes' : '') +
        ' files inside one root folder. Paths are relative to the root, use "/" and never "..".',
      inputSchema: {
        type: 'object',
        properties: {
          operation: { type: 'string', enum: [...operations] },
          path: { type: 'string', description: 'Root-relative path; "." is the root.' },
          destination: { type: 'string', description: 'Root-relative target of move.' },
          content: { type: 'string', description: 'Content of write (text, or base64).' },
          encoding: { type: 'string', enum: ['utf8', 'base64'], default: 'utf8' },
          pattern: { type: 'string', description: 'Glob (*, ?, **) relative to path.' },
          overwrite: { type: 'boolean', default: false, description: 'move: replace a file.' },
        },
        required: ['operation'],
        additionalProperties: false,
      },
      effect: Object.freeze({
        default: 'write',
        argument: 'operation',
        byValue: Object.freeze(byValue),
      }),
      operationArgument: 'operation',
      annotations: {
        readOnlyHint: !this.#allowWrite,
        destructiveHint: this.#allowWrite,
        openWorldHint: false,
      },
    });
  }

  /** The root's real path, as taken at construction. */
  get root(): string {
    return this.#root;
  }

  async invoke(args: JsonObject, context: ToolContext): Promise<ToolResult> {
    const operation = args.operation;
    try {
      if (context?.signal?.aborted) fail('The call was cancelled.', 'FS_IO_ERROR');
      if (
        typeof operation !== 'string' ||
        !(FILE_SYSTEM_OPERATIONS as readonly string[]).includes(operation)
      ) {
        fail('Unknown operation.', 'FS_INVALID_ARGUMENTS');
      }
      if (WRITE_OPERATIONS.has(operation) && !this.#allowWrite) {
        fail('Writing is disabled for this tool.', 'FS_WRITE_DISABLED');
      }
      return jsonResult(await this.#run(operation as FileSystemOperation, args), {
        metadata: { operation },
      });
    } catch (error) {
      if (FileSystemAccessError.isInstance(error)) {
        return errorResult(error.message, {
          metadata: {
            code: error.code,
            operation: typeof operation === 'string' ? operation : null,
          },
        });
      }
      const raced = ['ENOENT', 'ENOTDIR', 'ELOOP'].includes(codeOf(error) ?? '');
      return errorResult(
        raced ? 'The path changed while it was being used.' : 'The filesystem operation failed.',
        {
          metadata: {
            code: raced ? 'FS_CHANGED_DURING_ACCESS' : 'FS_IO_ERROR',
            operation: typeof operation === 'string' ? operation : null,
          },
        },
      );
    }
  }

  #resolve(path: string, allowMissing = false): Promise<ResolvedPath> {
    return resolveInside(this.#root, this.#rootStat, parseRelativePath(path), { allowMissing });
  }

  async #run(operation: FileSystemOperation, args: JsonObject): Promise<JsonObject> {
    switch (operation) {
      case 'read':
        return this.#read(stringArgument(args, 'path'), stringArgument(args, 'encoding', 'utf8'));
      case 'list':
        return this.#list(stringArgument(args, 'path', '.'));
      case 'exists':
        return this.#exists(stringArgument(args, 'path'));
      case 'stat':
        return this.#stat(stringArgument(args, 'path'));
      case 'glob':
        return this.#glob(stringArgument(args, 'path', '.'), stringArgument(args, 'pattern'));
      case 'write':
        return this.#write(
          stringArgument(args, 'path'),
          stringArgument(args, 'content'),
          stringArgument(args, 'encoding', 'utf8'),
        );
      case 'mkdir':
        return this.#mkdir(stringArgument(args, 'path'));
      case 'delete':
        return this.#delete(stringArgument(args, 'path'));
      case 'move':
        return this.#move(
          stringArgument(args, 'path'),
          stringArgument(args, 'destination'),
          args.overwrite === true,
        );
    }
  }

  async #read(path: string, encoding: string): Promise<JsonObject> {
    if (encoding !== 'utf8' && encoding !== 'base64')
      fail('encoding must be utf8 or base64.', 'FS_INVALID_ARGUMENTS');
    const resolved = await this.#resolve(path);
    const expected = resolved.stat as Stats;
    if (!expected.isFile()) fail('The path is not a regular file.', 'FS_NOT_A_FILE');
    let handle: FileHandle;
    try {
      handle = await open(
        resolved.absolute,
        constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
      );
    } catch (error) {
      if (codeOf(error) === 'ELOOP')
        fail('The file changed while it was being read.', 'FS_CHANGED_DURING_ACCESS');
      throw error;
    }
    try {
      const actual = await handle.stat();
      if (!actual.isFile() || !sameFile(actual, expected)) {
        fail('The file changed while it was being read.', 'FS_CHANGED_DURING_ACCESS');
      }
      if (actual.nlink > 1 && !this.#allowHardLinks) {
        fail('The file has more than one hard link.', 'FS_HARD_LINK_REFUSED');
      }
      const max = this.#maxReadBytes;
      // Reads at most max + 1 bytes whatever the size claims, so growth is caught while reading.
      let buffer = Buffer.allocUnsafe(Math.min(actual.size, max) + 1);
      let length = 0;
      for (;;) {
        if (length === buffer.length) {
          if (length > max) break;
          const grown = Buffer.allocUnsafe(Math.min(buffer.length + READ_CHUNK, max + 1));
          buffer.copy(grown, 0, 0, length);
          buffer = grown;
        }
        const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
        if (bytesRead === 0) break;
        length += bytesRead;
      }
      const truncated = length > max;
      const bytes = buffer.subarray(0, Math.min(length, max));
      return {
        path: resolved.relative,
        encoding,
        content: encoding === 'base64' ? bytes.toString('base64') : bytes.toString('utf8'),
        bytes: bytes.length,
        truncated,
      };
    } finally {
      await handle.close();
    }
  }

  async #openFolder(path: string): Promise<{ resolved: ResolvedPath; folder: VerifiedDirectory }> {
    const resolved = await this.#resolve(path);
    const stat = resolved.stat as Stats;
    if (!stat.isDirectory()) fail('The path is not a folder.', 'FS_NOT_A_DIRECTORY');
    return { resolved, folder: await openVerifiedDirectory(resolved.absolute, stat) };
  }

  async #list(path: string): Promise<JsonObject> {
    const { resolved, folder } = await this.#openFolder(path);
    const entries: { name: string; type: string }[] = [];
    let truncated = false;
    try {
      const directory = await opendir(folder.self);
      for await (const entry of directory) {
        if (entries.length >= this.#maxListEntries) {
          truncated = true;
          break;
        }
        const type = entry.isFile()
          ? 'file'
          : entry.isDirectory()
            ? 'directory'
            : entry.isSymbolicLink()
              ? 'symlink'
              : 'other';
        entries.push({ name: entry.name, type });
      }
    } finally {
      await folder.close();
    }
    entries.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
    return { path: resolved.relative, entries, truncated };
  }

  async #exists(path: string): Promise<JsonObject> {
    let resolved: ResolvedPath;
    try {
      resolved = await this.#resolve(path, true);
    } catch (error) {
      if (FileSystemAccessError.isInstance(error) && error.code === 'FS_NOT_FOUND') {
        return { path, exists: false };
      }
      throw error;
    }
    return {
      path: resolved.relative,
      exists: resolved.stat !== undefined,
      ...(resolved.stat === undefined ? {} : { type: typeOf(resolved.stat) }),
    };
  }

  async #stat(path: string): Promise<JsonObject> {
    const resolved = await this.#resolve(path);
    const stat = resolved.stat as Stats;
    return {
      path: resolved.relative,
      type: typeOf(stat),
      size: stat.size,
      mode: (stat.mode & 0o7777).toString(8).padStart(4, '0'),
      links: stat.nlink,
      modifiedAt: stat.mtime.toISOString(),
    };
  }

  async #glob(path: string, pattern: string): Promise<JsonObject> {
    const matches = compileGlob(pattern);
    const { resolved, folder: start } = await this.#openFolder(path);
    const state = { results: [] as string[], visited: 0, truncated: false };
    // Depth first, so at most one open descriptor per level; every child folder is reached
    // through its parent's descriptor and checked (device and inode) before it is read.
    const walk = async (folder: VerifiedDirectory, relative: string): Promise<void> => {
      const names: { name: string; directory: boolean }[] = [];
      const directory = await opendir(folder.self);
      for await (const entry of directory) {
        state.visited += 1;
        if (state.visited > this.#maxGlobVisited) {
          state.truncated = true;
          break;
        }
        if (entry.isSymbolicLink() || (!entry.isFile() && !entry.isDirectory())) continue;
        names.push({ name: entry.name, directory: entry.isDirectory() });
      }
      names.sort((left, right) => (left.name < right.name ? -1 : 1));
      for (const entry of names) {
        if (state.truncated) return;
        const child = relative === '' ? entry.name : `${relative}/${entry.name}`;
        if (matches(child)) {
          if (state.results.length >= this.#maxGlobResults) {
            state.truncated = true;
            return;
          }
          state.results.push(child);
        }
        if (!entry.directory) continue;
        const location = folder.entry(entry.name);
        const stat = await lstat(location);
        if (!stat.isDirectory()) continue;
        const inner = await openVerifiedDirectory(location, stat);
        try {
          await walk(inner, child);
        } finally {
          await inner.close();
        }
      }
    };
    try {
      await walk(start, '');
    } finally {
      await start.close();
    }
    state.results.sort();
    return {
      path: resolved.relative,
      pattern,
      matches: state.results,
      truncated: state.truncated,
    };
  }

  #decode(content: string, encoding: string): Buffer {
    if (encoding === 'utf8') {
      if (Buffer.byteLength(content, 'utf8') > this.#maxWriteBytes) {
        fail('The content is larger than the write limit.', 'FS_TOO_LARGE');
      }
      return Buffer.from(content, 'utf8');
    }
    if (encoding !== 'base64') fail('encoding must be utf8 or base64.', 'FS_INVALID_ARGUMENTS');
    if (content.length > Math.ceil(this.#maxWriteBytes / 3) * 4 + 4) {
      fail('The content is larger than the write limit.', 'FS_TOO_LARGE');
    }
    if (!BASE64.test(content)) fail('The content is not valid base64.', 'FS_INVALID_ARGUMENTS');
    const bytes = Buffer.from(content, 'base64');
    if (bytes.length > this.#maxWriteBytes)
      fail('The content is larger than the write limit.', 'FS_TOO_LARGE');
    return bytes;
  }

  async #parentOf(resolved: ResolvedPath): Promise<VerifiedDirectory> {
    if (resolved.name === undefined) fail('The root itself cannot be changed.', 'FS_PATH_INVALID');
    return openVerifiedDirectory(resolved.parent, resolved.parentStat);
  }

  async #write(path: string, content: string, encoding: string): Promise<JsonObject> {
    const bytes = this.#decode(content, encoding);
    const resolved = await this.#resolve(path, true);
    const existing = resolved.stat;
    if (existing !== undefined && !existing.isFile())
      fail('The path is not a regular file.', 'FS_NOT_A_FILE');
    const folder = await this.#parentOf(resolved);
    const name = resolved.name as string;
    const temporary = `.${name.slice(0, 100)}.${randomBytes(12).toString('hex')}.tmp`;
    let handle: FileHandle | undefined;
    let created = false;
    try {
      handle = await open(
        folder.entry(temporary),
        constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW,
        0o600,
      );
      created = true;
      let offset = 0;
      while (offset < bytes.length) {
        const { bytesWritten } = await handle.write(bytes, offset, bytes.length - offset, offset);
        offset += bytesWritten;
      }
      await handle.chmod(existing === undefined ? 0o644 : existing.mode & 0o777);
      await handle.sync();
      await handle.close();
      handle = undefined;
      await rename(folder.entry(temporary), folder.entry(name));
      created = false;
      await folder.sync();
    } catch (error) {
      await handle?.close().catch(() => undefined);
      if (created) await unlink(folder.entry(temporary)).catch(() => undefined);
      if (FileSystemAccessError.isInstance(error)) throw error;
      throw new FileSystemAccessError(
        'The file could not be written.',
        codeOf(error) === 'EISDIR' ? 'FS_NOT_A_FILE' : 'FS_IO_ERROR',
        { cause: error },
      );
    } finally {
      await folder.close();
    }
    return { path: resolved.relative, bytes: bytes.length, created: existing === undefined };
  }

  async #mkdir(path: string): Promise<JsonObject> {
    const resolved = await this.#resolve(path, true);
    if (resolved.stat !== undefined) fail('The path already exists.', 'FS_ALREADY_EXISTS');
    const folder = await this.#parentOf(resolved);
    try {
      await mkdir(folder.entry(resolved.name as string), 0o755);
      await folder.sync();
    } catch (error) {
      if (codeOf(error) === 'EEXIST') fail('The path already exists.', 'FS_ALREADY_EXISTS');
      throw error;
    } finally {
      await folder.close();
    }
    return { path: resolved.relative };
  }

  async #delete(path: string): Promise<JsonObject> {
    const resolved = await this.#resolve(path);
    const expected = resolved.stat as Stats;
    const folder = await this.#parentOf(resolved);
    try {
      const target = folder.entry(resolved.name as string);
      const current = await lstat(target);
      if (!sameFile(current, expected) || current.isSymbolicLink()) {
        fail('The path changed while it was being deleted.', 'FS_CHANGED_DURING_ACCESS');
      }
      if (current.isDirectory()) {
        try {
          await rmdir(target);
        } catch (error) {
          if (codeOf(error) === 'ENOTEMPTY' || codeOf(error) === 'EEXIST') {
            fail('The folder is not empty.', 'FS_NOT_EMPTY');
          }
          throw error;
        }
      } else {
        await unlink(target);
      }
      await folder.sync();
      return { path: resolved.relative, type: typeOf(current) };
    } finally {
      await folder.close();
    }
  }

  async #move(path: string, destination: string, overwrite: boolean): Promise<JsonObject> {
    const source = await this.#resolve(path);
    const target = await this.#resolve(destination, true);
    const sourceStat = source.stat as Stats;
    if (!sourceStat.isFile() && !sourceStat.isDirectory())
      fail('Only files and folders can be moved.', 'FS_NOT_A_FILE');
    if (
      target.stat !== undefined &&
      (!overwrite || !target.stat.isFile() || !sourceStat.isFile())
    ) {
      fail('The destination already exists.', 'FS_ALREADY_EXISTS');
    }
    const from = await this.#parentOf(source);
    let to: VerifiedDirectory | undefined;
    try {
      to = await this.#parentOf(target);
      const sourceEntry = from.entry(source.name as string);
      const targetEntry = to.entry(target.name as string);
      const current = await lstat(sourceEntry);
      if (!sameFile(current, sourceStat))
        fail('The path changed while it was being moved.', 'FS_CHANGED_DURING_ACCESS');
      if (sourceStat.isFile() && !overwrite) {
        // link() never replaces an existing name, so a file planted meanwhile is not clobbered.
        try {
          await link(sourceEntry, targetEntry);
        } catch (error) {
          if (codeOf(error) === 'EEXIST')
            fail('The destination already exists.', 'FS_ALREADY_EXISTS');
          throw error;
        }
        await unlink(sourceEntry);
      } else {
        await rename(sourceEntry, targetEntry);
      }
      await from.sync();
      await to.sync();
    } catch (error) {
      if (FileSystemAccessError.isInstance(error)) throw error;
      if (codeOf(error) === 'EINVAL')
        fail('A folder cannot move into itself.', 'FS_INVALID_ARGUMENTS');
      throw error;
    } finally {
      await from.close();
      await to?.close();
    }
    return { from: source.relative, to: target.relative };
  }
}
