import { PGlite } from '@electric-sql/pglite';
import type { Queryable, QueryResult, RelationalStore } from '../../ports/relational-store.ts';

/**
 * PGlite (Postgres compiled to WASM) in-process: the embedded default. One connection, so
 * transactions are serialised through PGlite's own transaction queue; a plain query issued while a
 * transaction runs waits for it.
 * `dataDir` undefined = in memory (tests).
 */
export async function createPgliteStore(dataDir?: string): Promise<RelationalStore> {
  const db = dataDir ? await PGlite.create(dataDir) : await PGlite.create();
  const wrap = <T>(r: { rows: unknown[]; affectedRows?: number }): QueryResult<T> => ({
    rows: r.rows as T[],
    // PGlite reports affectedRows 0 (not undefined) for a SELECT: fall back to the rows returned.
    rowCount: r.affectedRows || r.rows.length,
  });
  return {
    adapter: 'pglite',
    query: async (sql, params) => {
      if (params && params.length) return wrap(await db.query(sql, params));
      // exec supports several statements (migrations); query needs parameters bound.
      const results = await db.exec(sql);
      const last = results[results.length - 1] ?? { rows: [] };
      return wrap(last);
    },
    transaction: (fn) =>
      db.transaction(async (t) => {
        const tx: Queryable = { query: async (sql, params) => wrap(await t.query(sql, params as unknown[])) };
        return fn(tx);
      }),
    close: () => db.close(),
  };
}
