import { PermissionDeniedError } from './permission-denied-error.js';

/** The authorizer asked for approval but the registry has no `approval` callback: the call was denied. */
export class ApprovalRequiredError extends PermissionDeniedError {
  static override readonly code: string = 'APPROVAL_REQUIRED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/ApprovalRequiredError');
}
