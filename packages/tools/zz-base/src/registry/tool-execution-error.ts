import { ToolsError } from '../tools-error.js';

/** A tool threw something that is not a `ToolsError`. The message is safe and generic; the original error is the `cause` (never copied into the message). */
export class ToolExecutionError extends ToolsError {
  static override readonly code: string = 'REGISTRY_TOOL_FAILED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/ToolExecutionError');
}
