// Which 2020-12 schemas may fail ajv's compile after the meta-schema accepted them. A schema with
// none of these features compiles whenever the meta-schema accepts it, so its compile can wait for
// its first use (the validator checks it against the precompiled meta-schema at once, so a bad
// schema is still refused when it is prepared); any other is compiled at once, as before.

/**
 * Keys whose presence anywhere in a schema makes its compile able to fail beyond the meta-schema:
 * references and identifiers (an unresolved `$ref`, a duplicate `$id` or anchor), patterns (a
 * regular expression that is invalid with the `u` flag), `nullable` (ajv refuses it without
 * `type`, and beside `type: "null"` when false), `$async` (refused in a subschema).
 */
const COMPILE_RISK_KEYS: ReadonlySet<string> = new Set([
  '$ref',
  '$dynamicRef',
  '$recursiveRef',
  '$id',
  '$anchor',
  '$dynamicAnchor',
  '$recursiveAnchor',
  'pattern',
  'patternProperties',
  'nullable',
  '$async',
]);

/** How deep the scan goes; a deeper schema is compiled at once (never deferred on a guess). */
const MAX_SCAN_DEPTH = 64;

/**
 * True when a schema may fail ajv's compile although the 2020-12 meta-schema accepts it: it has
 * one of {@link COMPILE_RISK_KEYS} anywhere (as a keyword or as any other key: the scan does not
 * tell them apart, so it errs towards compiling at once), an empty `enum` (ajv refuses one), a
 * `format` when formats are asserted (ajv notes an unknown format when it compiles), or nesting
 * deeper than the scan.
 */
export function mayFailCompile(schema: object, validateFormats: boolean): boolean {
  return scan(schema, validateFormats, 0);
}

function scan(node: object, validateFormats: boolean, depth: number): boolean {
  if (depth > MAX_SCAN_DEPTH) return true;
  if (Array.isArray(node)) {
    for (const item of node) {
      if (typeof item === 'object' && item !== null && scan(item, validateFormats, depth + 1)) {
        return true;
      }
    }
    return false;
  }
  for (const key of Object.keys(node)) {
    if (COMPILE_RISK_KEYS.has(key) || (validateFormats && key === 'format')) return true;
    const value: unknown = (node as Record<string, unknown>)[key];
    if (key === 'enum' && Array.isArray(value) && value.length === 0) return true;
    if (typeof value === 'object' && value !== null && scan(value, validateFormats, depth + 1)) {
      return true;
    }
  }
  return false;
}
