// A rule's declarative `when`: conditions on the call's arguments, evaluated in three values
// (holds, fails, cannot be evaluated) so a rule can fail closed. Data only: no code, no regular
// expressions from the policy author, no file system access.
import { ConfigurationError } from '../registry/configuration-error.js';
import type { JsonObject, JsonValue } from '../registry/tool.js';
import { isPathUnder, type PathRoot, pathRoot } from './path-under.js';
import { globMatcher } from './tool-selector.js';

/** The operators of one {@link ArgumentCondition}. */
export const ARGUMENT_CONDITION_OPERATORS: readonly string[] = Object.freeze([
  'equals',
  'in',
  'matches',
  'pathUnder',
  'lt',
  'lte',
  'gt',
  'gte',
]);

/**
 * Conditions on one argument; every operator given must hold. `equals` and `in` compare the whole
 * JSON value; `matches`, `pathUnder` and the number comparisons need a string (a number), and on a
 * list of them they hold for every element in an `allow` rule and for at least one in a `deny` or
 * `ask` rule.
 */
export interface ArgumentCondition {
  /** The argument is exactly this JSON value (objects compared key by key, arrays in order). */
  readonly equals?: JsonValue;
  /** The argument is one of these JSON values (a non-empty list). */
  readonly in?: readonly JsonValue[];
  /** A string argument matches one of these globs (`*` any run, `?` one character; case-sensitive). */
  readonly matches?: string | readonly string[];
  /**
   * A string argument is an absolute path inside one of these absolute folders (the folder itself
   * counts), compared lexically after `.`, `..`, `//` and a trailing slash are resolved. Fails
   * closed: a relative path, a `file:` URL, percent escapes or backslashes that change the answer,
   * or a name that differs only in case or Unicode form cannot be evaluated.
   */
  readonly pathUnder?: string | readonly string[];
  /** A number argument is less than this. */
  readonly lt?: number;
  /** A number argument is at most this. */
  readonly lte?: number;
  /** A number argument is greater than this. */
  readonly gt?: number;
  /** A number argument is at least this. */
  readonly gte?: number;
}

/**
 * A rule's declarative `when`: argument → condition. A key is a top-level argument name, or a JSON
 * Pointer (RFC 6901) starting with `/` for a nested one (`/options/path`, `/paths/0`). Every key's
 * condition must hold.
 */
export type ArgumentConditions = Readonly<Record<string, ArgumentCondition>>;

/** What a condition says about one call: holds, fails, or cannot be evaluated (`unknown`). */
export type ConditionResult = boolean | 'unknown';

/** How a list argument is judged by an element-wise operator: `every` (allow) or `some`. */
export type ListQuantifier = 'every' | 'some';

/** A compiled {@link ArgumentConditions}. */
export type CompiledConditions = (args: JsonObject, quantifier: ListQuantifier) => ConditionResult;

/** Three-valued AND: any false is false, else any unknown is unknown, else true. */
function and(results: Iterable<ConditionResult>): ConditionResult {
  let unknown = false;
  for (const result of results) {
    if (result === false) return false;
    if (result === 'unknown') unknown = true;
  }
  return unknown ? 'unknown' : true;
}

/** Reads the argument a key names; undefined when it is absent. */
function argumentAt(args: JsonObject, path: readonly string[]): JsonValue | undefined {
  let current: JsonValue | undefined = args;
  for (const segment of path) {
    if (Array.isArray(current)) {
      if (!/^(0|[1-9]\d{0,8})$/.test(segment)) return undefined;
      current = current[Number(segment)];
    } else if (typeof current === 'object' && current !== null) {
      if (!Object.hasOwn(current, segment)) return undefined;
      current = (current as JsonObject)[segment];
    } else {
      return undefined;
    }
  }
  return current;
}

/** Deep equality of two JSON values (object keys in any order). */
function jsonEqual(left: JsonValue | undefined, right: JsonValue | undefined): boolean {
  if (left === right) return true;
  if (typeof left !== 'object' || typeof right !== 'object' || left === null || right === null) {
    return false;
  }
  if (Array.isArray(left) || Array.isArray(right)) {
    if (!Array.isArray(left) || !Array.isArray(right) || left.length !== right.length) return false;
    return left.every((item, index) => jsonEqual(item, right[index]));
  }
  const leftKeys = Object.keys(left);
  if (leftKeys.length !== Object.keys(right).length) return false;
  return leftKeys.every(
    (key) =>
      Object.hasOwn(right, key) && jsonEqual((left as JsonObject)[key], (right as JsonObject)[key]),
  );
}

/** Applies an element-wise test to a value or to each element of a list. */
function elementWise(
  value: JsonValue,
  quantifier: ListQuantifier,
  test: (item: JsonValue) => ConditionResult,
): ConditionResult {
  if (!Array.isArray(value)) return test(value);
  if (value.length === 0) return 'unknown';
  const results = value.map(test);
  if (quantifier === 'every') return and(results);
  if (results.includes(true)) return true;
  return results.includes('unknown') ? 'unknown' : false;
}

type Test = (value: JsonValue, quantifier: ListQuantifier) => ConditionResult;

function isJsonValue(value: unknown, depth = 0): value is JsonValue {
  if (depth > 32) return false;
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((item) => isJsonValue(item, depth + 1));
  if (typeof value === 'object') {
    const prototype = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) return false;
    return Object.values(value).every((item) => isJsonValue(item, depth + 1));
  }
  return false;
}

