import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import {
  type FileHandle,
  link,
  lstat,
  mkdir,
  open,
  opendir,
  rename,
  rmdir,
  stat as statPath,
  unlink,
} from 'node:fs/promises';
import { defineContract, type RiskLevel, type ToolContract } from '@toolfence/tool-contract';
import { checkOptionKeys, ownOptions } from '../registry/option-keys.js';
import type { JsonObject, Tool, ToolContext, ToolResult, ToolSpec } from '../registry/tool.js';
import { errorResult, jsonResult } from '../registry/tool.js';
import { ACCEPTED_PATH_FORM, normalisePath, quoteForMessage } from './confined-path.js';
import {
  type ConfinedDirectory,
  type ConfinedLocation,
  ConfinedRoot,
  type ConfinementMode,
  type OpenedDirectory,
  type SymlinkPolicy,
} from './confined-root.js';
import { FileSystemAccessError } from './file-system-error.js';
import { FileSystemToolOptionsError } from './file-system-tool-options-error.js';
import { compileGlob } from './glob-pattern.js';

/** Options of {@link FileSystemTool}. Unknown keys are refused. */
export interface FileSystemToolOptions {
  /** The folder the tool is confined to; opened once, at construction, and held open. */
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
  /**
   * Most folder levels one `glob` walks below the folder it starts in: a match has at most this
   * many segments, and a folder whose entries would lie deeper is not entered (then `truncated`).
   * Default 64.
   */
  readonly maxGlobDepth?: number;
  /** Allow reading files with more than one hard link (their content may live outside the root). Default `false`. */
  readonly allowHardLinks?: boolean;
  /**
   * Symbolic links: `'refuse'` (default) refuses every link, inside the root too;
   * `'follow-inside'` follows a link through the descriptor walk only while every step stays
   * inside the root, at most `maxSymlinkHops` links per path.
   */
  readonly symlinks?: 'refuse' | 'follow-inside';
  /** Most links one path may go through with `symlinks: 'follow-inside'`. Default 8. */
  readonly maxSymlinkHops?: number;
  /**
   * Also refuse names Windows cannot hold (`con`, `aux`, `nul`..., a trailing dot or space,
   * `<>:"|?*`), for hosts that sync the workspace to Windows. Default `false`.
   */
  readonly portableNames?: boolean;
  /**
   * `'descriptor'` (default) needs `/proc/self/fd` (Linux) and confines every path by
   * descriptor; construction fails without it. `'by-path'` is the documented weaker mode for
   * other platforms: folders are reached by path and re-checked, so a concurrent swap of a folder
   * for a link can redirect an operation.
   */
  readonly confinement?: 'descriptor' | 'by-path';
}

