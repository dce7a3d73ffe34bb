import { describe, expect, it } from 'vitest';
import { usageMonth as monthOf } from './usage-month.ts';

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
