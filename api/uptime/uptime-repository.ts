import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId } from '../../platform/tokens.ts';
import type { Check, CheckIn, HeartbeatSchedule, Incident, Monitor } from '../../schemas/api/uptime.ts';
import type { CheckError, CheckInStatus, MonitorKind, MonitorState } from '../../schemas/uptime.ts';

/**
 * The API's side of uptime (migrations 0023, 0033): uptime_monitors, uptime_incidents and uptime_hourly in the
 * relational store, each URL monitor's checks in the analytical one (`uptime_checks`, written by processor/uptime), each
 * heartbeat's check-ins in uptime_check_ins (written by the check-in pipeline); rows as the wire shapes of
 * schemas/api/uptime.ts.
 */
export interface MonitorRow {
  id: string;
  project_id: string;
  kind: MonitorKind;
  slug: string | null;
  schedule: HeartbeatSchedule | null;
  timezone: string | null;
  checkin_margin_min: number | null;
  max_runtime_min: number | null;
  recoveries_to_up: number;
  expected_at: Date | string | null;
  last_check_in_at: Date | string | null;
  last_check_in_status: CheckInStatus | null;
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

const iso = (d: Date | string) => new Date(d).toISOString();

export const toMonitor = (r: MonitorRow): Monitor => ({
  id: r.id,
  kind: r.kind,
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
  heartbeat:
    r.kind === 'heartbeat'
      ? {
          slug: r.slug ?? '',
          schedule: r.schedule!,
          timezone: r.timezone ?? 'UTC',
          checkinMarginMin: r.checkin_margin_min ?? 0,
          maxRuntimeMin: r.max_runtime_min ?? 0,
          recoveriesToUp: r.recoveries_to_up,
          lastCheckIn: r.last_check_in_at === null || r.last_check_in_status === null ? null : { at: iso(r.last_check_in_at), status: r.last_check_in_status },
          nextExpectedAt: r.paused || r.expected_at === null ? null : iso(r.expected_at),
        }
      : null,
  createdAt: new Date(r.created_at).toISOString(),
});

/** What a heartbeat's row holds after a change (uptime-rules.ts), and when its next check-in is expected. */
export interface HeartbeatValues {
  name: string;
  slug: string;
  schedule: HeartbeatSchedule;
  timezone: string;
  checkinMarginMin: number;
  maxRuntimeMin: number;
  failuresToDown: number;
  recoveriesToUp: number;
  public: boolean;
  paused: boolean;
  expectedAt: number;
}

interface CheckInRow {
  check_in_id: string;
  status: CheckInStatus;
  started_at: Date | string;
  finished_at: Date | string | null;
  duration_ms: number | null;
  environment: string | null;
  release: string | null;
}

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

/** What a monitor's row holds after a change (uptime-rules.ts merges a change into the row it had). */
export interface MonitorValues {
  name: string;
  url: string;
  method: 'GET' | 'HEAD';
  intervalSec: number;
  timeoutMs: number;
  expectedMin: number;
  expectedMax: number;
  bodyContains: string | null;
  failuresToDown: number;
  public: boolean;
  showUrl: boolean;
  paused: boolean;
}

/** A public monitor as the status JSON reads it, and an hour of its checks (uptime_hourly). */
export interface PublicMonitorRow {
  id: string;
  project_id: string;
  name: string;
  url: string;
  show_url: boolean;
  state: MonitorState;
  paused: boolean;
}
export interface HourRow {
  monitor_id: string;
  hour: Date;
  checks: number;
  failures: number;
  /** The hour's successful checks' response times: their sum and count (migration 0047; 0 before it). */
  ms_sum: number | string;
  ms_checks: number;
}

const MONITOR_COLUMNS = `name, url, method, interval_sec, timeout_ms, expected_min, expected_max, body_contains, failures_to_down, public, show_url, paused`;
const valuesOf = (v: MonitorValues) => [
  v.name,
  v.url,
  v.method,
  v.intervalSec,
  v.timeoutMs,
  v.expectedMin,
  v.expectedMax,
  v.bodyContains,
  v.failuresToDown,
  v.public,
  v.showUrl,
  v.paused,
];

const heartbeatValuesOf = (v: HeartbeatValues) => [
  v.name,
  v.slug,
  JSON.stringify(v.schedule),
  v.timezone,
  v.checkinMarginMin,
  v.maxRuntimeMin,
  v.failuresToDown,
  v.recoveriesToUp,
  v.public,
  v.paused,
  new Date(v.expectedAt),
  new Date(v.expectedAt + v.checkinMarginMin * 60_000),
];

export const uptimeRepository = {
  async list(db: Queryable, projectId: string): Promise<Monitor[]> {
    return (await db.query<MonitorRow>('SELECT * FROM uptime_monitors WHERE project_id = $1 ORDER BY created_at, id', [projectId])).rows.map(toMonitor);
  },
  async get(db: Queryable, projectId: string, id: string): Promise<MonitorRow | undefined> {
    return (await db.query<MonitorRow>('SELECT * FROM uptime_monitors WHERE project_id = $1 AND id = $2', [projectId, id])).rows[0];
  },
  async count(db: Queryable, projectId: string): Promise<number> {
    return Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM uptime_monitors WHERE project_id = $1', [projectId])).rows[0]!.n);
  },
  /** A new monitor, due for its first check now. */
  async create(db: Queryable, projectId: string, v: MonitorValues, now: number): Promise<Monitor> {
    const r = await db.query<MonitorRow>(
      `INSERT INTO uptime_monitors (id, project_id, ${MONITOR_COLUMNS}, next_check_at, created_at, updated_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $15) RETURNING *`,
      [newId('mon_'), projectId, ...valuesOf(v), new Date(now)],
    );
    return toMonitor(r.rows[0]!);
  },
  /**
   * A monitor's new values. `checkNow` (it was resumed) makes it due at once with its failure count cleared; a new URL
   * makes it due at once too. Undefined when it is gone.
   */
  async update(db: Queryable, projectId: string, id: string, v: MonitorValues, opts: { checkNow: boolean }, now: number): Promise<Monitor | undefined> {
    const r = await db.query<MonitorRow>(
      `UPDATE uptime_monitors SET (${MONITOR_COLUMNS}, updated_at) = ($3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15),
         next_check_at = CASE WHEN $16 OR $4 <> url THEN $15 ELSE next_check_at END,
         consecutive_failures = CASE WHEN $16 THEN 0 ELSE consecutive_failures END
       WHERE project_id = $1 AND id = $2 RETURNING *`,
      [projectId, id, ...valuesOf(v), new Date(now), opts.checkNow],
    );
    return r.rows[0] && toMonitor(r.rows[0]);
  },
  /** A heartbeat made by hand; undefined when the project has one of this slug. */
  async createHeartbeat(db: Queryable, projectId: string, v: HeartbeatValues, now: number): Promise<Monitor | undefined> {
    const r = await db.query<MonitorRow>(
      `INSERT INTO uptime_monitors (id, project_id, kind, name, slug, url, interval_sec, timeout_ms, schedule, timezone, checkin_margin_min, max_runtime_min,
         failures_to_down, recoveries_to_up, public, paused, expected_at, next_check_at, created_at, updated_at)
       VALUES ($1, $2, 'heartbeat', $3, $4, '', 0, 0, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15)
       ON CONFLICT (project_id, slug) WHERE kind = 'heartbeat' DO NOTHING RETURNING *`,
      [newId('mon_'), projectId, ...heartbeatValuesOf(v), new Date(now)],
    );
    return r.rows[0] && toMonitor(r.rows[0]);
  },
  /** A heartbeat's new values (its slug stays); undefined when it is gone. */
  async updateHeartbeat(db: Queryable, projectId: string, id: string, v: HeartbeatValues, now: number): Promise<Monitor | undefined> {
    const r = await db.query<MonitorRow>(
      `UPDATE uptime_monitors SET name = $3, schedule = $5, timezone = $6, checkin_margin_min = $7, max_runtime_min = $8, failures_to_down = $9,
         recoveries_to_up = $10, public = $11, paused = $12, expected_at = $13, next_check_at = $14, updated_at = $15
       WHERE project_id = $1 AND id = $2 AND kind = 'heartbeat' AND slug = $4 RETURNING *`,
      [projectId, id, ...heartbeatValuesOf(v), new Date(now)],
    );
    return r.rows[0] && toMonitor(r.rows[0]);
  },
  /** A heartbeat's latest check-ins, newest first. */
  async checkIns(db: Queryable, monitorId: string, limit: number): Promise<CheckIn[]> {
    const r = await db.query<CheckInRow>(
      `SELECT check_in_id, status, started_at, finished_at, duration_ms, environment, release FROM uptime_check_ins
       WHERE monitor_id = $1 ORDER BY started_at DESC, check_in_id LIMIT $2`,
      [monitorId, limit],
    );
    return r.rows.map((c) => ({
      id: c.check_in_id,
      status: c.status,
      startedAt: iso(c.started_at),
      finishedAt: c.finished_at === null ? null : iso(c.finished_at),
      durationMs: c.duration_ms,
      environment: c.environment,
      release: c.release,
    }));
  },
  /** False when the project has no such monitor. */
  async delete(db: Queryable, projectId: string, id: string): Promise<boolean> {
    return (await db.query('DELETE FROM uptime_monitors WHERE project_id = $1 AND id = $2 RETURNING id', [projectId, id])).rows.length > 0;
  },
  async siteMonitor(db: Queryable, projectId: string): Promise<boolean> {
    const r = await db.query<{ uptime_site_monitor: boolean }>('SELECT uptime_site_monitor FROM projects WHERE id = $1', [projectId]);
    return r.rows[0]?.uptime_site_monitor ?? true;
  },
  async setSiteMonitor(db: Queryable, projectId: string, on: boolean): Promise<void> {
    await db.query('UPDATE projects SET uptime_site_monitor = $2 WHERE id = $1', [projectId, on]);
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
  /** A monitor's latest checks, newest first, from the analytical store. */
  async checks(analytics: AnalyticalStore, projectId: string, monitorId: string, limit: number): Promise<Check[]> {
    const rows = await analytics.query<{ at: string; ok: number; status: number | null; ms: number; error: string; detail: string }>(
      `SELECT toString(at) AS at, ok, status, ms, error, detail FROM uptime_checks
       WHERE project_id = {project:String} AND monitor_id = {monitor:String} ORDER BY at DESC LIMIT {limit:UInt32}`,
      { project: projectId, monitor: monitorId, limit },
    );
    return rows.map((c) => ({
      at: new Date(`${c.at.replace(' ', 'T')}Z`).toISOString(),
      ok: Number(c.ok) === 1,
      status: c.status === null ? null : Number(c.status),
      ms: Number(c.ms),
      error: (c.error || null) as CheckError | null,
      detail: c.detail || null,
    }));
  },
  /** The public monitors of the project with this slug (none when there is no such project). */
  async publicMonitors(db: Queryable, slug: string): Promise<PublicMonitorRow[]> {
    const r = await db.query<PublicMonitorRow>(
      `SELECT m.id, m.project_id, m.name, m.url, m.show_url, m.state, m.paused FROM uptime_monitors m JOIN projects p ON p.id = m.project_id
       WHERE p.slug = $1 AND m.public ORDER BY m.created_at, m.id`,
      [slug],
    );
    return r.rows;
  },
  /** The hourly rollups of these monitors since `from`. */
  async hours(db: Queryable, monitorIds: string[], from: Date): Promise<HourRow[]> {
    return (
      await db.query<HourRow>(
        'SELECT monitor_id, hour, checks, failures, ms_sum, ms_checks FROM uptime_hourly WHERE monitor_id = ANY($1::text[]) AND hour >= $2',
        [monitorIds, from],
      )
    ).rows;
  },
};