const FILE_SYSTEM_OPERATIONS_VALUES = [
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

/** Operations of {@link FileSystemTool}. */
export const FILE_SYSTEM_OPERATIONS: typeof FILE_SYSTEM_OPERATIONS_VALUES = Object.freeze(
  FILE_SYSTEM_OPERATIONS_VALUES,
);

/** One of {@link FILE_SYSTEM_OPERATIONS}. */
export type FileSystemOperation = (typeof FILE_SYSTEM_OPERATIONS)[number];

const WRITE_OPERATIONS: ReadonlySet<string> = new Set(['write', 'mkdir', 'delete', 'move']);

/**
 * The risk of each operation of a writable {@link FileSystemTool}, as its per-operation contracts
 * declare it. `write` may replace an existing file (atomically), so it is a high-risk write, not
 * a low one; `move` with `overwrite: true` (the `move-overwrite` operation) and `delete` lose data
 * for good. Every read is `read-only`.
 */
export const FILE_SYSTEM_OPERATION_RISKS: Readonly<Record<string, RiskLevel>> = Object.freeze({
  read: 'read-only',
  list: 'read-only',
  exists: 'read-only',
  stat: 'read-only',
  glob: 'read-only',
  mkdir: 'low-risk-write',
  write: 'high-risk-write',
  move: 'high-risk-write',
  'move-overwrite': 'destructive',
  delete: 'destructive',
});

/**
 * The operation a call performs, exactly as {@link FileSystemTool.invoke} picks it (a move with
 * `overwrite: true` is `move-overwrite`); undefined when the arguments name none.
 */
function operationOf(args: JsonObject): string | undefined {
  const operation = args.operation;
  if (
    typeof operation !== 'string' ||
    !(FILE_SYSTEM_OPERATIONS as readonly string[]).includes(operation)
  ) {
    return undefined;
  }
  return operation === 'move' && args.overwrite === true ? 'move-overwrite' : operation;
}
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const READ_CHUNK = 1024 * 1024;
const FILE_FLAGS =
  constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY;

const OPTION_KEYS: readonly string[] = [
  'root',
  'name',
  'allowWrite',
  'maxReadBytes',
  'maxWriteBytes',
  'maxListEntries',
  'maxGlobResults',
  'maxGlobVisited',
  'maxGlobDepth',
  'allowHardLinks',
  'symlinks',
  'maxSymlinkHops',
  'portableNames',
  'confinement',
];

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

function flag(
  options: FileSystemToolOptions,
  key: 'allowWrite' | 'allowHardLinks' | 'portableNames',
): boolean {
  const value = options[key];
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new FileSystemToolOptionsError(`${key} must be a boolean.`, { details: { option: key } });
  }
  return value;
}

function choice<Value extends string>(
  options: FileSystemToolOptions,
  key: 'symlinks' | 'confinement',
  allowed: readonly Value[],
): Value {
  const value: unknown = options[key] ?? allowed[0];
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new FileSystemToolOptionsError(
      `${key} must be one of ${allowed.map((item) => `'${item}'`).join(', ')}.`,
      { details: { option: key } },
    );
  }
  return value as Value;
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

function sameFile(left: Stats, right: Stats): boolean {
  return left.dev === right.dev && left.ino === right.ino;
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
  if (typeof value !== 'string') {
    const example = key === 'path' || key === 'destination' ? ` ${ACCEPTED_PATH_FORM}` : '';
    fail(`The argument ${key} must be a string.${example}`, 'FS_INVALID_ARGUMENTS');
  }
  return value;
}

