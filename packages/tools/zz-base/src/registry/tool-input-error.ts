import { ToolsError } from '../tools-error.js';

/** The arguments are not acceptable: not JSON, over a snapshot limit, or not valid against the tool's input schema. `details.issues` lists at most 8 `{ path, message }` entries; argument values are never echoed. */
export class ToolInputError extends ToolsError {
  static override readonly code: string = 'REGISTRY_INPUT_INVALID';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/ToolInputError');
}
