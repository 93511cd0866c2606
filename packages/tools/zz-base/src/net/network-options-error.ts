import { ToolsError } from '../tools-error.js';

/** An option given to the network guard (dispatcher, fetch, URL policy) is invalid. */
export class NetworkOptionsError extends ToolsError {
  static override readonly code: string = 'NET_INVALID_OPTIONS';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/NetworkOptionsError');
}
