import { ToolsError } from '../tools-error.js';

/** The call was refused: read-only scope, an authorizer decision, a declined or timed-out approval. `details.reason` says which. */
export class PermissionDeniedError extends ToolsError {
  static override readonly code: string = 'POLICY_PERMISSION_DENIED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/PermissionDeniedError');
}
