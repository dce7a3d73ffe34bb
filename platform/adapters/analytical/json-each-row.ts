/** JSONEachRow and JSONCompactEachRow input for both analytical adapters. */
const bigintAsDigits = (_k: string, v: unknown) => (typeof v === 'bigint' ? v.toString() : v);

/**
 * One JSONEachRow line: bigint values as their digits (JSON.stringify refuses bigint). A replacer
 * function costs a call per value and takes JSON.stringify off its fast path, so it is used only for
 * a row that has a bigint (the plain call throws a TypeError for it). Rows are almost never such.
 */
export function stringifyRow(row: unknown): string {
  try {
    return JSON.stringify(row);
  } catch (err) {
    if (err instanceof TypeError) return JSON.stringify(row, bigintAsDigits);
    throw err;
  }
}

/** One JSON value per line: JSONEachRow input for objects, JSONCompactEachRow for arrays. */
export function toJsonEachRow(rows: ReadonlyArray<unknown>): string {
  let out = '';
  for (const r of rows) out += stringifyRow(r) + '\n';
  return out;
}

/**
 * Rows in JSONCompactEachRow form: one array per row, values in `columns` order. ClickHouse reads it
 * without matching a key per value and it is a quarter smaller (bench/README.md, "Occurrence insert
 * format"). Only for rows that all have exactly the first row's keys, as rows from one builder do; for
 * any other set this returns undefined and the caller sends JSONEachRow. A key whose value is undefined
 * travels as null, which ClickHouse reads as the column's default, as it does a missing key.
 */
export function toCompactRows(rows: Array<Record<string, unknown>>): { columns: string[]; values: unknown[][] } | undefined {
  if (!rows.length) return undefined;
  const columns = Object.keys(rows[0]!);
  const width = columns.length;
  const values = new Array<unknown[]>(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r]!;
    let n = 0;
    for (const k in row) if (Object.hasOwn(row, k)) n++;
    if (n !== width) return undefined;
    const v = new Array<unknown>(width);
    for (let i = 0; i < width; i++) {
      const c = columns[i]!;
      if (!Object.hasOwn(row, c)) return undefined;
      v[i] = row[c];
    }
    values[r] = v;
  }
  return { columns, values };
}
