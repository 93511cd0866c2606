import { ToolsError } from '../tools-error.js';

/** The registry is closing or closed: it takes no new calls or registrations. */
export class RegistryClosedError extends ToolsError {
  static override readonly code: string = 'REGISTRY_CLOSED';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/RegistryClosedError');
}
