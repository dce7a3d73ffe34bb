import { ClickHouseLogLevel, createClient, type ClickHouseSettings } from '@clickhouse/client';
import type { AnalyticalStore } from '../../ports/analytical-store.ts';
import { AnalyticalQueryError } from '../../ports/analytical-store.ts';
import { toAnalyticalError } from './analytical-error.ts';
import { stringifyRow, toCompactRows } from './json-each-row.ts';

/**
 * ClickHouse server over HTTP via @clickhouse/client (CLICKHOUSE_URL): the production analytical
 * store. Same SQL as the chDB adapter; the session settings below match chDB's
 * (CHDB_SESSION_SETTINGS) so both adapters return the same JSON for the same query.
 */
const SESSION_SETTINGS: ClickHouseSettings = {
  output_format_json_quote_64bit_integers: 0,
  session_timezone: 'UTC',
};

const rethrow = (err: unknown): never => {
  throw toAnalyticalError(err);
};

export async function createClickhouseStore(url: string): Promise<AnalyticalStore> {
  const client = createClient({
    url,
    clickhouse_settings: SESSION_SETTINGS,
    request_timeout: 60_000,
    application: 'service',
    // Failures reach the caller as rejections; the client's own console logger would only repeat them.
    log: { level: ClickHouseLogLevel.OFF },
    // bigint values (JSON.stringify refuses them) travel as their digits, as in the chDB adapter.
    json: { stringify: stringifyRow },
  });
  const ping = await client.ping();
  if (!ping.success) {
    await client.close().catch(() => undefined);
    // The URL may carry a password: name the host only.
    let where = 'CLICKHOUSE_URL';
    try {
      where = new URL(url).host;
    } catch {
      // not a URL: keep the variable's name
    }
    throw new AnalyticalQueryError(0, 'CONNECTION_FAILED', `ClickHouse at ${where} did not answer ping: ${ping.error.message}`, ping.error);
  }
  return {
    adapter: 'clickhouse',
    async command(sql, params) {
      await client.command({ query: sql, query_params: params }).catch(rethrow);
    },
    async query<T = Record<string, unknown>>(sql: string, params?: Record<string, unknown>): Promise<T[]> {
      try {
        const rs = await client.query({ query: sql, query_params: params, format: 'JSONEachRow' });
        return await rs.json<T>();
      } catch (err) {
        throw toAnalyticalError(err);
      }
    },
    async insert(table, rows, opts) {
      if (!rows.length) return;
      const settings: ClickHouseSettings = {
        // Dates may arrive as ISO strings (JSON.stringify of a Date), as in the chDB adapter.
        date_time_input_format: 'best_effort',
      };
      if (opts?.dedupToken) {
        settings.insert_deduplication_token = opts.dedupToken;
        // The token applies to synchronous inserts; a server with async_insert on would ignore it.
        settings.async_insert = 0;
      }
      const compact = toCompactRows(rows);
      const insert = compact
        ? client.insert({
            table,
            values: compact.values,
            columns: compact.columns as [string, ...string[]],
            format: 'JSONCompactEachRow',
            clickhouse_settings: settings,
          })
        : client.insert({ table, values: rows, format: 'JSONEachRow', clickhouse_settings: settings });
      await insert.catch(rethrow);
    },
    close: () => client.close(),
  };
}
