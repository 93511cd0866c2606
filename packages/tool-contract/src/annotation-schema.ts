import { CONTENT_TRUST_LEVELS, RISK_LEVELS } from './taxonomy.js';

/** A JSON Schema document, as a plain read-only object. */
export type JsonSchemaObject = { readonly [key: string]: unknown };

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

const TOOL_NAME_PATTERN = '^[A-Za-z0-9_.-]{1,128}$';
const SEMVER_PATTERN =
  '^(0|[1-9]\\d*)\\.(0|[1-9]\\d*)\\.(0|[1-9]\\d*)(?:-((?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\\.(?:0|[1-9]\\d*|\\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\\+([0-9a-zA-Z-]+(?:\\.[0-9a-zA-Z-]+)*))?$';
const DATE = { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$', format: 'date' };

/** `<hint>`, when present, is true exactly when `risk_level` is `<risk>`. */
function hintRule(risk: string, hint: string): JsonSchemaObject {
  return {
    anyOf: [
      { properties: { risk_level: { const: risk }, [hint]: { const: true } } },
      { properties: { risk_level: { not: { const: risk } }, [hint]: { const: false } } },
    ],
  };
}

/**
 * JSON Schema (2020-12; it uses only keywords draft-07 shares, so draft-07 validators accept it
 * too) of the annotation object `toolAnnotations` writes and `readContract` reads, for gateways
 * written in other languages. The same document ships as
 * `src/contract-annotations.schema.json` in the package.
 *
 * It checks the keys, the levels, the version and date shapes, the alias rules and that
 * `readOnlyHint` / `destructiveHint`, when present, agree with `risk_level`. It cannot check that
 * a sunset is not before the deprecation date; `readContract` does. Unknown keys (such as the
 * standard `title`) are allowed, since the object is MCP's `annotations`.
 */
export const CONTRACT_ANNOTATIONS_JSON_SCHEMA: JsonSchemaObject = deepFreeze({
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://github.com/toolfence/toolfence/blob/main/packages/tool-contract/src/contract-annotations.schema.json',
  title: 'toolfence tool contract annotations',
  description:
    'The facts a tool author declares, published in an MCP tool\'s annotations (and copied to _meta["io.github.toolfence/contract"]).',
  type: 'object',
  required: ['risk_level', 'content_trust_risk', 'version'],
  properties: {
    risk_level: {
      description: 'How much harm a call can do, in ascending order.',
      enum: [...RISK_LEVELS],
    },
    content_trust_risk: {
      description: 'How much caution the output demands, in ascending order.',
      enum: [...CONTENT_TRUST_LEVELS],
    },
    version: {
      description: 'Semantic version of the contract.',
      type: 'string',
      pattern: SEMVER_PATTERN,
      maxLength: 256,
    },
    deprecated_since: { description: 'Date from which the tool is deprecated.', ...DATE },
    sunset: { description: 'Date after which the tool may be removed.', ...DATE },
    replacement: {
      description: 'Name of the tool that replaces this one.',
      type: 'string',
      pattern: TOOL_NAME_PATTERN,
    },
    aliases: {
      description: 'Other names the tool answers to; written only when non-empty.',
      type: 'array',
      uniqueItems: true,
      items: { type: 'string', pattern: TOOL_NAME_PATTERN },
    },
    readOnlyHint: { type: 'boolean' },
    destructiveHint: { type: 'boolean' },
    idempotentHint: { type: 'boolean' },
    openWorldHint: { type: 'boolean' },
  },
  allOf: [hintRule('read-only', 'readOnlyHint'), hintRule('destructive', 'destructiveHint')],
});
