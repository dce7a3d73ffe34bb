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
  /**
   * Embedded only (chDB): copy its files into `dest` for a backup, each table consistent as of the call
   * (platform/data-dir/snapshot.ts). Absent on a ClickHouse server, which has `BACKUP ... TO`.
   */
  snapshot?(dest: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * The one error both analytical adapters throw, so callers see the same thing from chDB and from a
 * ClickHouse server: the engine's code and type, and whether retrying the same call can help.
 */
const TRANSIENT_TYPES = new Set([
  'TIMEOUT_EXCEEDED',
  'TOO_MANY_SIMULTANEOUS_QUERIES',
  'SOCKET_TIMEOUT',
  'NETWORK_ERROR',
  'TOO_MANY_PARTS',
  'TABLE_IS_READ_ONLY',
  'ALL_CONNECTION_TRIES_FAILED',
  'KEEPER_EXCEPTION',
  'MEMORY_LIMIT_EXCEEDED',
  'UNKNOWN_EXCEPTION',
]);

export class AnalyticalQueryError extends Error {
  override readonly name = 'AnalyticalQueryError';
  /** ClickHouse error code (0 when the engine was not reached). */
  readonly code: number;
  /** ClickHouse error type, e.g. SYNTAX_ERROR, UNKNOWN_TABLE; CONNECTION_FAILED when not reached. */
  readonly type: string;
  /** True when the same call may succeed later (timeouts, overload, connection failures). */
  readonly retryable: boolean;

  constructor(code: number, type: string, detail: string, cause?: unknown) {
    super(`${type} (code ${code}): ${detail}`, { cause });
    this.code = code;
    this.type = type;
    this.retryable = type === 'CONNECTION_FAILED' || TRANSIENT_TYPES.has(type);
  }
}
