import { GatewayConfigError } from '../errors.js';

/** `value` (else `fallback`) when it is a whole number over 0; else the option `name` of `owner` is refused. */
export function positive(
  name: string,
  value: number | undefined,
  fallback: number,
  owner = 'GatewayConsole',
): number {
  const chosen = value ?? fallback;
  if (!Number.isSafeInteger(chosen) || chosen < 1) {
    throw new GatewayConfigError(`${owner} option ${name} must be a whole number over 0`, {
      details: { option: name },
    });
  }
  return chosen;
}
