import { ToolsError } from '../tools-error.js';

/** A tool's `close()` failed. When `details.committed` is true the registry change already happened: inspect the registry state, do not blindly retry. */
export class ToolCloseError extends ToolsError {
  static override readonly code: string = 'REGISTRY_TOOL_CLOSE_FAILED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/ToolCloseError');
}
