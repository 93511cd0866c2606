import { ToolsError } from '../tools-error.js';

/** A registry, tool, context, policy or budget was configured wrongly (a programming error, not a runtime condition). */
export class ConfigurationError extends ToolsError {
  static override readonly code: string = 'REGISTRY_CONFIGURATION';
  static override readonly brand: symbol = Symbol.for('@toolfence/tools/ConfigurationError');
}
