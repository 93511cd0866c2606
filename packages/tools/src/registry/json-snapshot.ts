import { ConfigurationError } from './configuration-error.js';
import type { JsonObject, JsonValue } from './tool.js';
import { ToolInputError } from './tool-input-error.js';

/** Structure limits of a JSON snapshot. Each one is enforced while the copy is taken. */
export interface JsonSnapshotLimits {
  /** Deepest allowed nesting of arrays and objects (the root object is depth 1). Default 64. */
  readonly maxDepth: number;
  /** Most values (containers and primitives, the root included). Default 10,000. */
  readonly maxNodes: number;
  /** Most bytes: UTF-8 of every string and key plus structural overhead, close to the JSON text size. Default 8 MiB. */
  readonly maxBytes: number;
}

/** The default snapshot limits: depth 64, 10,000 nodes, 8 MiB. */
export const DEFAULT_SNAPSHOT_LIMITS: JsonSnapshotLimits = Object.freeze({
  maxDepth: 64,
  maxNodes: 10_000,
  maxBytes: 8 * 1024 * 1024,
});

/** Why a value could not be snapshotted (`details.reason` of the {@link ToolInputError}). */
export type SnapshotFailure = 'not-json' | 'not-object' | 'cycle' | 'depth' | 'nodes' | 'bytes';

/**
 * Merges partial limits over {@link DEFAULT_SNAPSHOT_LIMITS}, checking each is a positive safe
 * integer (a boolean or a string is not a number). Throws {@link ConfigurationError}.
 */
export function resolveSnapshotLimits(
  limits: Partial<JsonSnapshotLimits> = {},
): JsonSnapshotLimits {
  const resolved = { ...DEFAULT_SNAPSHOT_LIMITS };
  for (const key of ['maxDepth', 'maxNodes', 'maxBytes'] as const) {
    const value: unknown = limits[key];
    if (value === undefined) continue;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) {
      throw new ConfigurationError(`limits.${key} must be a positive integer`, {
        details: { option: `limits.${key}` },
      });
    }
    resolved[key] = value;
  }
  return Object.freeze(resolved);
}

interface Walk {
  readonly limits: JsonSnapshotLimits;
  /** The limits again, as own fields (one load each on the hot path). */
  readonly maxNodes: number;
  readonly maxDepth: number;
  readonly maxBytes: number;
  nodes: number;
  /** Bytes so far, counting short strings at one byte per UTF-16 unit (a lower bound). */
  bytes: number;
  /** Bytes so far, counting short strings at three bytes per UTF-16 unit (an upper bound). */
  upper: number;
}

/**
 * A failure on its way up: each container level it passes adds its key (innermost first), so the
 * hot path keeps no path at all; the root turns it into a {@link ToolInputError}.
 */
class Unwinding {
  readonly reason: SnapshotFailure;
  readonly message: string;
  readonly limit: number | undefined;
  readonly cause: unknown;
  /** Keys and indexes from the failing value up to the root (reversed at the root). */
  readonly keys: (string | number)[] = [];
  constructor(reason: SnapshotFailure, message: string, limit?: number, cause?: unknown) {
    this.reason = reason;
    this.message = message;
    this.limit = limit;
    this.cause = cause;
  }
}

/** Adds `key` to a failure passing up through its container (a getter's throw becomes one). */
function unwind(error: unknown, key: string | number): Unwinding {
  const unwinding =
    error instanceof Unwinding
      ? error
      : new Unwinding('not-json', 'reading the value threw', undefined, error);
  unwinding.keys.push(key);
  return unwinding;
}

const objectPrototype = Object.prototype;
const hasOwnKey = Object.prototype.hasOwnProperty;

/**
 * Takes a deep, frozen copy of a JSON object: plain objects, dense arrays, strings, finite
 * numbers, booleans and `null` only; no cycles; within `limits`. Only own enumerable string keys
 * are copied (symbol-keyed properties are left out, as `JSON.stringify` leaves them out). Every
 * property is read exactly once, so getters or proxies cannot show different values to later
 * readers.
 *
 * Throws {@link ToolInputError} with `details: { reason, issues: [{ path, message }], limit? }`
 * (a JSON path, never a value) when the value is not acceptable.
 */
