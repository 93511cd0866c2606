import type { Ajv2020 } from 'ajv/dist/2020.js';
import { lazyRequire } from '../internal/lazy-require.js';
import {
  createMetaSchema2020Check,
  type MetaSchemaCheck,
} from './meta-schema-2020-12.generated.js';

// The JSON Schema 2020-12 meta-schema check, compiled ahead of time (scripts/
// generate-meta-schema-check.mjs writes it from the installed ajv): the same code ajv generates
// for the meta-schema at run time, so a start never compiles the meta-schema (a quarter of a
// second on a slow core) and checking a schema needs neither ajv's compiler nor its codegen.

/** The 2020-12 meta-schema's `$id`: a schema whose `$schema` is this (or none) is checked here. */
export const META_SCHEMA_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

// ajv's deep equality (fast-deep-equal), the check's one runtime dependency (`uniqueItems`).
const ajvEqual = lazyRequire<{ default: (a: unknown, b: unknown) => boolean }>(
  'ajv/dist/runtime/equal.js',
);

let check: MetaSchemaCheck | undefined;

/** The precompiled check, built on first use (returns true or sets its `errors`). */
export function metaSchema2020Check(): MetaSchemaCheck {
  check ??= createMetaSchema2020Check(ajvEqual().default);
  return check;
}

/** ajv's `errorsText` with its defaults (`data` for the value, `, ` between errors). */
function errorsText(errors: MetaSchemaCheck['errors']): string {
  if (errors === undefined || errors === null || errors.length === 0) return 'No errors';
  return errors.map((error) => `data${error.instancePath} ${error.message}`).join(', ');
}

/**
 * Checks a schema against the 2020-12 meta-schema; throws the very Error ajv's `compile` throws
 * for a schema the meta-schema refuses (`schema is invalid: data/properties/x/type must be ...`).
 * Only for a schema whose `$schema` is absent or the 2020-12 meta-schema's `$id`.
 */
export function assertValid2020Schema(schema: object): void {
  const checkSchema = metaSchema2020Check();
  if (!checkSchema(schema)) {
    throw new Error(`schema is invalid: ${errorsText(checkSchema.errors)}`);
  }
}

/**
 * Makes an Ajv2020 instance check each schema it compiles with the precompiled meta-schema check
 * instead of compiling the meta-schema: its `validateSchema` runs at the same point of `compile`,
 * sets `ajv.errors` and throws the same Error as ajv's own. A schema declaring another `$schema`
 * goes to ajv's own method, unchanged.
 */
export function usePrecompiledMetaSchema(ajv: Ajv2020): void {
  const own = ajv.validateSchema.bind(ajv);
  ajv.validateSchema = (schema, throwOrLogError) => {
    if (typeof schema !== 'object' || schema === null) return own(schema, throwOrLogError);
    const declared: unknown = (schema as { $schema?: unknown }).$schema;
    if (declared !== undefined && declared !== '' && declared !== META_SCHEMA_2020_12) {
      return own(schema, throwOrLogError);
    }
    const checkSchema = metaSchema2020Check();
    const valid = checkSchema(schema);
    ajv.errors = (checkSchema.errors ?? null) as NonNullable<typeof ajv.errors> | null;
    if (!valid && throwOrLogError === true) {
      const message = `schema is invalid: ${ajv.errorsText()}`;
      if (ajv.opts.validateSchema === 'log') ajv.logger.error(message);
      else throw new Error(message);
    }
    return valid;
  };
}
