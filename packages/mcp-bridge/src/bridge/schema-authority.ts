import { declaredSchemaDialect, type JsonObject } from '@toolfence/tools/core';
import { isRecord } from '../is-record.js';
import { BridgeSchemaError } from './errors.js';

/**
 * Which declared JSON Schema dialects are accepted: `compatible` (default) accepts draft-04,
 * draft-06, draft-07, 2019-09 and 2020-12 (each validated in its own dialect); `strict` accepts
 * only 2020-12 (declared, or no `$schema` at all).
 */
export type SchemaDialectMode = 'compatible' | 'strict';

const REF_KEYWORDS = ['$ref', '$dynamicRef', '$recursiveRef'];
const MAX_SCHEMA_DEPTH = 64;

/** Why a schema cannot be given authority (`details.reason` of {@link BridgeSchemaError}). */
export type BridgeSchemaReason =
  | 'null'
  | 'not-object'
  | 'not-object-type'
  | 'dialect'
  | 'external-ref'
  | 'embedded-id'
  | 'too-deep'
  | 'compile';

/** The schema a tool without `inputSchema` gets: a closed object with no arguments. */
export const NO_ARGUMENTS_SCHEMA: JsonObject = Object.freeze({
  type: 'object',
  properties: Object.freeze({}),
  additionalProperties: false,
}) as JsonObject;

/**
 * Decides the schema the bridge gives authority to, for an input (`root: 'object'`) or output
 * schema. Throws {@link BridgeSchemaError} (with `details.reason`) for an explicit null, a
 * non-object root, a dialect the mode refuses (any unknown `$schema`; in `strict` mode anything
 * but 2020-12), an embedded `$id`, or a `$ref` that leaves the document. The declared `$schema`
 * is kept, so the validator reads the schema in that dialect; a root `$id` (draft-04: `id`) is
 * dropped so two servers' schemas never collide in one validator.
 */
export function authoritativeSchema(
  tool: string,
  which: 'inputSchema' | 'outputSchema',
  schema: unknown,
  mode: SchemaDialectMode,
): JsonObject {
  if (schema === undefined && which === 'inputSchema') return NO_ARGUMENTS_SCHEMA;
  const details = { tool, schema: which };
  const fail = (message: string, reason: BridgeSchemaReason, extra = {}): never => {
    throw new BridgeSchemaError(message, { details: { ...details, reason, ...extra } });
  };
  if (schema === null) fail(`The ${which} of a server tool is null`, 'null');
  if (!isRecord(schema))
    return fail(`The ${which} of a server tool is not an object`, 'not-object');
  const type = schema.type;
  if (type !== 'object' && !(Array.isArray(type) && type.length === 1 && type[0] === 'object')) {
    fail(`The ${which} of a server tool does not describe an object`, 'not-object-type');
  }
  const dialect = declaredSchemaDialect(schema);
  if (dialect === 'unknown') {
    fail(
      `The ${which} declares a $schema that is not a known JSON Schema dialect (draft-04, draft-06, draft-07, 2019-09, 2020-12)`,
      'dialect',
    );
  }
  if (mode === 'strict' && dialect !== 'none' && dialect !== '2020-12') {
    fail(
      `The ${which} declares ${dialect}; schemaDialects 'strict' accepts only JSON Schema 2020-12`,
      'dialect',
      { dialect },
    );
  }
  const idKeyword = dialect === 'draft-04' ? 'id' : '$id';
  checkNode(schema, 0, idKeyword, details);
  if (typeof schema[idKeyword] !== 'string' && schema.$id === undefined) {
    return schema as JsonObject;
  }
  const { [idKeyword]: _id, ...rest } = schema;
  delete rest.$id;
  return rest as JsonObject;
}

function checkNode(
  node: unknown,
  depth: number,
  idKeyword: 'id' | '$id',
  details: Record<string, unknown>,
): void {
  if (depth > MAX_SCHEMA_DEPTH) {
    throw new BridgeSchemaError('A server tool schema is nested too deeply', {
      details: { ...details, reason: 'too-deep' },
    });
  }
  if (Array.isArray(node)) {
    for (const item of node) checkNode(item, depth + 1, idKeyword, details);
    return;
  }
  if (!isRecord(node)) return;
  for (const keyword of REF_KEYWORDS) {
    const ref = node[keyword];
    if (ref === undefined) continue;
    if (typeof ref !== 'string' || !ref.startsWith('#')) {
      throw new BridgeSchemaError('A server tool schema has a $ref that leaves the document', {
        details: { ...details, reason: 'external-ref' },
      });
    }
  }
  if (depth > 0 && (typeof node.$id === 'string' || typeof node[idKeyword] === 'string')) {
    throw new BridgeSchemaError('A server tool schema embeds a sub-schema with its own $id', {
      details: { ...details, reason: 'embedded-id' },
    });
  }
  for (const key in node) {
    // `properties`, `$defs` etc. hold schemas by name; `enum`/`const`/`default`/`examples` hold data.
    if (key === 'enum' || key === 'const' || key === 'default' || key === 'examples') continue;
    const value = node[key];
    if (typeof value === 'object' && value !== null)
      checkNode(value, depth + 1, idKeyword, details);
  }
}
