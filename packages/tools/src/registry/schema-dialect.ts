import type { JsonObject, JsonValue } from './tool.js';

const JSON_SCHEMA_DIALECTS_VALUES = [
  'draft-04',
  'draft-06',
  'draft-07',
  '2019-09',
  '2020-12',
] as const;

/** The JSON Schema dialects {@link AjvSchemaValidator} validates in, oldest first. */
export const JSON_SCHEMA_DIALECTS: typeof JSON_SCHEMA_DIALECTS_VALUES = Object.freeze(
  JSON_SCHEMA_DIALECTS_VALUES,
);

/** One of {@link JSON_SCHEMA_DIALECTS}. */
export type JsonSchemaDialect = (typeof JSON_SCHEMA_DIALECTS)[number];

/** The dialect a schema's `$schema` names; `none` when it names none, `unknown` for any other value. */
export type DeclaredSchemaDialect = JsonSchemaDialect | 'none' | 'unknown';

/** The dialect a schema without `$schema` is read in (what MCP specifies). */
export const DEFAULT_SCHEMA_DIALECT: JsonSchemaDialect = '2020-12';

const DIALECT_URIS: ReadonlyArray<readonly [RegExp, JsonSchemaDialect]> = [
  [/^https?:\/\/json-schema\.org\/draft-04\/schema#?$/, 'draft-04'],
  [/^https?:\/\/json-schema\.org\/draft-06\/schema#?$/, 'draft-06'],
  [/^https?:\/\/json-schema\.org\/draft-07\/schema#?$/, 'draft-07'],
  [/^https?:\/\/json-schema\.org\/draft\/2019-09\/schema#?$/, '2019-09'],
  [/^https?:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/, '2020-12'],
];

/** The meta-schema URI each dialect is compiled under (the id its ajv class registers). */
export const CANONICAL_DIALECT_URIS: Readonly<Record<JsonSchemaDialect, string>> = Object.freeze({
  'draft-04': 'http://json-schema.org/draft-04/schema#',
  'draft-06': 'http://json-schema.org/draft-06/schema#',
  'draft-07': 'http://json-schema.org/draft-07/schema#',
  '2019-09': 'https://json-schema.org/draft/2019-09/schema',
  '2020-12': 'https://json-schema.org/draft/2020-12/schema',
});

/**
 * The dialect a schema declares with its root `$schema`: one of {@link JSON_SCHEMA_DIALECTS}
 * (`http` or `https`, with or without the trailing `#`), `none` when `$schema` is absent (read as
 * {@link DEFAULT_SCHEMA_DIALECT}), `unknown` for any other value.
 */
export function declaredSchemaDialect(
  schema: Readonly<Record<string, unknown>>,
): DeclaredSchemaDialect {
  if (!Object.hasOwn(schema, '$schema') || schema.$schema === undefined) return 'none';
  const uri = schema.$schema;
  if (typeof uri !== 'string') return 'unknown';
  for (const [pattern, dialect] of DIALECT_URIS) if (pattern.test(uri)) return dialect;
  return 'unknown';
}

// Keywords whose values are schemas, by shape, in draft-04 to draft-07 (what the rewrite walks).
const SCHEMA_KEYWORDS = [
  'additionalItems',
  'additionalProperties',
  'contains',
  'propertyNames',
  'not',
  'if',
  'then',
  'else',
] as const;
const SCHEMA_ARRAY_KEYWORDS = ['allOf', 'anyOf', 'oneOf'] as const;
const SCHEMA_MAP_KEYWORDS = ['properties', 'patternProperties', 'definitions', '$defs'] as const;

// Keywords a `$ref` object keeps: containers other refs may point into, and comments.
const KEPT_BESIDE_REF: ReadonlySet<string> = new Set(['$ref', 'definitions', '$defs', '$comment']);

// Keywords later drafts added that the ajv class for the dialect would otherwise apply.
const LATER_KEYWORDS: Readonly<Partial<Record<JsonSchemaDialect, ReadonlySet<string>>>> = {
  'draft-04': new Set(['const', 'contains', 'propertyNames', 'if', 'then', 'else']),
  'draft-06': new Set(['if', 'then', 'else']),
};

function isRecord(value: unknown): value is Record<string, JsonValue> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * The schema as the dialect's ajv class must see it to judge as the dialect does. For draft-04,
 * -06 and -07: every keyword beside a `$ref` is dropped (those drafts ignore them; ajv would apply
 * them), except `definitions`/`$defs` (other refs may point into them); keywords the dialect does
 * not have but its ajv class knows (draft-04: `const`, `contains`, `propertyNames`,
 * `if`/`then`/`else`; draft-06: `if`/`then`/`else`) are dropped, as unknown keywords are ignored.
 * The root `$schema` becomes the canonical URI. 2019-09 and 2020-12 schemas are returned as they
 * are (apart from `$schema`). Never mutates `schema`; unchanged parts are shared.
 */
export function schemaForDialect(schema: JsonObject, dialect: JsonSchemaDialect): JsonObject {
  const root =
    dialect === '2019-09' || dialect === '2020-12' ? schema : rewrite(schema, dialect, 0);
  const canonical = CANONICAL_DIALECT_URIS[dialect];
  if (root.$schema === canonical || !Object.hasOwn(root, '$schema')) return root;
  return { ...root, $schema: canonical };
}

const MAX_REWRITE_DEPTH = 256;

function rewrite(node: JsonObject, dialect: JsonSchemaDialect, depth: number): JsonObject {
  // Deeper schemas are left as they are; the validator's own limits refuse absurd nesting.
  if (depth > MAX_REWRITE_DEPTH) return node;
  const later = LATER_KEYWORDS[dialect];
  let out: Record<string, JsonValue> | undefined;
  const set = (key: string, value: JsonValue | undefined): void => {
    out ??= { ...node };
    if (value === undefined) delete out[key];
    else out[key] = value;
  };
  const hasRef = Object.hasOwn(node, '$ref');
  for (const key of Object.keys(node)) {
    if (key === '$schema' && depth === 0) continue;
    if ((hasRef && !KEPT_BESIDE_REF.has(key)) || later?.has(key) === true) set(key, undefined);
  }
  const current = (out ?? node) as Record<string, JsonValue>;
  for (const key of SCHEMA_KEYWORDS) {
    const value = current[key];
    if (isRecord(value)) {
      const next = rewrite(value, dialect, depth + 1);
      if (next !== value) set(key, next);
    }
  }
  const items = current.items;
  if (isRecord(items)) {
    const next = rewrite(items, dialect, depth + 1);
    if (next !== items) set('items', next);
  } else if (Array.isArray(items)) {
    const next = rewriteArray(items, dialect, depth);
    if (next !== items) set('items', next);
  }
  for (const key of SCHEMA_ARRAY_KEYWORDS) {
    const value = current[key];
    if (Array.isArray(value)) {
      const next = rewriteArray(value, dialect, depth);
      if (next !== value) set(key, next);
    }
  }
  for (const key of [...SCHEMA_MAP_KEYWORDS, 'dependencies']) {
    const value = current[key];
    if (!isRecord(value)) continue;
    let map: Record<string, JsonValue> | undefined;
    for (const [name, sub] of Object.entries(value)) {
      // `dependencies` values are schemas or arrays of property names.
      if (!isRecord(sub)) continue;
      const next = rewrite(sub, dialect, depth + 1);
      if (next !== sub) {
        map ??= { ...value };
        map[name] = next;
      }
    }
    if (map !== undefined) set(key, map);
  }
  return (out ?? node) as JsonObject;
}

function rewriteArray(
  values: readonly JsonValue[],
  dialect: JsonSchemaDialect,
  depth: number,
): readonly JsonValue[] {
  let out: JsonValue[] | undefined;
  values.forEach((value, index) => {
    if (!isRecord(value)) return;
    const next = rewrite(value, dialect, depth + 1);
    if (next !== value) {
      out ??= [...values];
      out[index] = next;
    }
  });
  return out ?? values;
}
