import { ConfigurationError } from './configuration-error.js';

/** Builds the error for a bad option; the default raises {@link ConfigurationError}. */
export type OptionErrorFactory = (message: string, option: string) => Error;

const configurationError: OptionErrorFactory = (message, option) =>
  new ConfigurationError(message, { details: { option } });

/**
 * Old option names mapped to their new names: a key here is refused with a message that names the
 * new key (and its unit, for a time option whose new name ends in `Ms`).
 */
export type RenamedOptionKeys = Readonly<Record<string, string>>;

/**
 * The message for an option that was renamed: `Unknown X option "readTimeout": it was renamed to
 * "readTimeoutMs" (milliseconds; a value in seconds times 1000)`.
 */
export function renamedOptionMessage(owner: string, key: string, renamedTo: string): string {
  const unit = renamedTo.endsWith('Ms')
    ? ' (milliseconds; multiply a value in seconds by 1000)'
    : '';
  return `${owner} option ${JSON.stringify(key)} was renamed to ${JSON.stringify(renamedTo)}${unit}`;
}

/**
 * Checks that `options` is a plain object whose keys are all in `accepted`; a misspelled key
 * (`readTimout`) is refused with the accepted keys and, when one is close, a suggestion. Keys whose
 * value is `undefined` are checked too: a typo is a typo whatever its value. A key in `renamed` (an
 * old name) is refused with a message that names its new key and unit. An accepted key that only
 * the prototype chain holds (`Object.prototype.allowWrite = true` set by a polluting merge, or an
 * options object made with `Object.create(defaults)`) is refused too, so a constructor that reads
 * `options[key]` never picks up a value its caller did not set.
 */
export function checkOptionKeys(
  options: unknown,
  accepted: readonly string[],
  owner: string,
  fail: OptionErrorFactory = configurationError,
  renamed: RenamedOptionKeys = {},
): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw fail(
      `${owner} options must be an object with the keys ${accepted.join(', ')}`,
      'options',
    );
  }
  for (const key of Object.keys(options)) {
    if (accepted.includes(key)) continue;
    const renamedTo = Object.hasOwn(renamed, key) ? renamed[key] : undefined;
    if (renamedTo !== undefined) throw fail(renamedOptionMessage(owner, key, renamedTo), key);
    const near = closest(key, accepted);
    throw fail(
      `Unknown ${owner} option ${JSON.stringify(key)}${near === undefined ? '' : ` (did you mean ${JSON.stringify(near)}?)`}; accepted: ${accepted.join(', ')}`,
      key,
    );
  }
  for (const key of accepted) {
    if (key in options && !Object.hasOwn(options, key)) {
      throw fail(
        `${owner} option ${JSON.stringify(key)} is inherited from the prototype chain, not set on the options object (is Object.prototype polluted?); pass every option as an own key of a plain object`,
        key,
      );
    }
  }
}

/**
 * A copy of `options` holding only its own enumerable keys, in an object without a prototype: a
 * constructor reads its options from it, so nothing on `Object.prototype` is ever read as an option.
 */
export function ownOptions<Options extends object>(options: Options): Options {
  const copy = Object.create(null) as Record<string, unknown>;
  for (const key of Object.keys(options)) copy[key] = (options as Record<string, unknown>)[key];
  return copy as Options;
}

/** The accepted key within edit distance 2 (or differing only in case), if exactly one is. */
function closest(key: string, accepted: readonly string[]): string | undefined {
  const lower = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = 3;
  for (const candidate of accepted) {
    const distance =
      candidate.toLowerCase() === lower ? 0 : editDistance(lower, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  if (Math.abs(a.length - b.length) > 2) return 3;
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1) {
      current[j] = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length] as number;
}
