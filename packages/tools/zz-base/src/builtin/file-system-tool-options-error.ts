import { ToolsError } from '../tools-error.js';

/** FileSystemTool was constructed with an invalid option. */
export class FileSystemToolOptionsError extends ToolsError {
  static override readonly code: string = 'FS_INVALID_OPTIONS';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/tools/FileSystemToolOptionsError',
  );
}
