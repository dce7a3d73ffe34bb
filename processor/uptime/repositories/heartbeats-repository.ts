import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { newId } from '../../../platform/tokens.ts';
import type { MonitorSchedule } from '../../../schemas/bus/client-items.ts';
import type { CheckError, CheckInStatus, MonitorState } from '../../../schemas/uptime.ts';
import { maintenanceRepository } from './maintenance-repository.ts';

/**
 * The processor's side of heartbeat monitors (migration 0033): their rows in uptime_monitors, their check-ins
 * (uptime_check_ins), and the incidents, rollups and alert marks they share with URL monitors (migration 0023). Every
 * change of one heartbeat happens with its row locked (`lock`), so the check-in pipeline and any number of uptime
 * monitors' sweeps change it one at a time.
 */
export interface HeartbeatRow {
  id: string;
  project_id: string;
  name: string;
  slug: string;
  schedule: MonitorSchedule;
  timezone: string;
  checkin_margin_min: number;
  max_runtime_min: number;
  failures_to_down: number;
  recoveries_to_up: number;
  paused: boolean;
  state: MonitorState;
  consecutive_failures: number;
  consecutive_successes: number;
  expected_at: Date | null;
  next_check_at: Date;
}

/** What a check-in's monitor_config sets (defaults filled in). */
export interface HeartbeatConfig {
  schedule: MonitorSchedule;
  timezone: string;
  checkinMarginMin: number;
  maxRuntimeMin: number;
  failuresToDown: number;
  recoveriesToUp: number;
}

/** An incident opened or ended by a heartbeat's outcome. */
export interface HeartbeatTransition {
  kind: 'down' | 'up';
  incidentId: string;
}

export interface CheckInRow {
  check_in_id: string;
  status: CheckInStatus;
  started_at: Date;
}

/** An incident whose alert (project event and mail) has not gone out, with its monitor. */
export interface UnalertedIncident {
  id: string;
  monitor_id: string;
  project_id: string;
  name: string;
  kind: 'url' | 'heartbeat';
  slug: string | null;
  url: string;
  started_at: Date;
  ended_at: Date | null;
  cause_error: CheckError;
  cause_status: number | null;
  cause_detail: string | null;
  down_mail_at: Date | null;
  up_mail_at: Date | null;
}

const HOUR_MS = 3_600_000;
/**
 * What the heartbeat sweep looks for ($1: now), shared by its three reads and by anyDue, which asks for all three at
 * once. A paused monitor's running check-in is not overdue (the sweep would skip it; left in, it would keep anyDue
 * true for as long as the monitor is paused, and could fill a batch that others wait behind).
 */
const OVERDUE_RUNNING = `FROM uptime_check_ins c WHERE c.status = 'in_progress' AND c.timeout_at <= $1
         AND NOT EXISTS (SELECT 1 FROM uptime_monitors pm WHERE pm.id = c.monitor_id AND pm.paused)`;
const OVERDUE_MONITORS = `FROM uptime_monitors WHERE kind = 'heartbeat' AND NOT paused AND next_check_at <= $1`;
/**
 * A URL monitor's incident is alerted by the check that changed it, right after it commits (uptime-monitor.ts); the
 * sweep takes one over only once that alert had a minute to go out (it failed: the bus was down, the process was killed).
 */
const UNALERTED = `FROM uptime_incidents i JOIN uptime_monitors m ON m.id = i.monitor_id
         WHERE (i.down_mail_at IS NULL OR (i.ended_at IS NOT NULL AND i.up_mail_at IS NULL))
           AND (m.kind = 'heartbeat' OR COALESCE(i.ended_at, i.started_at) <= $1::timestamptz - interval '1 minute')`;
const COLUMNS = `id, project_id, name, slug, schedule, timezone, checkin_margin_min, max_runtime_min, failures_to_down, recoveries_to_up, paused,
  state, consecutive_failures, consecutive_successes, expected_at, next_check_at`;