function stringList(value: unknown): readonly string[] | undefined {
  const list: readonly unknown[] = Array.isArray(value) ? value : [value];
  if (list.length === 0 || list.some((item) => typeof item !== 'string' || item === '')) {
    return undefined;
  }
  return list as readonly string[];
}

const NUMBER_TESTS: Readonly<Record<string, (actual: number, bound: number) => boolean>> = {
  lt: (actual, bound) => actual < bound,
  lte: (actual, bound) => actual <= bound,
  gt: (actual, bound) => actual > bound,
  gte: (actual, bound) => actual >= bound,
};

function compileOperator(operator: string, operand: unknown, fail: (what: string) => never): Test {
  switch (operator) {
    case 'equals':
      if (!isJsonValue(operand)) fail('equals must be a JSON value');
      return (value) => jsonEqual(value, operand as JsonValue);
    case 'in': {
      if (!Array.isArray(operand) || operand.length === 0 || !isJsonValue(operand)) {
        fail('in must be a non-empty list of JSON values');
      }
      const options = operand as readonly JsonValue[];
      return (value) => options.some((option) => jsonEqual(value, option));
    }
    case 'matches': {
      const globs = stringList(operand);
      if (globs === undefined) fail('matches must be a glob or a non-empty list of globs');
      const matchers = (globs as readonly string[]).map(globMatcher);
      return (value, quantifier) =>
        elementWise(value, quantifier, (item) =>
          typeof item === 'string' ? matchers.some((match) => match(item)) : 'unknown',
        );
    }
    case 'pathUnder': {
      const folders = stringList(operand);
      if (folders === undefined) fail('pathUnder must be an absolute path or a non-empty list');
      const roots: PathRoot[] = [];
      for (const folder of folders as readonly string[]) {
        const root = pathRoot(folder);
        if (root === undefined) {
          fail('pathUnder folders must be absolute POSIX paths (starting with "/", no "\\")');
        }
        roots.push(root as PathRoot);
      }
      return (value, quantifier) =>
        elementWise(value, quantifier, (item) =>
          typeof item === 'string' ? (isPathUnder(item, roots) ?? 'unknown') : 'unknown',
        );
    }
    default: {
      const compare = NUMBER_TESTS[operator] as (actual: number, bound: number) => boolean;
      if (typeof operand !== 'number' || !Number.isFinite(operand)) {
        fail(`${operator} must be a finite number`);
      }
      return (value, quantifier) =>
        elementWise(value, quantifier, (item) =>
          typeof item === 'number' && Number.isFinite(item)
            ? compare(item, operand as number)
            : 'unknown',
        );
    }
  }
}

/** Splits a `when` key into the path of property names it reads. */
function keyPath(key: string): readonly string[] | undefined {
  if (key === '') return undefined;
  if (!key.startsWith('/')) return [key];
  const segments = key.slice(1).split('/');
  if (segments.some((segment) => /~[^01]|~$/.test(segment))) return undefined;
  return segments.map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/**
 * Checks and compiles a declarative `when` ({@link ArgumentConditions}). Throws
 * {@link ConfigurationError} naming `at` and the key for an unknown operator, a bad operand or an
 * empty condition.
 */
export function compileArgumentConditions(when: unknown, at: string): CompiledConditions {
  const fail = (what: string, where = at): never => {
    throw new ConfigurationError(`${where}: ${what}`, { details: { option: where } });
  };
  if (typeof when !== 'object' || when === null || Array.isArray(when)) {
    fail('when must be a function or an object of argument conditions');
  }
  const entries = Object.entries(when as Record<string, unknown>);
  if (entries.length === 0) fail('when names no argument');
  const compiled: { path: readonly string[]; tests: Test[] }[] = [];
  for (const [key, condition] of entries) {
    const where = `${at}.${JSON.stringify(key).slice(0, 80)}`;
    const path = keyPath(key);
    if (path === undefined) {
      fail('a when key is an argument name or a JSON Pointer starting with "/"', where);
    }
    if (typeof condition !== 'object' || condition === null || Array.isArray(condition)) {
      fail(`must be an object with ${ARGUMENT_CONDITION_OPERATORS.join(', ')}`, where);
    }
    const operators = Object.entries(condition as Record<string, unknown>);
    if (operators.length === 0) {
      fail(`names no operator (accepted: ${ARGUMENT_CONDITION_OPERATORS.join(', ')})`, where);
    }
    const tests: Test[] = [];
    for (const [operator, operand] of operators) {
      if (!ARGUMENT_CONDITION_OPERATORS.includes(operator)) {
        const shown = /^[\w$-]{1,40}$/.test(operator) ? ` "${operator}"` : '';
        fail(
          `unknown operator${shown} (accepted: ${ARGUMENT_CONDITION_OPERATORS.join(', ')})`,
          where,
        );
      }
      tests.push(compileOperator(operator, operand, (what) => fail(what, where)));
    }
    compiled.push({ path: path as readonly string[], tests });
  }
  return (args, quantifier) =>
    and(
      compiled.map(({ path, tests }) => {
        const value = argumentAt(args, path);
        if (value === undefined) return 'unknown';
        return and(tests.map((test) => test(value, quantifier)));
      }),
    );
}
