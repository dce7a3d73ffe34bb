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
  return {
    adapter: 'pglite',
    query: async (sql, params) => toQueryResult(await runStatement(db, sql, params)),
    transaction: (fn) =>
      db.transaction(async (t) => {
        const tx: Queryable = { query: async (sql, params) => toQueryResult(await t.query(sql, params ?? [])) };
        return fn(tx);
      }),
    close: () => db.close(),
  };
}

/**
 * A statement outside a transaction, as both PGlite stores run it (here and on PGlite's thread, pglite-worker.ts):
 * with parameters, a prepared query; without, `exec`, which also runs several statements (migrations).
 */
export async function runStatement(db: Pick<PGlite, 'query' | 'exec'>, sql: string, params?: unknown[]): Promise<{ rows: unknown[]; affectedRows?: number }> {
  if (params && params.length) return db.query(sql, params);
  const results = await db.exec(sql);
  return results[results.length - 1] ?? { rows: [] };
}

/** PGlite's answer as the port's result. */
export function toQueryResult<T>(r: { rows: unknown[]; affectedRows?: number }): QueryResult<T> {
  // PGlite reports affectedRows 0 (not undefined) for a SELECT: fall back to the rows returned.
  return { rows: r.rows as T[], rowCount: r.affectedRows || r.rows.length };
}
