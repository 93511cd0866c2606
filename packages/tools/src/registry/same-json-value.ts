import { ConfigurationError } from './configuration-error.js';
import { checkOptionKeys } from './option-keys.js';

/** How {@link sameJsonValue} compares. */
export interface SameJsonValueOptions {
  /**
   * Deepest nesting compared: the top value is at depth 0, an item of it at depth 1, and an array
   * or object deeper than this is unequal to anything but itself (so a hostile value cannot exhaust
   * the stack). A whole number, 0 or more. Default 64.
   */
  readonly maxDepth?: number;
  /**
   * `true`: an object key that is absent (or `undefined`) on one side equals `null` on the other
   * (SEP-2640's rule for Skills front matter). Default `false`: both objects have the same keys.
   */
  readonly absentIsNull?: boolean;
  /**
   * `true`: only values as `JSON.parse` makes them compare equal: arrays of the ordinary prototype
   * without holes, objects of the ordinary prototype without symbol keys or inherited enumerable
   * keys. Default `false`: any arrays and objects compare by their own enumerable string keys.
   */
  readonly plainOnly?: boolean;
}

/** Default of {@link SameJsonValueOptions.maxDepth}: 64. */
const DEFAULT_MAX_DEPTH = 64;

const OPTION_KEYS: readonly string[] = ['maxDepth', 'absentIsNull', 'plainOnly'];

interface Settings {
  readonly maxDepth: number;
  readonly absentIsNull: boolean;
  readonly plainOnly: boolean;
}

const DEFAULTS: Settings = { maxDepth: DEFAULT_MAX_DEPTH, absentIsNull: false, plainOnly: false };

/**
 * Deep equality of two JSON values: the same primitives (`===`), arrays of the same length with
 * equal items in order, and objects with the same keys (in any order) and equal values. The same
 * reference is always equal to itself.
 *
 * @param left - One value.
 * @param right - The other value.
 * @param options - `maxDepth`, `absentIsNull` and `plainOnly`; see {@link SameJsonValueOptions}.
 *   A frozen options object (`Object.freeze`) is checked on its first use only, so a caller on a
 *   hot path passes the same frozen object every time.
 * @returns `true` when the two values are equal as JSON under `options`.
 * @throws {@link ConfigurationError} (`REGISTRY_CONFIGURATION`) when `options` is not an object,
 *   has an unknown key, or `maxDepth` is not a whole number of 0 or more.
 */
export function sameJsonValue(
  left: unknown,
  right: unknown,
  options?: SameJsonValueOptions,
): boolean {
  return same(left, right, 0, options === undefined ? DEFAULTS : settingsOf(options));
}

/** The settings of frozen options objects already checked (a hot caller passes the same one). */
const CHECKED = new WeakMap<object, Settings>();

function settingsOf(options: SameJsonValueOptions): Settings {
  const checked =
    typeof options === 'object' && options !== null ? CHECKED.get(options) : undefined;
  if (checked !== undefined) return checked;
  checkOptionKeys(options, OPTION_KEYS, 'sameJsonValue');
  const { maxDepth = DEFAULT_MAX_DEPTH, absentIsNull = false, plainOnly = false } = options;
  if (!Number.isSafeInteger(maxDepth) || maxDepth < 0) {
    throw new ConfigurationError(
      'sameJsonValue option "maxDepth" must be a whole number, 0 or more',
      {
        details: { option: 'maxDepth' },
      },
    );
  }
  for (const [name, value] of [
    ['absentIsNull', absentIsNull],
    ['plainOnly', plainOnly],
  ] as const) {
    if (typeof value !== 'boolean') {
      throw new ConfigurationError(`sameJsonValue option "${name}" must be true or false`, {
        details: { option: name },
      });
    }
  }
  const settings: Settings = { maxDepth, absentIsNull, plainOnly };
  // A frozen object cannot change, so its check holds for every later call.
  if (Object.isFrozen(options)) CHECKED.set(options, settings);
  return settings;
}

function same(left: unknown, right: unknown, depth: number, settings: Settings): boolean {
  if (left === right) return true;
  if (typeof left !== 'object' || typeof right !== 'object' || left === null || right === null) {
    return false;
  }
  if (depth > settings.maxDepth) return false;
  if (Array.isArray(left)) {
    if (!Array.isArray(right) || left.length !== right.length) return false;
    if (settings.plainOnly) {
      if (Object.getPrototypeOf(left) !== Array.prototype) return false;
      if (Object.getPrototypeOf(right) !== Array.prototype) return false;
    }
    for (let index = 0; index < left.length; index++) {
      if (settings.plainOnly && (!Object.hasOwn(left, index) || !Object.hasOwn(right, index))) {
        return false;
      }
      if (!same(left[index], right[index], depth + 1, settings)) return false;
    }
    return true;
  }
  if (Array.isArray(right)) return false;
  const a = left as Record<string, unknown>;
  const b = right as Record<string, unknown>;
  if (settings.plainOnly) {
    if (Object.getPrototypeOf(a) !== Object.prototype) return false;
    if (Object.getPrototypeOf(b) !== Object.prototype) return false;
    if (Object.getOwnPropertySymbols(a).length !== 0) return false;
    if (Object.getOwnPropertySymbols(b).length !== 0) return false;
    if (!settings.absentIsNull) return samePlainKeys(a, b, depth, settings);
    for (const key in a) if (!Object.hasOwn(a, key)) return false;
    for (const key in b) if (!Object.hasOwn(b, key)) return false;
  }
  if (settings.absentIsNull) {
    for (const key of Object.keys(a)) {
      if (!same(a[key] ?? null, ownValue(b, key) ?? null, depth + 1, settings)) return false;
    }
    for (const key of Object.keys(b)) {
      if (Object.hasOwn(a, key)) continue;
      if (!same(null, b[key] ?? null, depth + 1, settings)) return false;
    }
    return true;
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (!Object.hasOwn(b, key) || !same(a[key], b[key], depth + 1, settings)) return false;
  }
  return true;
}

/**
 * Plain objects with the same own keys (no inherited enumerable key on either side) and equal
 * values; one `for...in` pass per side, without the key arrays `Object.keys` would make.
 */
function samePlainKeys(
  a: Record<string, unknown>,
  b: Record<string, unknown>,
  depth: number,
  settings: Settings,
): boolean {
  let count = 0;
  for (const key in a) {
    if (!Object.hasOwn(a, key) || !Object.hasOwn(b, key)) return false;
    if (!same(a[key], b[key], depth + 1, settings)) return false;
    count++;
  }
  for (const key in b) {
    if (!Object.hasOwn(b, key)) return false;
    count--;
  }
  return count === 0;
}

function ownValue(value: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(value, key) ? value[key] : undefined;
}
