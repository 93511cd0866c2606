import { describe, expect, it } from 'vitest';
import { GatewayConfigError, gatewayOptionRefusal } from '../gateway/errors.js';
import { TransportConfigurationError } from './errors.js';
import { positiveInteger } from './record-limits.js';

describe('positiveInteger', () => {
  it('takes a whole number over 0, and the fallback when the option is absent', () => {
    expect(positiveInteger('maxTools', 7, 100)).toBe(7);
    expect(positiveInteger('maxTools', undefined, 100)).toBe(100);
  });

  it.each([
    ['zero', 0],
    ['a negative number', -1],
    ['a fraction', 1.5],
    ['NaN', Number.NaN],
    ['infinity', Number.POSITIVE_INFINITY],
    ['beyond the safe integers', 2 ** 53],
    ['a numeric string', '5'],
    ['a boolean', true],
    ['null', null],
  ])('refuses %s, naming the option', (_name, value) => {
    expect(() => positiveInteger('maxTools', value, 100)).toThrow(
      expect.objectContaining({
        code: TransportConfigurationError.code,
        message: 'maxTools must be a positive integer',
        details: { option: 'maxTools' },
      }),
    );
    expect(() =>
      positiveInteger('maxSessions', value, 100, gatewayOptionRefusal('GatewayConsole')),
    ).toThrow(
      expect.objectContaining({
        code: GatewayConfigError.code,
        message: 'GatewayConsole option maxSessions must be a positive integer',
        details: { option: 'maxSessions' },
      }),
    );
  });
});
