import { type JSONRPCMessage, JSONRPCMessageSchema } from '@modelcontextprotocol/sdk/types.js';
import { isRecord } from '../is-record.js';
import { TransportProtocolError } from './errors.js';
import { parseBoundedJson } from './json-scan.js';
import type { RecordLimits } from './record-limits.js';

/**
 * Scans, parses and checks one record; a JSON array is a batch of messages. An empty batch
 * (`[]`) is refused: JSON-RPC 2.0 says an empty array is an invalid request.
 *
 * Each message is checked against the SDK's `JSONRPCMessageSchema`. The plain shapes nearly every
 * record has (a result, an error, a request or a notification with at most a plain `_meta`, no
 * extra key and nothing a copy would change) are recognised by {@link isPlainMessage} without the schema: the
 * schema would accept them and give back an equal value, and the JSON text's own parse is
 * already a fresh object nobody else holds. Everything else goes through the schema, which
 * decides.
 */
export function decodeRecord(text: string, limits: RecordLimits): JSONRPCMessage[] {
  const value = parseBoundedJson(text, limits);
  if (!Array.isArray(value)) return [checkedMessage(value)];
  if (value.length === 0) {
    throw new TransportProtocolError(
      'A record from the MCP server is an empty batch ([]); a batch needs at least one message',
    );
  }
  const messages: JSONRPCMessage[] = [];
  for (const item of value) messages.push(checkedMessage(item));
  return messages;
}

function checkedMessage(item: unknown): JSONRPCMessage {
  if (isPlainMessage(item)) return item as JSONRPCMessage;
  const parsed = JSONRPCMessageSchema.safeParse(item);
  if (!parsed.success) {
    throw new TransportProtocolError('A record from the MCP server is not a JSON-RPC message');
  }
  return parsed.data;
}

/** A JSON-RPC id the schema takes as it is: a string or a safe integer. */
function isPlainId(value: unknown): boolean {
  return typeof value === 'string' || Number.isSafeInteger(value);
}

/**
 * An object the schema passes through unchanged (`params`, `result`): no own `__proto__` key (a
 * copy would turn it into a prototype) and, when it has `_meta`, a plain one ({@link isPlainMeta}).
 */
function isPlainBody(value: unknown): boolean {
  return (
    isRecord(value) &&
    !Object.hasOwn(value, '__proto__') &&
    (!Object.hasOwn(value, '_meta') || isPlainMeta(value._meta))
  );
}

/** The `_meta` key the schema checks as an object of its own (and strips other keys from). */
const RELATED_TASK_KEY = 'io.modelcontextprotocol/related-task';

/**
 * A `_meta` the schema (a loose object) passes through unchanged: an object with no own
 * `__proto__` key, no related-task entry (the schema rebuilds that one), and a `progressToken`,
 * when there is one, that is a string or a safe integer. Nearly every modern (2026-07-28) result
 * carries a `_meta` of this kind.
 */
function isPlainMeta(meta: unknown): boolean {
  if (
    !isRecord(meta) ||
    Object.hasOwn(meta, '__proto__') ||
    Object.hasOwn(meta, RELATED_TASK_KEY)
  ) {
    return false;
  }
  return !Object.hasOwn(meta, 'progressToken') || isPlainId(meta.progressToken);
}

/**
 * True when `item` is a JSON-RPC message the SDK's schema accepts as it is: exactly the keys of
 * one message kind (`jsonrpc` `"2.0"`; `id` a string or a safe integer; `method` a string;
 * `params` and `result` plain bodies; `error` exactly `code` (a safe integer), `message` (a
 * string) and optionally `data`). False only means "ask the schema", never "refuse".
 */
export function isPlainMessage(item: unknown): boolean {
  if (!isRecord(item) || item.jsonrpc !== '2.0') return false;
  // The keys are own and distinct, so after this loop each member appears at most once.
  let hasId = false;
  let hasParams = false;
  let body: 'method' | 'result' | 'error' | undefined;
  for (const key in item) {
    if (!Object.hasOwn(item, key)) return false;
    if (key === 'jsonrpc') continue;
    if (key === 'id') hasId = true;
    else if (key === 'params') hasParams = true;
    else if (body === undefined && (key === 'method' || key === 'result' || key === 'error')) {
      body = key;
    } else return false;
  }
  if (hasId && !isPlainId(item.id)) return false;
  if (body === 'method') {
    return typeof item.method === 'string' && (!hasParams || isPlainBody(item.params));
  }
  // Params belong to requests and notifications; only an error may lack its id.
  if (hasParams) return false;
  if (body === 'result') return hasId && isPlainBody(item.result);
  return body === 'error' && isPlainError(item.error);
}

/** `{ code, message, data? }` with nothing else (the schema drops other keys of an error). */
function isPlainError(error: unknown): boolean {
  if (!isRecord(error) || !Number.isSafeInteger(error.code) || typeof error.message !== 'string') {
    return false;
  }
  for (const key in error) {
    if (!Object.hasOwn(error, key)) return false;
    if (key !== 'code' && key !== 'message' && key !== 'data') return false;
  }
  return true;
}
