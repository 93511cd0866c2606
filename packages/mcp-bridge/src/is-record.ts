/** True for a non-null object that is not an array: the shape of a JSON object after a parse. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
