import { AjvSchemaValidator } from '@toolfence/tools/core';

let defaultValidator: AjvSchemaValidator | undefined;

/**
 * One default validator for every bridge in the process, and for the gateway's registry: each
 * dialect's Ajv instance is made on first use, and prepared and compiled schemas are cached by
 * object and by content (bounded LRU), so sharing it costs nothing and saves that start-up on
 * every client. The registry given this validator finds each bridged input schema already
 * prepared (the same object), so a listing checks each schema once and compiles it at most once.
 */
export function sharedValidator(): AjvSchemaValidator {
  defaultValidator ??= new AjvSchemaValidator();
  return defaultValidator;
}

/** The schema {@link warmSharedValidator} compiles: `{}`, in the default dialect (2020-12). */
const WARM_SCHEMA = Object.freeze({});

/**
 * Builds the shared validator's precompiled 2020-12 meta-schema check now, by preparing `{}`
 * (no Ajv instance: a schema that cannot fail ajv's compile beyond the meta-schema is compiled on
 * its first validation). The gateway calls it while its upstreams start, so their first listing
 * does not wait for it. Changes no result: every schema is still checked, and refused, exactly as
 * before when it is listed.
 */
export function warmSharedValidator(): void {
  sharedValidator().prepare(WARM_SCHEMA);
}
