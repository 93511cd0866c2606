import { renamedOptionMessage } from '@toolfence/tools/core';
import { TransportConfigurationError } from './errors.js';

/** Byte and structure limits applied to every record read from a server. */
export interface RecordLimits {
  /** Bytes per record (JSON body, SSE event, stdio line). Default 8 MiB. */
  readonly maxRecordBytes: number;
  /** Tokens per record (each scalar, key, `{` and `[` counts one). Default 20,001. */
  readonly maxRecordTokens: number;
  /** Nesting depth of objects and arrays. Default 64. */
  readonly maxRecordDepth: number;
  /** Bytes per numeric token. Default 64 KiB. */
  readonly maxNumberBytes: number;
}

/** The defaults of {@link RecordLimits}. */
export const DEFAULT_RECORD_LIMITS: RecordLimits = Object.freeze({
  maxRecordBytes: 8 * 1024 * 1024,
  maxRecordTokens: 20_001,
  maxRecordDepth: 64,
  maxNumberBytes: 64 * 1024,
});

/** The error an option check throws: `message` names the option; `option` is its name. */
export type OptionRefusal = (message: string, option: string) => Error;

const transportRefusal: OptionRefusal = (message, option) =>
  new TransportConfigurationError(message, { details: { option } });

/**
 * Validates a positive-integer option (`fallback` when absent); a boolean or a string is not a
 * number. A bad value throws what `refuse` makes (by default a `TransportConfigurationError`).
 */
export function positiveInteger(
  name: string,
  value: unknown,
  fallback: number,
  refuse: OptionRefusal = transportRefusal,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw refuse(`${name} must be a positive integer`, name);
  }
  return value;
}

/**
 * Refuses an option under its old name (a time option that counted seconds, now `…Ms`), naming
 * the new key and its unit.
 */
export function refuseRenamedOptions(
  options: object,
  renamed: Readonly<Record<string, string>>,
  owner: string,
): void {
  for (const [key, renamedTo] of Object.entries(renamed)) {
    if (Object.hasOwn(options, key)) {
      throw new TransportConfigurationError(renamedOptionMessage(owner, key, renamedTo), {
        details: { option: key },
      });
    }
  }
}

/** Validates a positive-number option (milliseconds may be fractional). */
export function positiveNumber(name: string, value: unknown, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new TransportConfigurationError(`${name} must be a positive number`, {
      details: { option: name },
    });
  }
  return value;
}

/** Fills in and validates record limits. */
export function resolveRecordLimits(partial: Partial<RecordLimits> = {}): RecordLimits {
  return Object.freeze({
    maxRecordBytes: positiveInteger(
      'maxRecordBytes',
      partial.maxRecordBytes,
      DEFAULT_RECORD_LIMITS.maxRecordBytes,
    ),
    maxRecordTokens: positiveInteger(
      'maxRecordTokens',
      partial.maxRecordTokens,
      DEFAULT_RECORD_LIMITS.maxRecordTokens,
    ),
    maxRecordDepth: positiveInteger(
      'maxRecordDepth',
      partial.maxRecordDepth,
      DEFAULT_RECORD_LIMITS.maxRecordDepth,
    ),
    maxNumberBytes: positiveInteger(
      'maxNumberBytes',
      partial.maxNumberBytes,
      DEFAULT_RECORD_LIMITS.maxNumberBytes,
    ),
  });
}
