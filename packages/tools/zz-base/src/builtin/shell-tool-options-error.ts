import { ToolsError } from '../tools-error.js';

/** ShellTool or a sandbox was constructed with an invalid option. */
export class ShellToolOptionsError extends ToolsError {
  static override readonly code: string = 'SHELL_INVALID_OPTIONS';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/ShellToolOptionsError');
}
