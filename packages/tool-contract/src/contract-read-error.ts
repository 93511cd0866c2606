import { ToolContractError, type ToolContractErrorOptions } from './tool-contract-error.js';

/** Something wrong with a declared contract. Messages never echo the remote value. */
export interface ContractProblem {
  /** Stable code, the same one `defineContract` would throw for the same mistake. */
  readonly code: string;
  /** Where the problem is, such as `annotations.risk_level`. */
  readonly field: string;
  /** A short, log-safe explanation. */
  readonly message: string;
}

/** Options of a {@link ContractReadError}. */
export interface ContractReadErrorOptions extends ToolContractErrorOptions {
  /** Every problem found in the declaration. */
  readonly problems?: readonly ContractProblem[];
}

/**
 * `readContract(tool, { strict: true })` found a declared contract it cannot trust as written
 * (or the input is not a `tools/list` entry at all). `problems` lists each finding with its own
 * code; `details.problemCodes` repeats the codes for logs.
 */
export class ContractReadError extends ToolContractError {
  static override readonly code: string = 'CONTRACT_INVALID_DECLARATION';
  static override readonly brand: symbol = Symbol.for('@toolfence/tool-contract/ContractReadError');

  /** The problems found, in the order they were found. */
  readonly problems: readonly ContractProblem[];

  /** Creates the error; the codes of `options.problems` are also copied into `details.problemCodes`. */
  constructor(message: string, options: ContractReadErrorOptions = {}) {
    const problems = Object.freeze([...(options.problems ?? [])]);
    super(message, {
      ...options,
      details: { ...options.details, problemCodes: problems.map((problem) => problem.code) },
    });
    this.problems = problems;
  }
}
