import { describe, expect, it } from 'vitest';
import { chTime, isoTime } from './time-text.ts';

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