export const heartbeatsRepository = {
  /** The project's heartbeat of this slug, its row locked for the rest of the transaction. */
  async lockBySlug(tx: Queryable, projectId: string, slug: string): Promise<HeartbeatRow | undefined> {
    return (
      await tx.query<HeartbeatRow>(`SELECT ${COLUMNS} FROM uptime_monitors WHERE project_id = $1 AND kind = 'heartbeat' AND slug = $2 FOR UPDATE`, [
        projectId,
        slug,
      ])
    ).rows[0];
  },

  async lock(tx: Queryable, id: string): Promise<HeartbeatRow | undefined> {
    return (await tx.query<HeartbeatRow>(`SELECT ${COLUMNS} FROM uptime_monitors WHERE id = $1 AND kind = 'heartbeat' FOR UPDATE`, [id])).rows[0];
  },

  async projectExists(tx: Queryable, projectId: string): Promise<boolean> {
    return (await tx.query('SELECT 1 FROM projects WHERE id = $1', [projectId])).rows.length > 0;
  },

  async countMonitors(tx: Queryable, projectId: string): Promise<number> {
    return Number((await tx.query<{ n: string }>('SELECT count(*) AS n FROM uptime_monitors WHERE project_id = $1', [projectId])).rows[0]!.n);
  },

  /** A new heartbeat named by its slug, its first check-in expected at `expectedAt`; undefined when the slug is taken. */
  async insert(tx: Queryable, projectId: string, slug: string, c: HeartbeatConfig, expectedAt: number, now: number): Promise<string | undefined> {
    const r = await tx.query<{ id: string }>(
      `INSERT INTO uptime_monitors (id, project_id, kind, name, slug, url, interval_sec, timeout_ms, schedule, timezone, checkin_margin_min, max_runtime_min,
         failures_to_down, recoveries_to_up, expected_at, next_check_at, created_at, updated_at)
       VALUES ($1, $2, 'heartbeat', $3, $3, '', 0, 0, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12)
       ON CONFLICT (project_id, slug) WHERE kind = 'heartbeat' DO NOTHING RETURNING id`,
      [
        newId('mon_'),
        projectId,
        slug,
        JSON.stringify(c.schedule),
        c.timezone,
        c.checkinMarginMin,
        c.maxRuntimeMin,
        c.failuresToDown,
        c.recoveriesToUp,
        new Date(expectedAt),
        new Date(expectedAt + c.checkinMarginMin * 60_000),
        new Date(now),
      ],
    );
    return r.rows[0]?.id;
  },

  /** A heartbeat's new configuration and, when its schedule changed, when the next check-in is expected. */
  async configure(tx: Queryable, id: string, c: HeartbeatConfig, expectedAt: number, now: number): Promise<void> {
    await tx.query(
      `UPDATE uptime_monitors SET schedule = $2, timezone = $3, checkin_margin_min = $4, max_runtime_min = $5, failures_to_down = $6, recoveries_to_up = $7,
         expected_at = $8, next_check_at = $9, updated_at = $10 WHERE id = $1`,
      [
        id,
        JSON.stringify(c.schedule),
        c.timezone,
        c.checkinMarginMin,
        c.maxRuntimeMin,
        c.failuresToDown,
        c.recoveriesToUp,
        new Date(expectedAt),
        new Date(expectedAt + c.checkinMarginMin * 60_000),
        new Date(now),
      ],
    );
  },

  /** The next check-in is expected at `expectedAt`; it is missed once the margin after it has passed too. */
  async expect(tx: Queryable, m: HeartbeatRow, expectedAt: number): Promise<void> {
    await tx.query('UPDATE uptime_monitors SET expected_at = $2, next_check_at = $3 WHERE id = $1', [
      m.id,
      new Date(expectedAt),
      new Date(expectedAt + m.checkin_margin_min * 60_000),
    ]);
  },

  async noteCheckIn(tx: Queryable, id: string, at: number, status: CheckInStatus): Promise<void> {
    await tx.query('UPDATE uptime_monitors SET last_check_in_at = $2, last_check_in_status = $3 WHERE id = $1', [id, new Date(at), status]);
  },

  /** The monitor's newest check-in still in progress (what a closing check-in without an id closes). */
  async latestRunning(tx: Queryable, monitorId: string): Promise<string | undefined> {
    return (
      await tx.query<{ check_in_id: string }>(
        `SELECT check_in_id FROM uptime_check_ins WHERE monitor_id = $1 AND status = 'in_progress' ORDER BY started_at DESC LIMIT 1`,
        [monitorId],
      )
    ).rows[0]?.check_in_id;
  },

  async checkIn(tx: Queryable, monitorId: string, checkInId: string): Promise<CheckInRow | undefined> {
    return (
      await tx.query<CheckInRow>('SELECT check_in_id, status, started_at FROM uptime_check_ins WHERE monitor_id = $1 AND check_in_id = $2', [
        monitorId,
        checkInId,
      ])
    ).rows[0];
  },

  /** A new check-in; false when the monitor already has one of this id. */
  async insertCheckIn(
    tx: Queryable,
    m: { id: string; project_id: string },
    c: { checkInId: string; status: CheckInStatus; at: number; durationMs: number | null; timeoutAt: number | null; environment?: string; release?: string },
  ): Promise<boolean> {
    const closed = c.status !== 'in_progress';
    const r = await tx.query(
      `INSERT INTO uptime_check_ins (monitor_id, check_in_id, project_id, status, started_at, finished_at, duration_ms, timeout_at, environment, release)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING RETURNING check_in_id`,
      [
        m.id,
        c.checkInId,
        m.project_id,
        c.status,
        new Date(c.at),
        closed ? new Date(c.at) : null,
        c.durationMs,
        c.timeoutAt === null ? null : new Date(c.timeoutAt),
        c.environment ?? null,
        c.release ?? null,
      ],
    );
    return r.rows.length > 0;
  },

  /** Closes an in-progress check-in; false when it is not in progress (closed, timed out, or none). */
  async close(tx: Queryable, monitorId: string, checkInId: string, status: 'ok' | 'error', at: number, durationMs: number | null): Promise<boolean> {
    const r = await tx.query(
      `UPDATE uptime_check_ins SET status = $3, finished_at = $4,
         duration_ms = COALESCE($5, (EXTRACT(EPOCH FROM ($4::timestamptz - started_at)) * 1000)::integer)
       WHERE monitor_id = $1 AND check_in_id = $2 AND status = 'in_progress' RETURNING check_in_id`,
      [monitorId, checkInId, status, new Date(at), durationMs],
    );
    return r.rows.length > 0;
  },

  /**
   * Whether the sweep has anything to do at `now`: a check-in running past its time, a heartbeat past its expected
   * check-in, or an alert owed. One statement from the same conditions as the three reads below, so at rest (issue 44)
   * a sweep costs one statement instead of three.
   */
  async anyDue(db: Queryable, now: number): Promise<boolean> {
    const r = await db.query<{ due: boolean }>(
      `SELECT EXISTS (SELECT 1 ${OVERDUE_RUNNING}) OR EXISTS (SELECT 1 ${OVERDUE_MONITORS}) OR EXISTS (SELECT 1 ${UNALERTED}) AS due`,
      [new Date(now)],
    );
    return r.rows[0]?.due === true;
  },

  /** In-progress check-ins whose maximum runtime has passed (the sweep re-checks each under its monitor's lock). */
  async overdueRunning(db: Queryable, now: number, limit: number): Promise<Array<{ monitor_id: string; check_in_id: string }>> {
    return (
      await db.query<{ monitor_id: string; check_in_id: string }>(`SELECT c.monitor_id, c.check_in_id ${OVERDUE_RUNNING} ORDER BY c.timeout_at LIMIT $2`, [
        new Date(now),
        limit,
      ])
    ).rows;
  },

  /** Marks a check-in timed out if it still runs past its time; false when it has closed meanwhile. */
  async timeOut(tx: Queryable, monitorId: string, checkInId: string, now: number): Promise<boolean> {
    const r = await tx.query(
      `UPDATE uptime_check_ins SET status = 'timeout', finished_at = timeout_at,
         duration_ms = (EXTRACT(EPOCH FROM (timeout_at - started_at)) * 1000)::integer
       WHERE monitor_id = $1 AND check_in_id = $2 AND status = 'in_progress' AND timeout_at <= $3 RETURNING check_in_id`,
      [monitorId, checkInId, new Date(now)],
    );
    return r.rows.length > 0;
  },

  /** Heartbeats whose expected check-in and its margin have passed (the sweep re-checks each under its lock). */
  async overdueMonitors(db: Queryable, now: number, limit: number): Promise<string[]> {
    return (await db.query<{ id: string }>(`SELECT id ${OVERDUE_MONITORS} ORDER BY next_check_at LIMIT $2`, [new Date(now), limit])).rows.map((r) => r.id);
  },

  /**
   * A success or failure of the heartbeat, with its row locked: consecutive counts, the hour's rollup, and its state.
   * Down after `failures_to_down` consecutive failures (an incident opens with the failure as its cause); up after
   * `recoveries_to_up` consecutive successes (the open incident ends), or at the first success of a pending monitor.
   */
  async recordOutcome(
    tx: Queryable,
    m: HeartbeatRow,
    at: number,
    outcome: { ok: true } | { ok: false; error: CheckError; detail: string },
  ): Promise<HeartbeatTransition | undefined> {
    const failures = outcome.ok ? 0 : m.consecutive_failures + 1;
    const successes = outcome.ok ? m.consecutive_successes + 1 : 0;
    let state = m.state;
    let transition: HeartbeatTransition | undefined;
    if (outcome.ok && m.state !== 'up' && (m.state !== 'down' || successes >= m.recoveries_to_up)) {
      state = 'up';
      const closed = await tx.query<{ id: string }>('UPDATE uptime_incidents SET ended_at = $2 WHERE monitor_id = $1 AND ended_at IS NULL RETURNING id', [
        m.id,
        new Date(at),
      ]);
      if (closed.rows[0]) transition = { kind: 'up', incidentId: closed.rows[0].id };
    } else if (
      !outcome.ok &&
      m.state !== 'down' &&
      failures >= m.failures_to_down &&
      // During maintenance its failures open no incident (and so send no alert): issue 43.
      !(await maintenanceRepository.underMaintenance(tx, m.project_id, m.id, at))
    ) {
      state = 'down';
      const incidentId = newId('inc_');
      const opened = await tx.query(
        `INSERT INTO uptime_incidents (id, monitor_id, project_id, started_at, cause_error, cause_status, cause_detail) VALUES ($1, $2, $3, $4, $5, NULL, $6)
         ON CONFLICT DO NOTHING RETURNING id`,
        [incidentId, m.id, m.project_id, new Date(at), outcome.error, outcome.detail],
      );
      if (opened.rows[0]) transition = { kind: 'down', incidentId };
    }
    await tx.query(
      `UPDATE uptime_monitors SET state = $2, consecutive_failures = $3, consecutive_successes = $4, last_check_at = $5, last_ok = $6, last_error = $7
       WHERE id = $1`,
      [m.id, state, failures, successes, new Date(at), outcome.ok, outcome.ok ? null : outcome.error],
    );
    await tx.query(
      `INSERT INTO uptime_hourly (monitor_id, hour, checks, failures) VALUES ($1, $2, 1, $3)
       ON CONFLICT (monitor_id, hour) DO UPDATE SET checks = uptime_hourly.checks + 1, failures = uptime_hourly.failures + EXCLUDED.failures`,
      [m.id, new Date(Math.floor(at / HOUR_MS) * HOUR_MS), outcome.ok ? 0 : 1],
    );
    Object.assign(m, { state, consecutive_failures: failures, consecutive_successes: successes });
    return transition;
  },

  /** Keeps the newest `keep` check-ins of a monitor. */
  async prune(tx: Queryable, monitorId: string, keep: number): Promise<void> {
    await tx.query(
      `DELETE FROM uptime_check_ins WHERE monitor_id = $1 AND check_in_id IN (
         SELECT check_in_id FROM uptime_check_ins WHERE monitor_id = $1 ORDER BY started_at DESC OFFSET $2)`,
      [monitorId, keep],
    );
  },

  /** Incidents whose down or up alert has not gone out (a URL monitor's a minute after its change), oldest first. */
  async unalerted(db: Queryable, now: number, limit: number): Promise<UnalertedIncident[]> {
    return (
      await db.query<UnalertedIncident>(
        `SELECT i.id, i.monitor_id, i.project_id, m.name, m.kind, m.slug, m.url, i.started_at, i.ended_at, i.cause_error, i.cause_status, i.cause_detail,
           i.down_mail_at, i.up_mail_at
         ${UNALERTED}
         ORDER BY i.started_at LIMIT $2`,
        [new Date(now), limit],
      )
    ).rows;
  },
};
