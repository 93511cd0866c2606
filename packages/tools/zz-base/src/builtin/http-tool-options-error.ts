import { ToolsError } from '../tools-error.js';

/** HttpTool was constructed with an invalid option. */
export class HttpToolOptionsError extends ToolsError {
  static override readonly code: string = 'HTTP_TOOL_INVALID_OPTIONS';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/HttpToolOptionsError');
}
