import { describe, expect, it } from 'vitest';
import { stringifyRow, toCompactRows, toJsonEachRow } from './json-each-row.ts';

describe('JSONEachRow input', () => {
  it('writes rows as JSON.stringify does, one per line', () => {
    const rows = [{ a: 1, b: 'x', c: [1, 2], d: null }, { e: { f: true } }];
    expect(toJsonEachRow(rows)).toBe(`${JSON.stringify(rows[0])}\n${JSON.stringify(rows[1])}\n`);
  });

  it('writes bigint values as their digits, nested too, where JSON.stringify alone throws', () => {
    const row = { id: 12345678901234567890n, nested: { n: -5n, list: [1n, 2] }, s: 'ok' };
    expect(() => JSON.stringify(row)).toThrow(TypeError);
    expect(JSON.parse(stringifyRow(row))).toEqual({ id: '12345678901234567890', nested: { n: '-5', list: ['1', 2] }, s: 'ok' });
  });

  it('still refuses what JSON cannot hold (a cycle)', () => {
    const row: Record<string, unknown> = { a: 1 };
    row.self = row;
    expect(() => stringifyRow(row)).toThrow(TypeError);
  });

  describe('compact form (JSONCompactEachRow)', () => {
    it("takes the first row's keys as the columns and each row's values in that order", () => {
      const rows = [
        { a: 1, b: 'x', c: undefined },
        { a: 2, b: 'y', c: [1n] },
      ];
      const compact = toCompactRows(rows)!;
      expect(compact.columns).toEqual(['a', 'b', 'c']);
      expect(toJsonEachRow(compact.values)).toBe('[1,"x",null]\n[2,"y",["1"]]\n');
    });

    it('gives up (undefined) unless every row has exactly those keys', () => {
      expect(toCompactRows([])).toBeUndefined();
      expect(toCompactRows([{ a: 1, b: 2 }, { a: 1 }])).toBeUndefined();
      expect(
        toCompactRows([
          { a: 1, b: 2 },
          { a: 1, b: 2, c: 3 },
        ]),
      ).toBeUndefined();
      expect(
        toCompactRows([
          { a: 1, b: 2 },
          { a: 1, c: 3 },
        ]),
      ).toBeUndefined();
      // Another order of the same keys is still the same columns.
      expect(
        toCompactRows([
          { a: 1, b: 2 },
          { b: 4, a: 3 },
        ])!.values,
      ).toEqual([
        [1, 2],
        [3, 4],
      ]);
    });
  });
});
