import { describe, expect, it } from 'vitest';
import { clipped, countOf, rowsFor, sizeOf } from './text.ts';

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

  it('says a size as people read it (a deploy page lists its source maps)', () => {
    expect(sizeOf(0)).toBe('0 B');
    expect(sizeOf(1023)).toBe('1023 B');
    expect(sizeOf(96_402)).toBe('94.1 KB');
    expect(sizeOf(1_843_211)).toBe('1.8 MB');
    expect(sizeOf(200 * 1024 * 1024)).toBe('200 MB');
  });

  it('clips a long value to its length, the cut marked (issue 39 §5: one property value made the page 24,135 px wide)', () => {
    expect(clipped('short', 10)).toBe('short');
    expect(clipped('x'.repeat(10), 10)).toBe('x'.repeat(10));
    expect(clipped('x'.repeat(2500), 200)).toBe(`${'x'.repeat(199)}…`);
    expect(clipped('x'.repeat(2500), 200)).toHaveLength(200);
  });
});
