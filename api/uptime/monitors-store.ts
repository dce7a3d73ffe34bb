import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { Incident, Monitor } from '../../schemas/api/uptime.ts';
import type { CheckError, MonitorState } from '../../schemas/uptime.ts';

/** The API's side of uptime_monitors and uptime_incidents (migration 0023): rows as the wire shapes of schemas/api/uptime.ts. */
export interface MonitorRow {
  id: string;
  project_id: string;
  name: string;
  url: string;
  method: 'GET' | 'HEAD';
  interval_sec: number;
  timeout_ms: number;
  expected_min: number;
  expected_max: number;
  body_contains: string | null;
  failures_to_down: number;
  public: boolean;
  show_url: boolean;
  paused: boolean;
  site: boolean;
  state: MonitorState;
  last_check_at: Date | string | null;
  last_ok: boolean | null;
  last_status: number | null;
  last_ms: number | null;
  last_error: CheckError | null;
  created_at: Date | string;
}

export const toMonitor = (r: MonitorRow): Monitor => ({
  id: r.id,
  name: r.name,
  url: r.url,
  method: r.method,
  intervalSec: r.interval_sec,
  timeoutMs: r.timeout_ms,
  expectedStatus: { min: r.expected_min, max: r.expected_max },
  bodyContains: r.body_contains,
  failuresToDown: r.failures_to_down,
  public: r.public,
  showUrl: r.show_url,
  paused: r.paused,
  site: r.site,
  state: r.paused ? 'paused' : r.state,
  lastCheck:
    r.last_check_at === null
      ? null
      : { at: new Date(r.last_check_at).toISOString(), ok: !!r.last_ok, status: r.last_status, ms: r.last_ms ?? 0, error: r.last_error },
  createdAt: new Date(r.created_at).toISOString(),
});

export interface IncidentRow {
  id: string;
  monitor_id: string;
  name: string;
  started_at: Date | string;
  ended_at: Date | string | null;
  cause_error: CheckError;
  cause_status: number | null;
  cause_detail: string | null;
}

export const toIncident = (r: IncidentRow): Incident => ({
  id: r.id,
  monitorId: r.monitor_id,
  monitor: r.name,
  startedAt: new Date(r.started_at).toISOString(),
  endedAt: r.ended_at === null ? null : new Date(r.ended_at).toISOString(),
  cause: { error: r.cause_error, status: r.cause_status, detail: r.cause_detail },
});

export const monitorsStore = {
  async list(db: Queryable, projectId: string): Promise<MonitorRow[]> {
    return (await db.query<MonitorRow>('SELECT * FROM uptime_monitors WHERE project_id = $1 ORDER BY created_at, id', [projectId])).rows;
  },
  async get(db: Queryable, projectId: string, id: string): Promise<MonitorRow | undefined> {
    return (await db.query<MonitorRow>('SELECT * FROM uptime_monitors WHERE project_id = $1 AND id = $2', [projectId, id])).rows[0];
  },
  async incidents(db: Queryable, projectId: string, opts: { monitorId?: string; publicOnly?: boolean; since?: Date; limit: number }): Promise<IncidentRow[]> {
    const r = await db.query<IncidentRow>(
      `SELECT i.id, i.monitor_id, m.name, i.started_at, i.ended_at, i.cause_error, i.cause_status, i.cause_detail
       FROM uptime_incidents i JOIN uptime_monitors m ON m.id = i.monitor_id
       WHERE i.project_id = $1 AND ($2::text IS NULL OR i.monitor_id = $2) AND (NOT $3 OR m.public)
         AND (i.ended_at IS NULL OR $4::timestamptz IS NULL OR i.ended_at >= $4)
       ORDER BY (i.ended_at IS NULL) DESC, i.started_at DESC LIMIT $5`,
      [projectId, opts.monitorId ?? null, opts.publicOnly ?? false, opts.since ?? null, opts.limit],
    );
    return r.rows;
  },
};
