/**
 * Relational port: the transactional store (accounts, keys, projects, groups, webhooks, deploys).
 * Adapters: Postgres via `pg` (DATABASE_URL) and PGlite (embedded). Both run the same SQL text,
 * with `$1` positional parameters.
 */
export interface QueryResult<T> {
  rows: T[];
  /** Rows affected by INSERT/UPDATE/DELETE, or returned by SELECT. */
  rowCount: number;
}

export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<QueryResult<T>>;
}

export interface RelationalStore extends Queryable {
  readonly adapter: 'postgres' | 'pglite';
  /** Run `fn` in one transaction: committed when it resolves, rolled back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  /** The connection pool's use, for metrics (Postgres); absent where there is no pool (PGlite: one connection). */
  poolUse?(): PoolUse;
  /**
   * Embedded only (PGlite in the data directory): copy its files into `dest` for a backup, consistent as of the call
   * (platform/data-dir/snapshot.ts). Absent on Postgres, which has `pg_dump`.
   */
  snapshot?(dest: string): Promise<void>;
  close(): Promise<void>;
}

export interface PoolUse {
  /** Connections open, busy or idle. */
  total: number;
  idle: number;
  /** Queries waiting for a connection. */
  waiting: number;
}
