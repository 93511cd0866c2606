// Standard MCP request headers (SEP-2243, MCP 2026-07-28): `Mcp-Method`, `Mcp-Name`, and tool
// parameters annotated `x-mcp-header` mirrored into `Mcp-Param-{Name}`.
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { isRecord } from '../is-record.js';

/** One `x-mcp-header` annotation of a tool's `inputSchema`. */
export interface ParamHeaderDeclaration {
  /** Property names from the argument object down to the annotated value. */
  readonly path: readonly string[];
  /** The header name after `Mcp-Param-`, as the tool declared it. */
  readonly name: string;
  /** The JSON Schema type of the annotated property. */
  readonly type: 'string' | 'integer' | 'boolean';
}

/**
 * What a tool's annotations amount to: its header declarations, or why they break the rules (a
 * fixed, log-safe reason that never quotes the schema).
 */
export type ParamHeaderScan =
  | {
      /** The annotations keep the rules. */
      readonly ok: true;
      /** Every annotation, in schema order (empty when there is none). */
      readonly declarations: readonly ParamHeaderDeclaration[];
    }
  | {
      /** An annotation breaks the rules: the tool is skipped. */
      readonly ok: false;
      /** Which rule, as a fixed, log-safe sentence. */
      readonly reason: string;
    };

const ANNOTATION = 'x-mcp-header';
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const PRIMITIVE_TYPES: ReadonlySet<string> = new Set(['string', 'integer', 'boolean']);
/** Keywords whose subschemas are not reached through `properties` alone: no annotation may sit there. */
const UNREACHABLE_KEYWORDS = [
  'items',
  'prefixItems',
  'contains',
  'additionalProperties',
  'unevaluatedProperties',
  'unevaluatedItems',
  'propertyNames',
  'patternProperties',
  'dependentSchemas',
  'oneOf',
  'anyOf',
  'allOf',
  'not',
  'if',
  'then',
  'else',
  '$defs',
  'definitions',
] as const;
const MAP_KEYWORDS: ReadonlySet<string> = new Set([
  'patternProperties',
  'dependentSchemas',
  '$defs',
  'definitions',
]);
/** How deep the scan walks a schema; deeper schemas are refused rather than walked. */
const MAX_SCHEMA_DEPTH = 64;
/** Annotations one tool may declare. */
const MAX_DECLARATIONS = 64;

/**
 * Scans a tool's `inputSchema` for `x-mcp-header` annotations and checks the spec's rules: a
 * non-empty RFC 9110 token, unique ignoring case, only on `string`, `integer` or `boolean`
 * properties reached through `properties` alone (never under `items`, combinators, `$defs`...).
 * Never throws.
 */
export function scanParamHeaders(inputSchema: unknown): ParamHeaderScan {
  const declarations: ParamHeaderDeclaration[] = [];
  const seen = new Set<string>();
  const visit = (
    node: unknown,
    path: readonly string[],
    reachable: boolean,
  ): string | undefined => {
    if (!isRecord(node)) return undefined;
    if (path.length > MAX_SCHEMA_DEPTH) return 'tool inputSchema nests too deeply to scan';
    if (ANNOTATION in node) {
      if (!reachable || path.length === 0) {
        return 'tool inputSchema has an x-mcp-header annotation not reached through properties alone';
      }
      const name = node[ANNOTATION];
      if (typeof name !== 'string' || name === '') {
        return 'tool inputSchema has an x-mcp-header annotation that is not a non-empty string';
      }
      if (!TOKEN.test(name)) {
        return 'tool inputSchema has an x-mcp-header annotation that is not an HTTP token';
      }
      const type = node.type;
      if (typeof type !== 'string' || !PRIMITIVE_TYPES.has(type)) {
        return 'tool inputSchema has an x-mcp-header annotation on a property that is not a string, integer or boolean';
      }
      const lower = name.toLowerCase();
      if (seen.has(lower)) {
        return 'tool inputSchema names one x-mcp-header twice (header names ignore case)';
      }
      seen.add(lower);
      if (declarations.length >= MAX_DECLARATIONS) {
        return `tool inputSchema has more than ${MAX_DECLARATIONS} x-mcp-header annotations`;
      }
      declarations.push(
        Object.freeze({
          path: Object.freeze([...path]),
          name,
          type: type as ParamHeaderDeclaration['type'],
        }),
      );
    }
    if (isRecord(node.properties)) {
      for (const [key, child] of Object.entries(node.properties)) {
        const fault = visit(child, [...path, key], reachable);
        if (fault !== undefined) return fault;
      }
    }
    for (const keyword of UNREACHABLE_KEYWORDS) {
      const sub = node[keyword];
      if (sub === undefined) continue;
      const branches = Array.isArray(sub)
        ? sub
        : MAP_KEYWORDS.has(keyword) && isRecord(sub)
          ? Object.values(sub)
          : [sub];
      for (const branch of branches) {
        const fault = visit(branch, [...path, `<${keyword}>`], false);
        if (fault !== undefined) return fault;
      }
    }
    return undefined;
  };
  const fault = visit(inputSchema, [], true);
  if (fault !== undefined) return { ok: false, reason: fault };
  return { ok: true, declarations: Object.freeze(declarations) };
}

