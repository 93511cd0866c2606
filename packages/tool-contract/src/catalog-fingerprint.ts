import { createHash } from 'node:crypto';
import { type CatalogSnapshot, catalogTools } from './catalog.js';
import { ContractReadError } from './contract-read-error.js';

/** Deepest nesting the canonical form follows; deeper values are refused. */
const MAX_DEPTH = 64;

function notJson(): never {
  throw new ContractReadError(
    'The catalog holds a value JSON cannot represent (or is nested too deeply).',
    { code: 'CONTRACT_INVALID_CATALOG' },
  );
}

/** JSON with object keys sorted and `undefined` members left out, as `JSON.stringify` would. */
function canonical(value: unknown, depth: number, stack: Set<object>): string {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') {
    return JSON.stringify(value);
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) notJson();
    return JSON.stringify(value);
  }
  if (typeof value !== 'object' || depth > MAX_DEPTH || stack.has(value)) notJson();
  stack.add(value);
  let text: string;
  if (Array.isArray(value)) {
    text = `[${value.map((item) => (item === undefined ? 'null' : canonical(item, depth + 1, stack))).join(',')}]`;
  } else {
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) notJson();
    const record = value as Record<string, unknown>;
    const members = Object.keys(record)
      .filter((key) => record[key] !== undefined)
      .sort()
      .map((key) => `${JSON.stringify(key)}:${canonical(record[key], depth + 1, stack)}`);
    text = `{${members.join(',')}}`;
  }
  stack.delete(value);
  return text;
}

/**
 * A stable fingerprint of a `tools/list` snapshot for status pages and change detection:
 * `sha256:` and the hex SHA-256 of the canonical JSON of the tools (object keys sorted, tools
 * sorted by their canonical form). The order of tools and of keys does not change it; any change
 * to a name, description, schema, annotation or `_meta` does.
 *
 * @throws {ContractReadError} `CONTRACT_INVALID_CATALOG` for a malformed snapshot or a value
 *   JSON cannot represent (a function, a cycle, a non-finite number, a class instance).
 */
export function catalogFingerprint(catalog: CatalogSnapshot): string {
  const tools = catalogTools(catalog, 'catalog');
  const entries = tools.map((tool) => canonical(tool, 0, new Set())).sort();
  return `sha256:${createHash('sha256')
    .update(`[${entries.join(',')}]`)
    .digest('hex')}`;
}
