import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as mini from 'zod/v4-mini';
import { isSchemaError } from './schema-error.js';

const schema = z.object({}).passthrough();

describe('isSchemaError', () => {
  it('recognises the error of the SDK engine’s check (zod/v4-mini safeParse), which z.ZodError does not', () => {
    const error = mini.safeParse(schema, 5).error;
    expect(error).toBeDefined();
    expect(error instanceof z.ZodError).toBe(false);
    expect(isSchemaError(error)).toBe(true);
  });

  it('recognises a classic ZodError', () => {
    expect(isSchemaError(schema.safeParse(5).error)).toBe(true);
  });

  it.each([
    ['an Error', new Error('x')],
    ['a TypeError', new TypeError('x')],
    ['a plain object shaped like a zod error', { issues: [], name: 'ZodError' }],
    ['undefined', undefined],
  ])('refuses %s', (_name, value) => {
    expect(isSchemaError(value)).toBe(false);
  });
});
