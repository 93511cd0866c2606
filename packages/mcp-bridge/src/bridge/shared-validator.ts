import { AjvSchemaValidator } from '@toolfence/tools/core';

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

/** The schema {@link warmSharedValidator} compiles: `{}`, in the default dialect (2020-12). */
const WARM_SCHEMA = Object.freeze({});

/**
 * Makes the shared validator's 2020-12 Ajv instance now: loads ajv and compiles the meta-schema
 * (the bulk of a first listing's validation cost), by preparing `{}`. The gateway calls it while
 * its upstreams start, so their first listing does not wait for it. Changes no result: every
 * schema is still compiled, and refused, exactly as before when it is listed.
 */
export function warmSharedValidator(): void {
  sharedValidator().prepare(WARM_SCHEMA);
}