const SENTINEL_PREFIX = '=?base64?';
const SENTINEL_SUFFIX = '?=';

/**
 * Encodes a header value: printable ASCII without leading or trailing whitespace is sent as is;
 * anything else (non-ASCII, control characters including tab, edge whitespace, the empty
 * string, or a value that already looks like the sentinel) is sent as `=?base64?{utf-8}?=`.
 */
export function encodeHeaderValue(value: string): string {
  let plain = value !== '' && value === value.trim();
  if (plain && value.startsWith(SENTINEL_PREFIX) && value.endsWith(SENTINEL_SUFFIX)) plain = false;
  for (let index = 0; plain && index < value.length; index++) {
    const code = value.charCodeAt(index);
    if (code < 0x20 || code > 0x7e) plain = false;
  }
  if (plain) return value;
  return `${SENTINEL_PREFIX}${Buffer.from(value, 'utf8').toString('base64')}${SENTINEL_SUFFIX}`;
}

/** Why one argument cannot be mirrored into its header. */
export interface ParamHeaderProblem {
  /** The header name after `Mcp-Param-`. */
  readonly name: string;
  /** What is wrong with the value (no value is copied). */
  readonly reason: string;
}

/**
 * Builds the `Mcp-Param-*` headers of one `tools/call`: `null` and absent values are omitted; a
 * value of the wrong type, or an integer outside the safe range, is a problem (the caller
 * refuses the call before sending).
 */
export function buildParamHeaders(
  declarations: readonly ParamHeaderDeclaration[],
  args: unknown,
): { readonly headers: Record<string, string>; readonly problems: readonly ParamHeaderProblem[] } {
  const headers: Record<string, string> = {};
  const problems: ParamHeaderProblem[] = [];
  for (const declaration of declarations) {
    let value: unknown = args;
    for (const key of declaration.path) {
      value = isRecord(value) && Object.hasOwn(value, key) ? value[key] : undefined;
    }
    if (value === undefined || value === null) continue;
    let text: string | undefined;
    if (declaration.type === 'string' && typeof value === 'string') text = value;
    else if (declaration.type === 'boolean' && typeof value === 'boolean') text = String(value);
    else if (declaration.type === 'integer' && Number.isSafeInteger(value)) text = String(value);
    if (text === undefined) {
      problems.push({
        name: declaration.name,
        reason: `is not a ${declaration.type === 'integer' ? 'safe integer' : declaration.type}`,
      });
      continue;
    }
    headers[`mcp-param-${declaration.name.toLowerCase()}`] = encodeHeaderValue(text);
  }
  return { headers, problems };
}

/** Which `params` field `Mcp-Name` mirrors, per method. */
const NAME_FIELDS: Readonly<Record<string, string>> = Object.freeze({
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
});

/**
 * The standard headers of one outgoing message in modern mode: `Mcp-Method` for every request
 * and notification, `Mcp-Name` where the spec names a field, plus `paramHeaders` for a
 * `tools/call`. Responses carry none.
 */
export function standardHeaders(
  message: JSONRPCMessage,
  paramHeaders: (name: string, args: unknown) => Record<string, string> | undefined,
): Record<string, string> | undefined {
  if (!('method' in message) || typeof message.method !== 'string') return undefined;
  const headers: Record<string, string> = { 'mcp-method': encodeHeaderValue(message.method) };
  const params = isRecord(message.params) ? message.params : undefined;
  const field = Object.hasOwn(NAME_FIELDS, message.method)
    ? NAME_FIELDS[message.method]
    : undefined;
  const name = field === undefined ? undefined : params?.[field];
  if (typeof name === 'string') headers['mcp-name'] = encodeHeaderValue(name);
  if (message.method === 'tools/call' && typeof name === 'string') {
    Object.assign(headers, paramHeaders(name, params?.arguments));
  }
  return headers;
}
