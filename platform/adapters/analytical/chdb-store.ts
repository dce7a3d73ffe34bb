import path from 'node:path';
import { mkdir } from 'node:fs/promises';
import { Session } from 'chdb';
import type { AnalyticalStore } from '../../ports/analytical-store.ts';
import { AnalyticalQueryError } from '../../ports/analytical-store.ts';
import { toAnalyticalError } from './analytical-error.ts';
import { snapshotChdb } from './chdb-snapshot.ts';
import { toCompactRows, toJsonEachRow } from './json-each-row.ts';

/**
 * chDB (ClickHouse in-process): the embedded analytical store. Same SQL as the ClickHouse server
 * adapter: `{name:Type}` parameters are bound by the engine, never spliced into the text.
 *
 * chDB binds one data directory per process. The registry below is process-wide (kept on
 * globalThis so that a module loaded twice, as test runners do, still sees one registry): opening
 * the same directory again shares the session, opening another one while it is open throws.
 */

/** Settings every session starts with, so both adapters answer alike (see clickhouse-store.ts). */
export const CHDB_SESSION_SETTINGS: Record<string, string | number> = {
  // 64-bit integers as JSON numbers, as the port promises.
  output_format_json_quote_64bit_integers: 0,
  // Every analytical time is UTC, whatever the host's zone.
  session_timezone: 'UTC',
  // The engine's memory worker reads the process's RSS, not its cgroup: where no cgroup memory file is visible (a
  // container or a sandbox without /sys/fs/cgroup) the cgroup reader printed a 20-line native stack trace at start.
  memory_worker_use_cgroup: 0,
  // ...and does so once a second, not every 100 ms (issue 44, light at rest): its thread was a quarter of the
  // process's CPU at rest (0.12 of 0.65 CPU seconds in 30 s; bench/README, Footprint). It corrects the engine's memory
  // tracker from the RSS: a small embedded process that sets no memory limit needs no tenth-of-a-second accuracy.
  memory_worker_period_ms: 1000,
};

interface Entry {
  dir: string;
  session: Session;
  refs: number;
}

const REGISTRY_KEY = Symbol.for('service.chdb.session');
type Holder = { [REGISTRY_KEY]?: Entry };

/** A handle on the process's chDB session; `release` closes the session when the last holder lets go. */
export interface ChdbSessionHandle {
  readonly session: Session;
  readonly dataDir: string;
  release(): void;
}

export async function acquireChdbSession(dataDir: string): Promise<ChdbSessionHandle> {
  const dir = path.resolve(dataDir);
  const holder = globalThis as Holder;
  let entry = holder[REGISTRY_KEY];
  if (entry && entry.dir !== dir) {
    throw new Error(
      `chDB is already open on ${entry.dir} in this process; it binds one data directory per process, so ${dir} cannot be opened too ` +
        '(run roles that need separate stores as separate processes, or set CLICKHOUSE_URL)',
    );
  }
  if (!entry) {
    await mkdir(dir, { recursive: true });
    // Re-check: another caller may have opened it while mkdir ran.
    entry = holder[REGISTRY_KEY];
    if (entry && entry.dir !== dir) return acquireChdbSession(dataDir);
    if (!entry) {
      const connectionArgs = Object.entries(CHDB_SESSION_SETTINGS).map(([k, v]) => `--${k}=${v}`);
      entry = { dir, session: new Session(dir, { connectionArgs }), refs: 0 };
      holder[REGISTRY_KEY] = entry;
    }
  }
  entry.refs += 1;
  const held = entry;
  let released = false;
  return {
    session: held.session,
    dataDir: dir,
    release() {
      if (released) return;
      released = true;
      held.refs -= 1;
      if (held.refs === 0 && holder[REGISTRY_KEY] === held) {
        holder[REGISTRY_KEY] = undefined;
        held.session.close();
      }
    },
  };
}

/** The data directory chDB is bound to in this process, if any. */
export function chdbDataDir(): string | undefined {
  return (globalThis as Holder)[REGISTRY_KEY]?.dir;
}

/** Date parameters travel as Unix seconds with milliseconds, zone-free, as @clickhouse/client sends them. */
function bindValue(v: unknown): unknown {
  if (v instanceof Date) {
    const ms = v.getTime();
    if (Number.isNaN(ms)) throw new Error('invalid Date in query parameters');
    const s = Math.floor(ms / 1000);
    const frac = ms - s * 1000;
    return frac ? `${s}.${String(frac).padStart(3, '0')}` : String(s);
  }
  if (Array.isArray(v)) return v.map(bindValue);
  return v;
}

function bindParams(params: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(params)) out[k] = bindValue(v);
  return out;
}

export function parseJsonEachRow<T>(text: string): T[] {
  const rows: T[] = [];
  for (const line of text.split('\n')) if (line.trim()) rows.push(JSON.parse(line) as T);
  return rows;
}

export async function createChdbStore(dataDir: string): Promise<AnalyticalStore> {
  const handle = await acquireChdbSession(dataDir);
  const { session } = handle;
  let closed = false;
  const live = () => {
    if (closed) throw new AnalyticalQueryError(0, 'STORE_CLOSED', 'the chDB store is closed');
  };
  const run = async (sql: string, params?: Record<string, unknown>) => {
    live();
    try {
      return params && Object.keys(params).length
        ? await session.queryBindAsync(sql, bindParams(params), { format: 'JSONEachRow' })
        : await session.queryAsync(sql, { format: 'JSONEachRow' });
    } catch (err) {
      throw toAnalyticalError(err);
    }
  };

  const store: AnalyticalStore = {
    adapter: 'chdb',
    async command(sql, params) {
      await run(sql, params);
    },
    async query<T = Record<string, unknown>>(sql: string, params?: Record<string, unknown>): Promise<T[]> {
      return parseJsonEachRow<T>((await run(sql, params)).text());
    },
    async insert(table, rows, opts) {
      live();
      if (!rows.length) return;
      const settings: Record<string, string | number> = {
        // Dates may arrive as ISO strings (JSON.stringify of a Date).
        date_time_input_format: 'best_effort',
      };
      if (opts?.dedupToken) {
        // Synchronous insert so the token applies to this block (tables opt in with
        // non_replicated_deduplication_window; ReplacingMergeTree keys cover the rest).
        settings.insert_deduplication_token = opts.dedupToken;
        settings.async_insert = 0;
      }
      try {
        const compact = toCompactRows(rows);
        await session.insert(
          compact
            ? { table, values: toJsonEachRow(compact.values), format: 'JSONCompactEachRow', columns: compact.columns, settings }
            : { table, values: toJsonEachRow(rows), format: 'JSONEachRow', settings },
        );
      } catch (err) {
        throw toAnalyticalError(err);
      }
    },
    async snapshot(dest) {
      live();
      await snapshotChdb(store, handle.dataDir, dest);
    },
    async close() {
      if (closed) return;
      closed = true;
      handle.release();
    },
  };
  return store;
}
