import { isRecord } from '../is-record.js';

/**
 * The plain-message rule: the JSON-RPC shapes nearly every record has, for which the SDK's
 * `JSONRPCMessageSchema` (SDK 1.x and v2 alike) would accept the value and give back an equal
 * one. Used by `decodeRecord` (the client's records), the protocol session, the HTTP front's era
 * check and the gateway's plain `tools/call` check. No SDK import here: the gateway loads this at
 * start, before any upstream (and the SDK 1.x protocol with it) is loaded.
 */

/**
 * The messages `decodeRecord` found plain ({@link isPlainMessage} true) as it made them: a later
 * reader on the client path (a transport, the protocol session) takes the mark instead of checking
 * the message again. A message without the mark is merely not known to be plain.
 */
const PLAIN_RECORDS = new WeakSet<object>();

/** Marks a freshly decoded message that {@link isPlainMessage} accepted (decode-record.ts). */
export function markPlainRecord(message: object): void {
  PLAIN_RECORDS.add(message);
}

/**
 * True when `message` is plain: marked by `decodeRecord`, or else accepted by
 * {@link isPlainMessage} now. The same answer as `isPlainMessage(message)`, without the second
 * check for a message the decoder already checked.
 */
export function isPlainRecord(message: unknown): boolean {
  return (
    (typeof message === 'object' && message !== null && PLAIN_RECORDS.has(message)) ||
    isPlainMessage(message)
  );
}

/**
 * True only for a message `decodeRecord` marked plain ({@link markPlainRecord}); false means
 * "not known", not "not plain".
 */
export function isMarkedPlainRecord(message: object): boolean {
  return PLAIN_RECORDS.has(message);
}

/** A JSON-RPC id the schema takes as it is: a string or a safe integer. */
export function isPlainId(value: unknown): value is string | number {
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
