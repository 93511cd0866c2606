import type { JsonObject } from '@toolfence/tools';
import { BridgeSchemaError } from './errors.js';

/** How declared dialects other than 2020-12 are treated. */
export type SchemaDialectMode = 'compatible' | 'strict';

const DIALECT_2020_12 = new Set([
  'https://json-schema.org/draft/2020-12/schema',
  'https://json-schema.org/draft/2020-12/schema#',
]);
const DRAFT_07 = new Set([
  'http://json-schema.org/draft-07/schema',
  'http://json-schema.org/draft-07/schema#',
  'https://json-schema.org/draft-07/schema',
  'https://json-schema.org/draft-07/schema#',
]);
// Keywords whose meaning differs between draft-07 and 2020-12 (or that 2020-12 dropped).
const DIVERGENT_KEYWORDS = ['additionalItems', 'dependencies', '$recursiveRef', '$recursiveAnchor'];
const REF_KEYWORDS = ['$ref', '$dynamicRef', '$recursiveRef'];
const MAX_SCHEMA_DEPTH = 64;

/** The schema a tool without `inputSchema` gets: a closed object with no arguments. */
export const NO_ARGUMENTS_SCHEMA: JsonObject = Object.freeze({
  type: 'object',
  properties: Object.freeze({}),
  additionalProperties: false,
}) as JsonObject;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Decides the schema the bridge gives authority to, for an input (`root: 'object'`) or output
 * schema. Throws {@link BridgeSchemaError} for an explicit null, a non-object root, a refused
 * dialect, or a `$ref` that leaves the document. A compatible draft-07 declaration is re-declared
 * as 2020-12 (its keywords mean the same there).
 */
export function authoritativeSchema(
  tool: string,
  which: 'inputSchema' | 'outputSchema',
  schema: unknown,
  mode: SchemaDialectMode,
): JsonObject {
  if (schema === undefined && which === 'inputSchema') return NO_ARGUMENTS_SCHEMA;
  const details = { tool, schema: which };
  if (schema === null) {
    throw new BridgeSchemaError(`The ${which} of a server tool is null`, { details });
  }
  if (!isRecord(schema)) {
    throw new BridgeSchemaError(`The ${which} of a server tool is not an object`, { details });
  }
  const type = schema.type;
  if (type !== 'object' && !(Array.isArray(type) && type.length === 1 && type[0] === 'object')) {
    throw new BridgeSchemaError(`The ${which} of a server tool does not describe an object`, {
      details,
    });
  }
  const declared = schema.$schema;
  let legacy = false;
  if (declared !== undefined) {
    if (typeof declared !== 'string') {
      throw new BridgeSchemaError(`The ${which} declares an invalid $schema`, { details });
    }
    if (!DIALECT_2020_12.has(declared)) {
      if (mode === 'strict' || !DRAFT_07.has(declared)) {
        throw new BridgeSchemaError(
          `The ${which} declares a dialect other than JSON Schema 2020-12`,
          {
            details: { ...details, reason: 'dialect' },
          },
        );
      }
      legacy = true;
    }
  }
  checkNode(schema, 0, legacy, details);
  if (!legacy && schema.$id === undefined) return schema as JsonObject;
  // A root $id is dropped so two servers' schemas can never collide in one validator.
  const { $id: _id, ...rest } = schema;
  if (legacy) delete rest.$schema;
  return rest as JsonObject;
}

function checkNode(
  node: unknown,
  depth: number,
  legacy: boolean,
  details: Record<string, unknown>,
): void {
  if (depth > MAX_SCHEMA_DEPTH) {
    throw new BridgeSchemaError('A server tool schema is nested too deeply', { details });
  }
  if (Array.isArray(node)) {
    for (const item of node) checkNode(item, depth + 1, legacy, details);
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
  if (typeof node.$id === 'string' && depth > 0) {
    throw new BridgeSchemaError('A server tool schema embeds a sub-schema with its own $id', {
      details: { ...details, reason: 'embedded-id' },
    });
  }
  if (legacy) {
    for (const keyword of DIVERGENT_KEYWORDS) {
      if (keyword in node) {
        throw new BridgeSchemaError(
          'A draft-07 server tool schema uses a keyword that changed meaning in 2020-12',
          { details: { ...details, reason: 'dialect', keyword } },
        );
      }
    }
    if (Array.isArray(node.items)) {
      throw new BridgeSchemaError(
        'A draft-07 server tool schema uses array-form items (changed meaning in 2020-12)',
        { details: { ...details, reason: 'dialect', keyword: 'items' } },
      );
    }
  }
  for (const key in node) {
    // `properties`, `$defs` etc. hold schemas by name; `enum`/`const`/`default`/`examples` hold data.
    if (key === 'enum' || key === 'const' || key === 'default' || key === 'examples') continue;
    const value = node[key];
    if (typeof value === 'object' && value !== null) checkNode(value, depth + 1, legacy, details);
  }
}