export function snapshotJsonObject(
  value: unknown,
  limits: JsonSnapshotLimits = DEFAULT_SNAPSHOT_LIMITS,
): JsonObject {
  if (!isPlainObject(value)) {
    throw failure('not-object', [], 'the arguments must be a JSON object');
  }
  return guarded(value, limits, true) as JsonObject;
}

/** Like {@link snapshotJsonObject} for any JSON value at the root. */
export function snapshotJsonValue(
  value: unknown,
  limits: JsonSnapshotLimits = DEFAULT_SNAPSHOT_LIMITS,
): JsonValue {
  return guarded(value, limits);
}

/** Copies, turning anything a getter or proxy throws into a {@link ToolInputError}. */
/** `plainRoot`: the root is known to be a plain object (checked by the caller, not again). */
function guarded(value: unknown, limits: JsonSnapshotLimits, plainRoot = false): JsonValue {
  const walk: Walk = {
    limits,
    maxNodes: limits.maxNodes,
    maxDepth: limits.maxDepth,
    maxBytes: limits.maxBytes,
    nodes: 0,
    bytes: 0,
    upper: 0,
  };
  let snapshot: JsonValue;
  try {
    if (plainRoot) {
      // The root's node (the limits are at least 1, so it always fits) and its copy.
      walk.nodes = 1;
      snapshot = copyPlainObject(value as object, walk, 1);
    } else {
      snapshot = copy(value, walk, 1);
    }
  } catch (error) {
    let unwinding =
      error instanceof Unwinding
        ? error
        : new Unwinding('not-json', 'reading the value threw', undefined, error);
    // A cycle never ends, so the copy (which keeps no ancestors) stops at the depth limit; tell a
    // cycle from deep nesting only now, on the failure path.
    if (unwinding.reason === 'depth' && hasCycle(value, limits.maxDepth + 1)) {
      unwinding = new Unwinding('cycle', 'the arguments contain a cycle');
      unwinding.keys.push(...cyclePath);
      cyclePath.length = 0;
    }
    const failed = failure(
      unwinding.reason,
      unwinding.keys.reverse(),
      unwinding.message,
      unwinding.limit,
    );
    if (unwinding.cause === undefined) throw failed;
    throw new ToolInputError(failed.message, {
      details: failed.details ?? {},
      cause: unwinding.cause,
    });
  }
  // Remembering snapshots to skip copying them again (a WeakMap entry per call) cost more than
  // the copies it would save: every call pays the entry, few calls pass a snapshot back.
  if (walk.upper > limits.maxBytes) checkExactBytes(snapshot, limits);
  return snapshot;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === objectPrototype || prototype === null;
}

function copy(value: unknown, walk: Walk, depth: number): JsonValue {
  walk.nodes += 1;
  if (walk.nodes > walk.maxNodes) {
    throw new Unwinding('nodes', 'the arguments have too many values', walk.limits.maxNodes);
  }
  if (typeof value === 'object' && value !== null) return copyContainer(value, walk, depth);
  return copyPrimitive(value, walk);
}

/** A primitive leaf, counted (its node is counted by the caller); anything else is refused. */
function copyPrimitive(value: unknown, walk: Walk): JsonValue {
  // An if-chain rather than `switch (typeof value)`: each test compiles to a type check, where
  // the switch asks the generic typeof builtin for a string first.
  if (typeof value === 'string') {
    addText(walk, value, 2);
    return value;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Unwinding('not-json', 'numbers must be finite');
    addBytes(walk, 8);
    return value;
  }
  if (typeof value === 'boolean') {
    addBytes(walk, 5);
    return value;
  }
  if (value === null) {
    addBytes(walk, 4);
    return null;
  }
  throw new Unwinding('not-json', `a ${typeof value} is not a JSON value`);
}

/** An array or object (its node is counted by the caller), within the depth limit. */
function copyContainer(value: object, walk: Walk, depth: number): JsonValue {
  if (depth > walk.maxDepth) {
    throw new Unwinding('depth', 'the arguments are nested too deeply', walk.limits.maxDepth);
  }
  return Array.isArray(value) ? copyArray(value, walk, depth) : copyObject(value, walk, depth);
}

