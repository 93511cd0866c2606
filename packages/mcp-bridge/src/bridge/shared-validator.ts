import { AjvSchemaValidator } from '@toolfence/tools';

let defaultValidator: AjvSchemaValidator | undefined;

/**
 * One default validator for every bridge in the process, and for the gateway's registry: each
 * dialect's Ajv instance compiles its meta-schema on first use (tens of milliseconds), and
 * compiled schemas are cached by object and by content (bounded LRU), so sharing it costs nothing
 * and saves that start-up on every client. The registry given this validator finds each bridged
 * input schema already compiled (the same object), so a listing compiles each schema once.
 */
export function sharedValidator(): AjvSchemaValidator {
  defaultValidator ??= new AjvSchemaValidator();
  return defaultValidator;
}
