import { ToolsError, type ToolsErrorOptions } from '../tools-error.js';

/** Which network limit was exceeded. */
export type NetworkLimit = 'response-bytes' | 'timeout' | 'redirects' | 'connect-timeout';

/** A guarded request exceeded a byte, time or redirect limit. */
export class NetworkLimitError extends ToolsError {
  static override readonly code: string = 'NET_LIMIT_EXCEEDED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/NetworkLimitError');

  /** The limit that was exceeded. */
  readonly limit: NetworkLimit;

  /** Creates the error; `limit` is stored on the instance and in `details.limit`. */
  constructor(message: string, limit: NetworkLimit, options: Omit<ToolsErrorOptions, 'code'> = {}) {
    super(message, { ...options, details: { limit, ...options.details } });
    this.limit = limit;
  }
}
