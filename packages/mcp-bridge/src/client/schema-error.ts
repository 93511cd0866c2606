import { z } from 'zod';

/**
 * True when `error` is a zod validation error of either zod 4 flavour: the classic API's
 * `ZodError` (our own schemas, the peer's result check) or the core `$ZodError` that
 * `zod/v4-mini`'s `safeParse` returns (the SDK 1.x engine's check, which the client used before).
 * `instanceof z.ZodError` is false for the second kind (zod 4 classes match by trait, and a core
 * error lacks the classic trait), so a malformed answer would have been mapped as an unknown
 * failure instead of a malformed one.
 */
export function isSchemaError(error: unknown): boolean {
  return error instanceof z.core.$ZodError;
}
