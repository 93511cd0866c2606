import { ToolsError } from '../tools-error.js';

/** No tool of that name is registered (raised by `invoke`, `replace` and `unregister` alike). */
export class ToolNotFoundError extends ToolsError {
  static override readonly code: string = 'REGISTRY_TOOL_NOT_FOUND';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/ToolNotFoundError');
}
