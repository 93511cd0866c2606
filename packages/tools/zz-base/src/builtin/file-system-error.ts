import { ToolsError, type ToolsErrorOptions } from '../tools-error.js';

/** Codes a `FileSystemTool` call fails with (also in the error result's `metadata.code`). */
export type FileSystemErrorCode =
  | 'FS_PATH_INVALID'
  | 'FS_SYMLINK_REFUSED'
  | 'FS_NOT_FOUND'
  | 'FS_NOT_A_FILE'
  | 'FS_NOT_A_DIRECTORY'
  | 'FS_HARD_LINK_REFUSED'
  | 'FS_CHANGED_DURING_ACCESS'
  | 'FS_ROOT_CHANGED'
  | 'FS_WRITE_DISABLED'
  | 'FS_TOO_LARGE'
  | 'FS_ALREADY_EXISTS'
  | 'FS_NOT_EMPTY'
  | 'FS_INVALID_ARGUMENTS'
  | 'FS_IO_ERROR';

/**
 * A filesystem access was refused or failed. `FileSystemTool` turns it into an error result;
 * the path confinement helpers throw it.
 */
export class FileSystemAccessError extends ToolsError {
  static override readonly code: string = 'FS_ACCESS_DENIED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/FileSystemAccessError');

  /** Creates the error with the specific `FS_*` `code`, which replaces the class default. */
  constructor(
    message: string,
    code: FileSystemErrorCode,
    options: Omit<ToolsErrorOptions, 'code'> = {},
  ) {
    super(message, { ...options, code });
  }
}
