import { describe, expect, it } from 'vitest';
import { countOf, rowsFor } from './text.ts';

describe('console text', () => {
  it('says 1 event, 2 events (issue 23: "1 events")', () => {
    expect(countOf(1, 'event')).toBe('1 event');
    expect(countOf(2, 'event')).toBe('2 events');
    expect(countOf(0, 'user')).toBe('0 users');
    expect(countOf(1200, 'event')).toBe(`${(1200).toLocaleString()} events`);
  });

  it('sizes a textarea to its lines, one free line below, within bounds (issue 23: the fifth line was cut)', () => {
    expect(rowsFor('')).toBe(4);
    expect(rowsFor('a\nb\nc\nd\ne')).toBe(6);
    expect(rowsFor('x\n'.repeat(100))).toBe(20);
    expect(rowsFor('', 3)).toBe(3);
  });
});
