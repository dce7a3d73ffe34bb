import pg from 'pg';
import type { Queryable, QueryResult, RelationalStore } from '../../ports/relational-store.ts';

// BIGINT and NUMERIC come back as strings by default; counters here fit in a JS number.
pg.types.setTypeParser(20, (v) => Number(v));
pg.types.setTypeParser(1700, (v) => Number(v));

/** Postgres through a `pg` pool (DATABASE_URL). */
export async function createPgStore(url: string, opts: { max?: number } = {}): Promise<RelationalStore> {
  const pool = new pg.Pool({ connectionString: url, max: opts.max ?? 10 });
  pool.on('error', () => {
    // An idle client lost its connection; the pool replaces it. Queries in flight reject on their own.
  });
  await pool.query('SELECT 1');
  const run = async <T>(q: Pick<pg.PoolClient, 'query'>, sql: string, params?: unknown[]): Promise<QueryResult<T>> => {
    const r = await q.query(sql, params as unknown[]);
    return { rows: r.rows as T[], rowCount: r.rowCount ?? r.rows.length };
  };
  return {
    adapter: 'postgres',
    query: (sql, params) => run(pool, sql, params),
    async transaction(fn) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const tx: Queryable = { query: (sql, params) => run(client, sql, params) };
        const out = await fn(tx);
        await client.query('COMMIT');
        return out;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw err;
      } finally {
        client.release();
      }
    },
    poolUse: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: () => pool.end(),
  };
}
