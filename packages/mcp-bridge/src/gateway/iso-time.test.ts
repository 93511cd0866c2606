import { describe, expect, it } from 'vitest';
import { isoTime } from './iso-time.js';

describe('isoTime', () => {
  // Each time twice in a row (the second from the cached prefix), then the next across a boundary.
  it.each([
    0,
    1,
    9,
    10,
    99,
    100,
    999,
    1000,
    59_999,
    60_000,
    Date.UTC(2026, 11, 1, 23, 59, 59, 999),
    Date.UTC(2026, 11, 2, 0, 0, 0, 0),
    Date.UTC(2028, 1, 29, 12, 0, 0, 7),
    -1,
    -999,
    -1000,
    -1001,
    Date.UTC(10_000, 0, 1, 0, 0, 0, 42),
    Date.UTC(-1, 0, 1, 0, 0, 0, 5),
    8.64e15,
  ])('formats %d exactly as Date#toISOString', (now) => {
    expect(isoTime(now)).toBe(new Date(now).toISOString());
    expect(isoTime(now)).toBe(new Date(now).toISOString());
  });

  it('follows the clock across seconds after the cache is warm', () => {
    const start = Date.UTC(2026, 11, 1, 16, 0, 0, 0);
    for (let now = start - 1500; now < start + 1500; now += 7) {
      expect(isoTime(now)).toBe(new Date(now).toISOString());
    }
  });

  it('throws like Date#toISOString for a time out of range, and stays correct after', () => {
    expect(() => isoTime(8.64e15 + 1000)).toThrow(RangeError);
    expect(isoTime(1234)).toBe(new Date(1234).toISOString());
  });
});