// copyArray and copyObject count each child and copy a primitive child in place (no call to
// `copy` per leaf: most values of a tool call are strings and numbers), and recurse for a
// container child only.

function copyArray(value: readonly unknown[], walk: Walk, depth: number): JsonValue {
  const length = value.length;
  addBytes(walk, 2 + length);
  // Filled by push, so the copy is a packed array (a preallocated one would stay holey, and a
  // proxy's length would size it before any limit is checked).
  const out: JsonValue[] = [];
  let index = 0;
  try {
    for (; index < length; index += 1) {
      const item = value[index];
      // A hole reads as undefined; only then is `in` worth asking.
      if (item === undefined && !(index in value)) {
        throw new Unwinding('not-json', 'arrays must not have holes');
      }
      walk.nodes += 1;
      if (walk.nodes > walk.maxNodes) {
        throw new Unwinding('nodes', 'the arguments have too many values', walk.limits.maxNodes);
      }
      out.push(
        typeof item === 'object' && item !== null
          ? copyContainer(item, walk, depth + 1)
          : copyPrimitive(item, walk),
      );
    }
  } catch (error) {
    throw unwind(error, index);
  }
  return Object.freeze(out);
}

function copyObject(value: object, walk: Walk, depth: number): JsonValue {
  if (!isPlainObject(value)) {
    throw new Unwinding('not-json', 'only plain objects are JSON objects');
  }
  return copyPlainObject(value, walk, depth);
}

