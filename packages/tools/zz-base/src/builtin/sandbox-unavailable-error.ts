import { ToolsError } from '../tools-error.js';

/** The sandbox cannot run here (for example `bwrap` is not installed or not usable). */
export class SandboxUnavailableError extends ToolsError {
  static override readonly code: string = 'SHELL_SANDBOX_UNAVAILABLE';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/SandboxUnavailableError');
}
