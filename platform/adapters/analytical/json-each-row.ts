/** JSONEachRow input for both analytical adapters. */
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

/** JSON for JSONEachRow input, one row per line. */
export function toJsonEachRow(rows: Array<Record<string, unknown>>): string {
  let out = '';
  for (const r of rows) out += stringifyRow(r) + '\n';
  return out;
}