/** Copies an object already known to be plain. */
function copyPlainObject(value: object, walk: Walk, depth: number): JsonValue {
  const out: Record<string, JsonValue> = {};
  addBytes(walk, 2);
  const source = value as Record<string, unknown>;
  // The key being copied; undefined between keys, so a failure to list the keys (a proxy's trap)
  // is reported at this object's path, as with Object.keys.
  let key: string | undefined;
  try {
    // for-in walks the object's enum cache without allocating a key list (Object.keys copies
    // it); the own-property test drops keys an enumerable property of Object.prototype would add.
    for (const name in source) {
      if (!hasOwnKey.call(source, name)) continue;
      key = name;
      addText(walk, name, 4);
      walk.nodes += 1;
      if (walk.nodes > walk.maxNodes) {
        throw new Unwinding('nodes', 'the arguments have too many values', walk.limits.maxNodes);
      }
      // Indexed by the for-in variable itself, so the load can use the enum cache.
      const item = source[name];
      const child =
        typeof item === 'object' && item !== null
          ? copyContainer(item, walk, depth + 1)
          : copyPrimitive(item, walk);
      if (name === '__proto__') {
        Object.defineProperty(out, name, {
          value: child,
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } else {
        out[name] = child;
      }
      key = undefined;
    }
  } catch (error) {
    // Without a key the parent (or the root) turns a foreign throw into a failure.
    throw key === undefined ? error : unwind(error, key);
  }
  return Object.freeze(out);
}

/** Keys from the root to the first repeated container (innermost first), set by {@link hasCycle}. */
const cyclePath: (string | number)[] = [];

/**
 * True when `value` holds a container inside itself within `maxDepth` levels (only on the failure
 * path: reading the value a second time cannot change a result, only the reason of a refusal).
 * Leaves the path to the repeated container in {@link cyclePath}, innermost key first.
 */
function hasCycle(value: unknown, maxDepth: number): boolean {
  const ancestors: object[] = [];
  const keys: (string | number)[] = [];
  const visit = (node: unknown): boolean => {
    if (typeof node !== 'object' || node === null) return false;
    if (ancestors.includes(node)) return true;
    if (ancestors.length >= maxDepth) return false;
    ancestors.push(node);
    try {
      const entries: [string | number, unknown][] = Array.isArray(node)
        ? node.map((item, index) => [index, item])
        : Object.keys(node).map((key) => [key, (node as Record<string, unknown>)[key]]);
      for (const [key, child] of entries) {
        keys.push(key);
        if (visit(child)) return true;
        keys.pop();
      }
    } catch {
      return false;
    }
    ancestors.pop();
    return false;
  };
  cyclePath.length = 0;
  if (!visit(value)) return false;
  cyclePath.push(...keys.reverse());
  return true;
}

/** Recounts a finished (frozen) snapshot with exact UTF-8 sizes, failing where it crosses the limit. */
function checkExactBytes(snapshot: JsonValue, limits: JsonSnapshotLimits): void {
  const walk: Walk = {
    limits,
    maxNodes: limits.maxNodes,
    maxDepth: limits.maxDepth,
    maxBytes: limits.maxBytes,
    nodes: 0,
    bytes: 0,
    upper: 0,
  };
  const keys: (string | number)[] = [];
  const count = (value: JsonValue): void => {
    if (typeof value === 'string') {
      addExact(utf8Length(value) + 2);
    } else if (typeof value === 'number') {
      addExact(8);
    } else if (typeof value === 'boolean') {
      addExact(5);
    } else if (value === null) {
      addExact(4);
    } else if (Array.isArray(value)) {
      addExact(2 + value.length);
      for (let index = 0; index < value.length; index += 1) {
        keys.push(index);
        count(value[index] as JsonValue);
        keys.pop();
      }
    } else {
      addExact(2);
      const object = value as JsonObject;
      for (const key of Object.keys(object)) {
        keys.push(key);
        addExact(utf8Length(key) + 4);
        count(object[key] as JsonValue);
        keys.pop();
      }
    }
  };
  const addExact = (bytes: number): void => {
    walk.bytes += bytes;
    if (walk.bytes > limits.maxBytes) {
      throw failure('bytes', keys, 'the arguments are too large', limits.maxBytes);
    }
  };
  count(snapshot);
}

function utf8Length(text: string): number {
  if (text.length > 256) return Buffer.byteLength(text, 'utf8');
  let bytes = text.length;
  for (let index = 0; index < text.length; index += 1) {
    const unit = text.charCodeAt(index);
    // Two UTF-16 units of a surrogate pair add 2 each: 4 bytes in all.
    if (unit >= 0x80) bytes += unit >= 0x800 && (unit < 0xd800 || unit > 0xdfff) ? 2 : 1;
  }
  return bytes;
}

/**
 * Counts a string: exactly when long, else between a lower and an upper bound (counting UTF-8
 * of every short string is the single largest cost of a snapshot). When the upper bound ends
 * over the limit, {@link checkExactBytes} recounts the finished snapshot exactly.
 */
function addText(walk: Walk, text: string, overhead: number): void {
  const length = text.length;
  if (length > 256) {
    addBytes(walk, Buffer.byteLength(text, 'utf8') + overhead);
    return;
  }
  walk.upper += 2 * length;
  addBytes(walk, length + overhead);
}

function addBytes(walk: Walk, bytes: number): void {
  walk.bytes += bytes;
  walk.upper += bytes;
  if (walk.bytes > walk.maxBytes) {
    throw new Unwinding('bytes', 'the arguments are too large', walk.limits.maxBytes);
  }
}

const identifier = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Appends a key to a JSON path: `$.name` or `$["odd key"]`, keys cut at 64 characters. */
export function appendPath(path: string, key: string): string {
  if (identifier.test(key) && key.length <= 64) return `${path}.${key}`;
  const shown = key.length > 64 ? `${key.slice(0, 64)}…` : key;
  return `${path}[${JSON.stringify(shown)}]`;
}

function failure(
  reason: SnapshotFailure,
  keys: readonly (string | number)[],
  message: string,
  limit?: number,
): ToolInputError {
  let path = '$';
  for (const key of keys) {
    path = typeof key === 'number' ? `${path}[${key}]` : appendPath(path, key);
    if (path.length > 512) {
      path = `${path.slice(0, 512)}…`;
      break;
    }
  }
  return new ToolInputError(`Invalid tool arguments at ${path}: ${message}`, {
    details: {
      reason,
      issues: [{ path, message }],
      ...(limit === undefined ? {} : { limit }),
    },
  });
}
