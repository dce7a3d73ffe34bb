import { readdir, readFile } from 'node:fs/promises';
import { newId } from '../../platform/tokens.ts';
import { toCompactRows, toJsonEachRow } from '../../platform/adapters/analytical/json-each-row.ts';
import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';

/**
 * What the error benches share: the load's batch bodies, its user and projects in Postgres, and the
 * CPU of processes read from /proc.
 */

const MESSAGES = [
  "Cannot read properties of undefined (reading 'id')",
  'Request to /api/items timed out after 3000 ms',
  'Unexpected token < in JSON at position 0',
  'Failed to fetch',
];

/**
 * Batch body `n` of the load (~5 KB): `eventsPerBatch` browser events whose name, message template and
 * top frame vary with `n` and the position, so a project sees about 40 fingerprints.
 */
export function errorBatchBody(n: number, eventsPerBatch = 10): string {
  return JSON.stringify({
    batch: Array.from({ length: eventsPerBatch }, (_, i) => ({
      name: i % 2 ? 'TypeError' : 'Error',
      message: `${MESSAGES[(n + i) % MESSAGES.length]} (widget ${i}, attempt ${n % 97})`,
      stack: `TypeError: x\n    at render${(n + i) % 5} (https://app.example.com/assets/chunk-a1b2c3.js:${100 + i}:${20 + i})\n    at commit (https://app.example.com/node_modules/react-dom/index.js:1:1)\n    at flush (https://app.example.com/node_modules/react-dom/index.js:2:2)`,
      path: `/dashboard/projects/${i}`,
      userId: `usr_${n % 1000}`,
      sessionId: `ses_${n % 5000}`,
      extra: { route: '/dashboard', attempt: i, viewport: { w: 1280, h: 800 } },
      runtime: 'browser',
    })),
  });
}

interface Db {
  query(sql: string, params?: unknown[]): Promise<unknown>;
}

/** A user that owns the bench's projects; returns its id. */
export async function insertBenchUser(db: Db): Promise<string> {
  const userId = newId('usr_');
  await db.query(`INSERT INTO users (id, email, password_hash) VALUES ($1, $2, 'x')`, [userId, `${userId}@bench.test`]);
  return userId;
}

/** A project with production domain app.example.com and default error settings; returns its id and slug. */
export async function insertBenchProject(db: Db, userId: string, slugPrefix: string): Promise<{ id: string; slug: string }> {
  const id = newId('prj_');
  const slug = `${slugPrefix}-${id.slice(4, 16)}`;
  await db.query(`INSERT INTO projects (id, slug, name, owner_id, production_domains, preview_domains) VALUES ($1, $2, $2, $3, '{app.example.com}', '{}')`, [
    id,
    slug,
    userId,
  ]);
  await db.query(`INSERT INTO error_settings (project_id) VALUES ($1)`, [id]);
  return { id, slug };
}

/** CPU seconds (user + system) a process has used; 0 once it is gone. */
export async function cpuSecondsOf(pid: number): Promise<number> {
  try {
    const s = await readFile(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    // utime + stime in clock ticks (USER_HZ, 100 on Linux).
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return 0;
  }
}

/** The pids of the processes with these names (/proc/<pid>/comm), by name. */
export async function pidsByName(names: string[]): Promise<Record<string, number[]>> {
  const out: Record<string, number[]> = {};
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const comm = (await readFile(`/proc/${d}/comm`, 'utf8').catch(() => '')).trim();
    if (names.includes(comm)) (out[comm] ??= []).push(Number(d));
  }
  return out;
}

/** CPU seconds of all processes with this name, summed. */
export async function cpuSecondsOfNamed(name: string): Promise<number> {
  const pids = (await pidsByName([name]))[name] ?? [];
  return (await Promise.all(pids.map(cpuSecondsOf))).reduce((a, b) => a + b, 0);
}

/** An analytical store that encodes the rows it is given as the adapters do (JSONCompactEachRow), then drops them. */
export function droppingAnalytics(): AnalyticalStore {
  return {
    adapter: 'clickhouse',
    command: async () => undefined,
    query: async () => [],
    close: async () => undefined,
    insert: async (_table: string, rows: Array<Record<string, unknown>>) => {
      const compact = toCompactRows(rows);
      if (!toJsonEachRow(compact ? compact.values : rows)) throw new Error('no rows');
    },
  } as unknown as AnalyticalStore;
}
