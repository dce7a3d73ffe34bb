import { describe, expect, it } from 'vitest';
import { usageMonth as monthOf } from '../../../domain/usage-month.ts';
import { chTime, isoTime } from '../../time-text.ts';

describe('usageMonth: the UTC calendar month the monthly caps count in', () => {
  it('is right on both sides of a month boundary, in any order (the last month is remembered)', () => {
    const lastMsOfNov = Date.UTC(2026, 10, 30, 23, 59, 59, 999);
    expect(monthOf(lastMsOfNov)).toBe('2026-11');
    expect(monthOf(lastMsOfNov + 1)).toBe('2026-12');
    expect(monthOf(lastMsOfNov)).toBe('2026-11');
    expect(monthOf(Date.UTC(2026, 10, 1))).toBe('2026-11');
    expect(monthOf(Date.UTC(2026, 10, 1) - 1)).toBe('2026-10');
    expect(monthOf(Date.UTC(2027, 0, 1))).toBe('2027-01');
    expect(monthOf(Date.UTC(2026, 11, 31, 23, 59, 59, 999))).toBe('2026-12');
  });
});

describe('chTime: ClickHouse DateTime64(3) text, UTC', () => {
  it('formats milliseconds without the ISO T and Z', () => {
    expect(chTime(Date.UTC(2026, 10, 21, 9, 5, 7, 42))).toBe('2026-11-21 09:05:07.042');
    expect(chTime(0)).toBe('1970-01-01 00:00:00.000');
    // The remembered last value answers only for the same instant.
    expect(chTime(0)).toBe('1970-01-01 00:00:00.000');
    expect(chTime(1)).toBe('1970-01-01 00:00:00.001');
    expect(isoTime(1)).toBe('1970-01-01T00:00:00.001Z');
    expect(isoTime(Date.UTC(2026, 10, 21))).toBe('2026-11-21T00:00:00.000Z');
    expect(chTime(1)).toBe('1970-01-01 00:00:00.001');
  });
});