/** `lstat` of a name inside an open folder; `undefined` when it does not exist. */
async function lstatEntry(directory: ConfinedDirectory, name: string): Promise<Stats | undefined> {
  try {
    return await lstat(directory.entry(name));
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/** Most folders one `glob` holds open at a time besides the folder it starts in, at any depth. */
const GLOB_OPEN_FOLDERS = 8;

/** A name a `glob` read in a folder. */
interface GlobEntry {
  readonly name: string;
  readonly directory: boolean;
}

/** A folder on a `glob`'s path from its start folder down. */
interface GlobFrame {
  /** Relative to the glob's start folder (`''` for the start). */
  readonly relative: string;
  /** Levels below the start folder (0 for the start). */
  readonly depth: number;
  entries: readonly GlobEntry[];
  /** The next entry to look at. */
  next: number;
  /** Its descriptor, or `undefined` while closed to bound what the glob holds open. */
  opened: OpenedDirectory | undefined;
  /** Device and inode, taken when its descriptor is closed, checked when it is reopened. */
  identity?: Stats;
}

/** Most UTF-8 bytes of the target's name copied into the atomic write's temp name. */
const TEMPORARY_PREFIX_BYTES = 100;

/**
 * The start of `name` for the temp file's name, at most {@link TEMPORARY_PREFIX_BYTES} UTF-8
 * bytes and cut at a code point boundary, so `.<prefix>.<24 hex>.tmp` (at most 130 bytes) is a
 * legal name whatever the target's script (a 255-byte name of three-byte characters included).
 */
function temporaryPrefix(name: string): string {
  let bytes = 0;
  let prefix = '';
  for (const character of name) {
    bytes += Buffer.byteLength(character, 'utf8');
    if (bytes > TEMPORARY_PREFIX_BYTES) break;
    prefix += character;
  }
  return prefix;
}

function missing(relative: string): never {
  return fail(
    `${quoteForMessage(relative)} does not exist. Use list to see what its folder holds.`,
    'FS_NOT_FOUND',
  );
}

/**
 * A filesystem tool confined to one root folder.
 *
 * The root is opened at construction and held open; its identity (device and inode) is
 * re-checked on every call. A path is normalised once (`./a`, `a//b`, `dir/`, `a/b/../c`, an
 * absolute path inside the root), then walked from the root's descriptor one component at a
 * time, each folder opened with `O_DIRECTORY | O_NOFOLLOW` inside its parent's descriptor
 * (`/proc/self/fd/<fd>/<name>`, the `openat` Node lacks). Files are opened inside their
 * parent's descriptor with `O_NOFOLLOW` and `fstat`-checked; `mkdir`, `unlink`, `rename` and the
 * atomic write's temp file all go through the parent's descriptor, so a folder swapped for a
 * link redirects nothing. Links are refused unless `symlinks: 'follow-inside'`. See the package
 * README for the security model, the platform statement and its limits.
 */
export class FileSystemTool implements Tool {
  /** Name, description, input schema, contract and effects as the registry and models see it. */
  readonly spec: ToolSpec;
  readonly #root: ConfinedRoot;
  readonly #allowWrite: boolean;
  readonly #allowHardLinks: boolean;
  readonly #portableNames: boolean;
  readonly #follow: boolean;
  readonly #maxReadBytes: number;
  readonly #maxWriteBytes: number;
  readonly #maxListEntries: number;
  readonly #maxGlobResults: number;
  readonly #maxGlobVisited: number;
  readonly #maxGlobDepth: number;

  /**
   * Opens `root` (following symlinks once, here) and checks the options. Throws
   * {@link FileSystemToolOptionsError} for an unknown or invalid option, a `root` that is not a
   * folder, or (in `descriptor` confinement) a platform without `/proc/self/fd`.
   */
  constructor(given: FileSystemToolOptions) {
    if (typeof given !== 'object' || given === null) {
      throw new FileSystemToolOptionsError('FileSystemTool needs an options object.');
    }
    checkOptionKeys(
      given,
      OPTION_KEYS,
      'FileSystemTool',
      (message, option) => new FileSystemToolOptionsError(message, { details: { option } }),
    );
    // Read once, own keys only: nothing on Object.prototype is ever taken for an option.
    const options = ownOptions(given);
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
    this.#portableNames = flag(options, 'portableNames');
    this.#maxReadBytes = limit(options, 'maxReadBytes', 1_000_000);
    this.#maxWriteBytes = limit(options, 'maxWriteBytes', 1_000_000);
    this.#maxListEntries = limit(options, 'maxListEntries', 1_000);
    this.#maxGlobResults = limit(options, 'maxGlobResults', 1_000);
    this.#maxGlobVisited = limit(options, 'maxGlobVisited', 100_000);
    this.#maxGlobDepth = limit(options, 'maxGlobDepth', 64);
    const symlinks = choice<SymlinkPolicy>(options, 'symlinks', ['refuse', 'follow-inside']);
    const confinement = choice<ConfinementMode>(options, 'confinement', ['descriptor', 'by-path']);
    const maxSymlinkHops = limit(options, 'maxSymlinkHops', 8);
    if (options.maxSymlinkHops !== undefined && symlinks !== 'follow-inside') {
      throw new FileSystemToolOptionsError(
        "maxSymlinkHops applies only with symlinks: 'follow-inside'.",
        { details: { option: 'maxSymlinkHops' } },
      );
    }
    this.#follow = symlinks === 'follow-inside';
    this.#root = new ConfinedRoot(options.root, { confinement, symlinks, maxSymlinkHops });
    // A writable tool declares a contract per operation (FILE_SYSTEM_OPERATION_RISKS), so each
    // call is judged by what it does; its static contract (what tools/list publishes) is the
    // riskiest, destructive. A read-only tool declares read-only for every call, so a write
    // reaches the tool and gets FS_WRITE_DISABLED instead of an approval prompt.
    const readOnly = defineContract({
      risk: 'read-only',
      contentTrust: 'untrusted',
      idempotent: true,
    });
    let judged: Pick<ToolSpec, 'contract' | 'operationContracts' | 'effect'>;
    if (this.#allowWrite) {
      const operations: Record<string, ToolContract> = {};
      for (const [operation, risk] of Object.entries(FILE_SYSTEM_OPERATION_RISKS)) {
        operations[operation] =
          risk === 'read-only' ? readOnly : defineContract({ risk, contentTrust: 'untrusted' });
      }
      judged = {
        contract: operations.delete as ToolContract,
        operationContracts: Object.freeze({
          select: operationOf,
          operations: Object.freeze(operations),
        }),
      };
    } else {
      const byValue: Record<string, 'read' | 'write'> = {};
      for (const operation of FILE_SYSTEM_OPERATIONS) {
        byValue[operation] = WRITE_OPERATIONS.has(operation) ? 'write' : 'read';
      }
      judged = {
        contract: readOnly,
        effect: Object.freeze({
          default: 'write',
          argument: 'operation',
          byValue: Object.freeze(byValue),
        }),
      };
    }
    this.spec = Object.freeze({
      name,
      description:
        'Reads, lists, searches' +
        (this.#allowWrite
          ? ', writes, moves and deletes files'
          : ' files (writing is disabled: write, mkdir, delete and move fail with FS_WRITE_DISABLED)') +
        ' inside one workspace root. Paths are relative to the root and use "/", for example ' +
        '"src/index.ts"; "." is the root.',
      inputSchema: {
        type: 'object',
        properties: {
          // Every operation stays in the enum, so a write on a read-only tool reaches the tool
          // and gets FS_WRITE_DISABLED rather than a generic schema error.
          operation: {
            type: 'string',
            enum: [...FILE_SYSTEM_OPERATIONS],
            ...(this.#allowWrite
              ? {}
              : { description: 'write, mkdir, delete and move are disabled for this tool.' }),
          },
          path: {
            type: 'string',
            description: 'Relative to the workspace root, e.g. "src/index.ts"; "." is the root.',
          },
          destination: { type: 'string', description: 'Target of move, relative to the root.' },
          content: { type: 'string', description: 'Content of write (text, or base64).' },
          encoding: { type: 'string', enum: ['utf8', 'base64'], default: 'utf8' },
          pattern: { type: 'string', description: 'Glob (*, ?, **) relative to path.' },
          overwrite: { type: 'boolean', default: false, description: 'move: replace a file.' },
        },
        required: ['operation'],
        additionalProperties: false,
      },
      ...judged,
      operationArgument: 'operation',
      annotations: {
        readOnlyHint: !this.#allowWrite,
        destructiveHint: this.#allowWrite,
        idempotentHint: !this.#allowWrite,
        openWorldHint: false,
      },
    });
  }

  /** The root's real path, as taken at construction. */
  get root(): string {
    return this.#root.path;
  }

  /**
   * Closes the tool: calls after it fail with `FS_IO_ERROR`. Calls already running finish in this
   * root; its descriptor is closed when the last of them ends. A registry calls it once, on removal.
   */
  async close(): Promise<void> {
    this.#root.close();
  }

  /** Runs one call; every failure is an error result with `metadata.code` (`FS_*`). */
  async invoke(args: JsonObject, context: ToolContext): Promise<ToolResult> {
    const operation = args.operation;
    try {
      if (context?.signal?.aborted) fail('The call was cancelled.', 'FS_IO_ERROR');
      if (typeof operation !== 'string' || operationOf(args) === undefined) {
        fail(
          `Unknown operation; use one of ${FILE_SYSTEM_OPERATIONS.join(', ')}.`,
          'FS_INVALID_ARGUMENTS',
        );
      }
      if (WRITE_OPERATIONS.has(operation) && !this.#allowWrite) {
        fail(
          `Writing is disabled for this tool (it was built without allowWrite), so ${operation} is refused; read, list, exists, stat and glob work.`,
          'FS_WRITE_DISABLED',
        );
      }
      this.#root.begin();
      try {
        await this.#root.verify();
        return jsonResult(await this.#run(operation as FileSystemOperation, args), {
          metadata: { operation },
        });
      } finally {
        this.#root.end();
      }
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
        raced
          ? 'The path changed while it was being used; retry.'
          : 'The filesystem operation failed.',
        {
          metadata: {
            code: raced ? 'FS_CHANGED_DURING_ACCESS' : 'FS_IO_ERROR',
            operation: typeof operation === 'string' ? operation : null,
          },
        },
      );
    }
  }

  #walk(path: string, followFinal: boolean): Promise<ConfinedLocation> {
    const segments = normalisePath(path, {
      rootPath: this.#root.configured,
      otherRootPaths: this.#root.configured === this.#root.path ? [] : [this.#root.path],
      keepParentSegments: this.#follow,
      portableNames: this.#portableNames,
    });
    return this.#root.walk(segments, { followFinal });
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

  /** Opens the regular file `name` inside `parent` and checks it is what `lstat` saw. */
  async #openFile(location: ConfinedLocation): Promise<{ handle: FileHandle; stat: Stats }> {
    const { parent, name, relative } = location;
    if (name === undefined) fail('"." is the root folder, not a file; use list.', 'FS_NOT_A_FILE');
    const seen = await lstatEntry(parent, name);
    if (seen === undefined) missing(relative);
    if (seen.isSymbolicLink()) this.#root.refuseLink(relative);
    if (seen.isDirectory()) {
      fail(`${quoteForMessage(relative)} is a folder, not a file; use list.`, 'FS_NOT_A_FILE');
    }
    if (!seen.isFile()) {
      fail(
        `${quoteForMessage(relative)} is not a regular file (a FIFO, socket or device).`,
        'FS_NOT_A_FILE',
      );
    }
    let handle: FileHandle;
    try {
      handle = await open(parent.entry(name), FILE_FLAGS);
    } catch (error) {
      const code = codeOf(error);
      if (code === 'ELOOP' || code === 'ENOENT' || code === 'ENXIO') {
        fail(
          `${quoteForMessage(relative)} changed while it was being opened; retry.`,
          'FS_CHANGED_DURING_ACCESS',
        );
      }
      throw error;
    }
    try {
      const actual = await handle.stat();
      if (!actual.isFile() || !sameFile(actual, seen)) {
        fail(
          `${quoteForMessage(relative)} changed while it was being opened; retry.`,
          'FS_CHANGED_DURING_ACCESS',
        );
      }
      return { handle, stat: actual };
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async #read(path: string, encoding: string): Promise<JsonObject> {
    if (encoding !== 'utf8' && encoding !== 'base64')
      fail('encoding must be utf8 or base64.', 'FS_INVALID_ARGUMENTS');
    const location = await this.#walk(path, true);
    try {
      const { handle, stat: actual } = await this.#openFile(location);
      try {
        if (actual.nlink > 1 && !this.#allowHardLinks) {
          fail(
            `${quoteForMessage(location.relative)} has more than one hard link, so its content may live outside the root; it is not read (allowHardLinks).`,
            'FS_HARD_LINK_REFUSED',
          );
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
          path: location.relative,
          encoding,
          content: encoding === 'base64' ? bytes.toString('base64') : bytes.toString('utf8'),
          bytes: bytes.length,
          truncated,
        };
      } finally {
        await handle.close();
      }
    } finally {
      await location.release();
    }
  }

  async #list(path: string): Promise<JsonObject> {
    const location = await this.#walk(path, true);
    const entries: { name: string; type: string }[] = [];
    let truncated = false;
    try {
      const opened = await this.#root.openDirectory(location);
      try {
        const directory = await opendir(opened.directory.self);
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
        await opened.close();
      }
    } finally {
      await location.release();
    }
    entries.sort((left, right) => (left.name < right.name ? -1 : left.name > right.name ? 1 : 0));
    return { path: location.relative, entries, truncated };
  }

  async #exists(path: string): Promise<JsonObject> {
    let location: ConfinedLocation;
    try {
      location = await this.#walk(path, true);
    } catch (error) {
      if (
        FileSystemAccessError.isInstance(error) &&
        (error.code === 'FS_NOT_FOUND' || error.code === 'FS_NOT_A_DIRECTORY')
      ) {
        return { path, exists: false };
      }
      throw error;
    }
    try {
      if (location.name === undefined) return { path: '.', exists: true, type: 'directory' };
      const stat = await lstatEntry(location.parent, location.name);
      if (stat?.isSymbolicLink()) this.#root.refuseLink(location.relative);
      return {
        path: location.relative,
        exists: stat !== undefined,
        ...(stat === undefined ? {} : { type: typeOf(stat) }),
      };
    } finally {
      await location.release();
    }
  }

  async #stat(path: string): Promise<JsonObject> {
    const location = await this.#walk(path, true);
    try {
      const stat =
        location.name === undefined
          ? await statPath(location.parent.self)
          : await lstatEntry(location.parent, location.name);
      if (stat === undefined) missing(location.relative);
      if (stat.isSymbolicLink()) this.#root.refuseLink(location.relative);
      return {
        path: location.relative,
        type: typeOf(stat),
        size: stat.size,
        mode: (stat.mode & 0o7777).toString(8).padStart(4, '0'),
        links: stat.nlink,
        modifiedAt: stat.mtime.toISOString(),
      };
    } finally {
      await location.release();
    }
  }

  async #glob(path: string, pattern: string): Promise<JsonObject> {
    const matches = compileGlob(pattern);
    const location = await this.#walk(path, true);
    const state = { results: [] as string[], visited: 0, truncated: false, stopped: false };
    // Reads a folder's names (sorted; links, FIFOs and the like left out), counting each toward
    // maxGlobVisited; past it the walk stops.
    const list = async (folder: ConfinedDirectory): Promise<GlobEntry[]> => {
      const names: GlobEntry[] = [];
      const directory = await opendir(folder.self);
      for await (const entry of directory) {
        state.visited += 1;
        if (state.visited > this.#maxGlobVisited) {
          state.truncated = true;
          state.stopped = true;
          break;
        }
        if (entry.isSymbolicLink() || (!entry.isFile() && !entry.isDirectory())) continue;
        names.push({ name: entry.name, directory: entry.isDirectory() });
      }
      names.sort((left, right) => (left.name < right.name ? -1 : 1));
      return names;
    };
    // Depth first, in name order. Every child folder is opened with O_DIRECTORY | O_NOFOLLOW
    // inside its parent's descriptor; links are never entered. Besides the start folder at most
    // GLOB_OPEN_FOLDERS folders are held open (the deepest ones): going deeper closes the
    // shallowest held one (its identity kept), and coming back up to it reopens it through the
    // kernel's real parent of the folder still held (`<fd>/..`), checked by device and inode.
    // The held frames are always the top `held` frames of the stack (the start aside).
    const start = await this.#root.openDirectory(location).catch(async (error: unknown) => {
      await location.release();
      throw error;
    });
    const stack: GlobFrame[] = [];
    let held = 0;
    try {
      stack.push({
        relative: '',
        depth: 0,
        entries: await list(start.directory),
        next: 0,
        opened: start,
      });
      while (stack.length > 0 && !state.stopped) {
        const top = stack[stack.length - 1] as GlobFrame;
        if (top.next >= top.entries.length) {
          // Done with top: drop it and every finished frame under it, and hold the next frame
          // that still has entries (reopened through top's descriptor when the window closed it).
          let below = stack.length - 2;
          while (
            below > 0 &&
            (stack[below] as GlobFrame).next >= (stack[below] as GlobFrame).entries.length
          ) {
            below -= 1;
          }
          const resume = below >= 0 ? (stack[below] as GlobFrame) : undefined;
          if (resume !== undefined && resume.opened === undefined) {
            resume.opened = await this.#root.openAncestor(
              (top.opened as OpenedDirectory).directory,
              top.depth - resume.depth,
              resume.identity as Stats,
              resume.relative,
            );
            held += 1;
          }
          while (stack.length - 1 > below) {
            const done = stack.pop() as GlobFrame;
            if (done.opened !== undefined && done !== stack[0] && stack.length > 0) {
              held -= 1;
              await done.opened.close();
            }
            done.opened = undefined;
          }
          continue;
        }
        const entry = top.entries[top.next] as GlobEntry;
        top.next += 1;
        const child = top.relative === '' ? entry.name : `${top.relative}/${entry.name}`;
        if (matches(child)) {
          if (state.results.length >= this.#maxGlobResults) {
            state.truncated = true;
            break;
          }
          state.results.push(child);
        }
        if (!entry.directory) continue;
        if (top.depth + 1 >= this.#maxGlobDepth) {
          // Its entries would lie deeper than maxGlobDepth: not entered, and the result says so.
          state.truncated = true;
          continue;
        }
        let inner: OpenedDirectory;
        try {
          inner = await this.#root.openChild(
            (top.opened as OpenedDirectory).directory,
            entry.name,
            child,
          );
        } catch (error) {
          // Swapped for a link or a file, or removed, since it was listed: not entered.
          if (FileSystemAccessError.isInstance(error) && error.code !== 'FS_IO_ERROR') continue;
          throw error;
        }
        const frame: GlobFrame = {
          relative: child,
          depth: top.depth + 1,
          entries: [],
          next: 0,
          opened: inner,
        };
        stack.push(frame);
        held += 1;
        frame.entries = await list(inner.directory);
        if (held > GLOB_OPEN_FOLDERS) {
          // The shallowest held frame (the held ones are the top `held` of the stack).
          const oldest = stack[stack.length - held] as GlobFrame;
          const opened = oldest.opened as OpenedDirectory;
          oldest.identity = await opened.directory.stat();
          oldest.opened = undefined;
          held -= 1;
          await opened.close();
        }
      }
    } finally {
      for (const frame of stack.slice(1)) await frame.opened?.close();
      await start.close();
      await location.release();
    }
    state.results.sort();
    return {
      path: location.relative,
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

  async #write(path: string, content: string, encoding: string): Promise<JsonObject> {
    const bytes = this.#decode(content, encoding);
    const location = await this.#walk(path, true);
    try {
      const { parent: folder, name, relative } = location;
      if (name === undefined) fail('"." is the root folder, not a file.', 'FS_NOT_A_FILE');
      const existing = await lstatEntry(folder, name);
      if (existing?.isSymbolicLink()) this.#root.refuseLink(relative);
      if (existing !== undefined && !existing.isFile()) {
        fail(`${quoteForMessage(relative)} exists and is not a regular file.`, 'FS_NOT_A_FILE');
      }
      const temporary = `.${temporaryPrefix(name)}.${randomBytes(12).toString('hex')}.tmp`;
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
          codeOf(error) === 'EISDIR'
            ? `${quoteForMessage(relative)} became a folder; nothing was written.`
            : 'The file could not be written.',
          codeOf(error) === 'EISDIR' ? 'FS_NOT_A_FILE' : 'FS_IO_ERROR',
          { cause: error },
        );
      }
      return { path: relative, bytes: bytes.length, created: existing === undefined };
    } finally {
      await location.release();
    }
  }

  async #mkdir(path: string): Promise<JsonObject> {
    const location = await this.#walk(path, false);
    try {
      const { parent: folder, name, relative } = location;
      const exists = (): never =>
        fail(`${quoteForMessage(relative)} already exists.`, 'FS_ALREADY_EXISTS');
      if (name === undefined) return exists();
      try {
        await mkdir(folder.entry(name), 0o755);
      } catch (error) {
        if (codeOf(error) === 'EEXIST') exists();
        throw error;
      }
      await folder.sync();
      return { path: relative };
    } finally {
      await location.release();
    }
  }

  async #delete(path: string): Promise<JsonObject> {
    const location = await this.#walk(path, false);
    try {
      const { parent: folder, name, relative } = location;
      if (name === undefined)
        fail('The workspace root itself cannot be deleted.', 'FS_PATH_INVALID');
      const current = await lstatEntry(folder, name);
      if (current === undefined) missing(relative);
      if (current.isSymbolicLink() && !this.#follow) this.#root.refuseLink(relative);
      const target = folder.entry(name);
      if (current.isDirectory()) {
        try {
          await rmdir(target);
        } catch (error) {
          if (codeOf(error) === 'ENOTEMPTY' || codeOf(error) === 'EEXIST') {
            fail(
              `The folder ${quoteForMessage(relative)} is not empty; delete what it holds first.`,
              'FS_NOT_EMPTY',
            );
          }
          throw error;
        }
      } else {
        await unlink(target);
      }
      await folder.sync();
      return { path: relative, type: typeOf(current) };
    } finally {
      await location.release();
    }
  }

  async #move(path: string, destination: string, overwrite: boolean): Promise<JsonObject> {
    const source = await this.#walk(path, false);
    let target: ConfinedLocation | undefined;
    try {
      target = await this.#walk(destination, false);
      if (source.name === undefined) {
        fail('The workspace root itself cannot be moved.', 'FS_PATH_INVALID');
      }
      if (target.name === undefined) {
        fail('The destination "." is the workspace root; name a new path.', 'FS_ALREADY_EXISTS');
      }
      const sourceStat = await lstatEntry(source.parent, source.name);
      if (sourceStat === undefined) missing(source.relative);
      if (sourceStat.isSymbolicLink() && !this.#follow) this.#root.refuseLink(source.relative);
      if (!sourceStat.isFile() && !sourceStat.isDirectory() && !sourceStat.isSymbolicLink()) {
        fail('Only files and folders can be moved.', 'FS_NOT_A_FILE');
      }
      const targetStat = await lstatEntry(target.parent, target.name);
      if (
        targetStat !== undefined &&
        (!overwrite || !targetStat.isFile() || !sourceStat.isFile())
      ) {
        fail(
          `The destination ${quoteForMessage(target.relative)} already exists` +
            (sourceStat.isFile() && targetStat.isFile()
              ? '; pass overwrite: true to replace it.'
              : '.'),
          'FS_ALREADY_EXISTS',
        );
      }
      const sourceEntry = source.parent.entry(source.name);
      const targetEntry = target.parent.entry(target.name);
      try {
        if (!sourceStat.isDirectory() && !overwrite) {
          // link() never replaces an existing name, so a file planted meanwhile is not clobbered.
          try {
            await link(sourceEntry, targetEntry);
          } catch (error) {
            if (codeOf(error) === 'EEXIST') {
              fail(
                `The destination ${quoteForMessage(target.relative)} already exists.`,
                'FS_ALREADY_EXISTS',
              );
            }
            throw error;
          }
          await unlink(sourceEntry);
        } else {
          await rename(sourceEntry, targetEntry);
        }
      } catch (error) {
        if (FileSystemAccessError.isInstance(error)) throw error;
        if (codeOf(error) === 'EINVAL')
          fail('A folder cannot move into itself.', 'FS_INVALID_ARGUMENTS');
        if (codeOf(error) === 'EXDEV')
          fail('The source and destination are on different file systems.', 'FS_IO_ERROR');
        throw error;
      }
      await source.parent.sync();
      await target.parent.sync();
      return { from: source.relative, to: target.relative };
    } finally {
      await source.release();
      await target?.release();
    }
  }
}
