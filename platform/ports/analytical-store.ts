/**
 * Analytical port: append-mostly event storage (error occurrences, analytics events).
 * Adapters: ClickHouse via `@clickhouse/client` (CLICKHOUSE_URL) and chDB (embedded), same SQL:
 * ClickHouse query parameters `{name:Type}`, DateTime64, ReplacingMergeTree.
 */
export interface AnalyticalStore {
  readonly adapter: 'clickhouse' | 'chdb';
  /** DDL or a statement with no result. */
  command(sql: string, params?: Record<string, unknown>): Promise<void>;
  /** A SELECT; rows as JSON objects (64-bit integers come back as numbers). */
  query<T = Record<string, unknown>>(sql: string, params?: Record<string, unknown>): Promise<T[]>;
  /**
   * Insert rows (JSONEachRow). `dedupToken` makes a retried insert of the same block a no-op
   * where the engine supports insert deduplication; tables are also keyed by event id.
   */
  insert(table: string, rows: Array<Record<string, unknown>>, opts?: { dedupToken?: string }): Promise<void>;
  close(): Promise<void>;
}
