import { ToolContractError, type ToolContractErrorOptions } from './tool-contract-error.js';

/** Options of a {@link ContractDefinitionError}. */
export interface ContractDefinitionErrorOptions extends ToolContractErrorOptions {
  /** The contract field that failed validation (`risk`, `aliases`, ...), when one did. */
  readonly field?: string;
}

/**
 * A contract, override or level given by the caller is invalid. Thrown at definition time so a
 * typo fails the author's own CI. `code` says which rule failed (`CONTRACT_UNKNOWN_RISK`,
 * `CONTRACT_INVALID_VERSION`, ...; see the README's Errors table) and `field` names the field.
 * The message never echoes the rejected value.
 */
export class ContractDefinitionError extends ToolContractError {
  static override readonly code: string = 'CONTRACT_INVALID_DEFINITION';
  static override readonly brand: symbol = Symbol.for(
    '@toolfence/tool-contract/ContractDefinitionError',
  );

  /** The field that failed validation, or `undefined` for the input as a whole. */
  readonly field: string | undefined;

  /** Creates the error; `options.field` names the failing field. `message` must not echo the rejected value. */
  constructor(message: string, options: ContractDefinitionErrorOptions = {}) {
    super(message, options);
    this.field = options.field;
  }
}
