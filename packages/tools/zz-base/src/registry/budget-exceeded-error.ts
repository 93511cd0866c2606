import { ToolsError } from '../tools-error.js';

/** A call-count or concurrency budget of a run (or of a resolver scope) has no room for the call. `details` names the scope kind and which limit. */
export class BudgetExceededError extends ToolsError {
  static override readonly code: string = 'POLICY_BUDGET_EXCEEDED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/BudgetExceededError');
}
