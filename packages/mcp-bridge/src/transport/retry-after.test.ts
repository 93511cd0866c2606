import { describe, expect, it } from 'vitest';
import { MAX_RETRY_AFTER_MS, parseRetryAfter } from './retry-after.js';

describe('parseRetryAfter', () => {
  const now = Date.parse('2026-12-01T12:00:00Z');

  it.each([
    ['delta-seconds', '7', 7000],
    ['zero', '0', 0],
    ['spaces around', ' 12 ', 12_000],
    ['an IMF-fixdate 90 s ahead', 'Tue, 01 Dec 2026 12:01:30 GMT', 90_000],
    ['a date in the past', 'Tue, 01 Dec 2026 11:00:00 GMT', 0],
    ['more than a day', '999999', MAX_RETRY_AFTER_MS],
  ])('reads %s', (_label, value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });

  it.each([
    ['absent', undefined],
    ['a word', 'soon'],
    ['a negative number', '-5'],
    ['a fraction', '1.5'],
    ['a huge digit run', '1'.repeat(40)],
    ['an ISO date', '2026-12-01T12:01:30Z'],
    ['a garbled date', 'Tue, 99 Foo 2026 99:99:99 GMT'],
  ])('gives undefined for %s', (_label, value) => {
    expect(parseRetryAfter(value, now)).toBeUndefined();
  });
});
