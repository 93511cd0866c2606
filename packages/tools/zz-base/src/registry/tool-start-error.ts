import { ToolsError } from '../tools-error.js';

/** A tool's `start()` failed; the tool was closed and not installed (a tool it was replacing stays installed). The original error is the `cause`. */
export class ToolStartError extends ToolsError {
  static override readonly code: string = 'REGISTRY_TOOL_START_FAILED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/ToolStartError');
}
