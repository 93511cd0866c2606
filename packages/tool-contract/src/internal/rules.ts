// Field rules shared by defineContract (throws) and readContract (reports problems), so the
// annotation keys the server writes are validated by exactly the rules the reader applies.

/** Longest accepted version string; semver itself has no limit, but a contract version is short. */
const MAX_VERSION_LENGTH = 256;

/** Semantic Versioning 2.0.0, the regular expression published at semver.org. */
const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** A calendar date, `YYYY-MM-DD`. */
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** MCP tool names: 1 to 128 characters from A-Z, a-z, 0-9, `_`, `-` and `.`. */
const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/** True for a Semantic Versioning 2.0.0 version such as `1.0.0` or `2.1.0-beta.1`. */
export function isSemver(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_VERSION_LENGTH && SEMVER.test(value);
}

/** True for a real calendar date written `YYYY-MM-DD` (so `2025-02-30` is rejected). */
export function isIsoDate(value: unknown): value is string {
  if (typeof value !== 'string') return false;
  const match = ISO_DATE.exec(value);
  if (match === null) return false;
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  const date = new Date(Date.UTC(year, month - 1, day));
  return (
    date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
  );
}

/** Longest text the reader keeps as declared where `defineContract` would refuse it. */
const MAX_LENIENT_LENGTH = 256;

/**
 * True for text the reader keeps as declared even though `defineContract` refuses it (a version
 * such as `2.1`, an alias with a space, as the original Python package accepts): non-empty, at most
 * 256 characters, no control characters. It is kept as data and still reported.
 */
export function isLenientText(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.trim() !== '' &&
    value.length <= MAX_LENIENT_LENGTH &&
    // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing control characters is the point
    !/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(value)
  );
}

/** True for a name an MCP tool may have (used for aliases and replacements). */
export function isToolName(value: unknown): value is string {
  return typeof value === 'string' && TOOL_NAME.test(value);
}

/** A short, log-safe description of a rejected value's type (never the value itself). */
export function describeType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}
