/**
 * The plain shapes of a downstream `tools/call` request and of its result that the gateway's
 * fast path (fast-call-transport.ts) serves without the SDK v2 server's schema checks: the
 * shapes nearly every call has, for which the SDK's 2025-11-25 wire schemas accept the value and
 * give back an equal one (proven by `test/gateway-fast-call.test.ts` against a real SDK server,
 * over generated and hostile records). `undefined` / `false` only means "let the SDK decide".
 */

import { isPlainId, isPlainMessage } from '../transport/plain-message.js';

/** A JSON-RPC id the SDK's schema takes as it is: a string or a safe integer. */
export type PlainId = string | number;

/** A plain `tools/call` request: its id, the tool's name and its arguments. */
export interface PlainToolsCall {
  readonly id: PlainId;
  readonly name: string;
  readonly arguments?: Record<string, unknown>;
  /**
   * A 2026-07-28 call's `_meta` (its request envelope, {@link plainModernToolsCall}); absent on a
   * 2025-11-25 call.
   */
  readonly meta?: Record<string, unknown>;
}

/** An object as `JSON.parse` makes it: non-null, not an array, of the ordinary prototype. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.getPrototypeOf(value) === Object.prototype
  );
}

/** True when `value` has only own enumerable string keys, each one of `allowed`. */
function onlyKeys(value: Record<string, unknown>, allowed: (key: string) => boolean): boolean {
  for (const key in value) {
    if (!Object.hasOwn(value, key) || !allowed(key)) return false;
  }
  return Object.getOwnPropertySymbols(value).length === 0;
}

/**
 * The call when `message` is exactly `{ jsonrpc: "2.0", id, method: "tools/call", params:
 * { name, arguments? } }`: `id` a string or a safe integer, `name` a string, `arguments` a plain
 * object with no own `__proto__` key; nothing else (no `_meta`: no progress token, trace
 * context or envelope; no `task`, `requestState` or `inputResponses`). Otherwise undefined.
 */
export function plainToolsCall(message: unknown): PlainToolsCall | undefined {
  return plainCall(message, false);
}

/**
 * The call when `message` is a plain `tools/call` ({@link plainToolsCall}) whose params carry a
 * `_meta` too: `{ name, arguments?, _meta }`, `_meta` a plain object (returned as `meta`; whether
 * it is a request envelope the SDK server accepts is for the caller to decide). No `task`,
 * `requestState` or `inputResponses`. Otherwise undefined.
 */
export function plainModernToolsCall(message: unknown): PlainToolsCall | undefined {
  return plainCall(message, true);
}

const isCallKey = (key: string): boolean => key === 'name' || key === 'arguments';
const isModernCallKey = (key: string): boolean =>
  key === 'name' || key === 'arguments' || key === '_meta';

function plainCall(message: unknown, modern: boolean): PlainToolsCall | undefined {
  // A plain message (exactly one kind's keys, `jsonrpc` "2.0", a plain id when there is one).
  if (!isPlainObject(message) || !isPlainMessage(message)) return undefined;
  if (message.method !== 'tools/call' || !isPlainId(message.id)) return undefined;
  if (Object.getOwnPropertySymbols(message).length > 0) return undefined;
  const params = message.params;
  if (!isPlainObject(params) || !onlyKeys(params, modern ? isModernCallKey : isCallKey)) {
    return undefined;
  }
  if (typeof params.name !== 'string') return undefined;
  let meta: Record<string, unknown> | undefined;
  if (modern) {
    const value = params._meta;
    if (!isPlainObject(value) || Object.getOwnPropertySymbols(value).length > 0) return undefined;
    meta = value;
  }
  const call: {
    id: PlainId;
    name: string;
    arguments?: Record<string, unknown>;
    meta?: Record<string, unknown>;
  } = { id: message.id, name: params.name };
  if (Object.hasOwn(params, 'arguments')) {
    const args = params.arguments;
    if (!isPlainObject(args) || Object.hasOwn(args, '__proto__')) return undefined;
    if (Object.getOwnPropertySymbols(args).length > 0) return undefined;
    call.arguments = args;
  }
  if (meta !== undefined) call.meta = meta;
  return call;
}

/** The `_meta` key under which a 2026-07-28 result names the server that sent it. */
const SERVER_INFO_META_KEY = 'io.modelcontextprotocol/serverInfo';

/**
 * A plain result ({@link isPlainCallToolResult}) as the SDK v2 server encodes it for a
 * 2026-07-28 request: `resultType: "complete"` after its own keys, then `_meta` naming the
 * server (`serverInfo`, the server's own identity object). Proven against a real SDK server in
 * `test/gateway-modern-fast-call.test.ts`.
 */
export function modernCallToolResult(
  result: Record<string, unknown>,
  serverInfo: unknown,
): Record<string, unknown> {
  return { ...result, resultType: 'complete', _meta: { [SERVER_INFO_META_KEY]: serverInfo } };
}

function isPlainTextBlock(block: unknown): boolean {
  return (
    isPlainObject(block) &&
    block.type === 'text' &&
    typeof block.text === 'string' &&
    onlyKeys(block, (key) => key === 'type' || key === 'text')
  );
}

/**
 * True when `result` is exactly `{ content: [text blocks], structuredContent?, isError? }`: each
 * block exactly `{ type: "text", text: string }`, `structuredContent` a plain object with no own
 * `__proto__` key, `isError` a boolean. The gateway's own answers (a denial, a refusal) and the
 * usual upstream result have this shape; any other result goes through the SDK's checks.
 */
export function isPlainCallToolResult(result: unknown): boolean {
  if (!isPlainObject(result)) return false;
  if (
    !onlyKeys(
      result,
      (key) => key === 'content' || key === 'structuredContent' || key === 'isError',
    )
  ) {
    return false;
  }
  const content = result.content;
  if (!Array.isArray(content) || Object.getPrototypeOf(content) !== Array.prototype) return false;
  for (let index = 0; index < content.length; index++) {
    if (!Object.hasOwn(content, index) || !isPlainTextBlock(content[index])) return false;
  }
  if (Object.hasOwn(result, 'isError') && typeof result.isError !== 'boolean') return false;
  if (!Object.hasOwn(result, 'structuredContent')) return true;
  const structured = result.structuredContent;
  return (
    isPlainObject(structured) &&
    !Object.hasOwn(structured, '__proto__') &&
    Object.getOwnPropertySymbols(structured).length === 0
  );
}
