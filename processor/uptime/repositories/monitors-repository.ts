import { changeStampsRepository } from '../../../platform/change-stamps-repository.ts';
import type { Queryable, RelationalStore } from '../../../platform/ports/relational-store.ts';
import { newId } from '../../../platform/tokens.ts';
import type { CheckError, MonitorState } from '../../../schemas/uptime.ts';
import type { CheckResult, CheckTarget } from '../http-check.ts';
import { maintenanceRepository } from './maintenance-repository.ts';

/** The monitor role's side of uptime_monitors, uptime_incidents and uptime_hourly (migration 0023). */
export interface DueCheck extends CheckTarget {
  id: string;
  projectId: string;
  /** When this check was due (epoch ms): a check that starts later is late by the difference. */
  dueAt: number;
}

export interface Transition {
  kind: 'down' | 'up';
  incidentId: string;
  monitorId: string;
  projectId: string;
  name: string;
  url: string;
  startedAt: number;
  endedAt: number | null;
  cause: { error: CheckError; status: number | null; detail: string | null };
  /** A heartbeat's slug (its url is ''); undefined for a URL monitor. */
  slug?: string;
}

const HOUR_MS = 3_600_000;

export const monitorsRepository = {
  /**
   * Claim up to `limit` URL monitors whose check is due (heartbeats are never checked: they check in): one UPDATE moves each one's next check an interval on (from when it
   * was due, or from now when it fell more than an interval behind), so another process finds nothing due until then.
   */
  async claimDue(db: Queryable, now: number, limit: number): Promise<DueCheck[]> {
    if (limit <= 0) return [];
    const r = await db.query<{
      id: string;
      project_id: string;
      url: string;
      method: 'GET' | 'HEAD';
      timeout_ms: number;
      expected_min: number;
      expected_max: number;
      body_contains: string | null;
      due_at: Date;
    }>(
      `WITH due AS (
         SELECT id, next_check_at FROM uptime_monitors WHERE NOT paused AND next_check_at <= $1 AND kind = 'url' ORDER BY next_check_at LIMIT $2 FOR UPDATE SKIP LOCKED
       )
       UPDATE uptime_monitors m SET next_check_at = CASE
           WHEN due.next_check_at + make_interval(secs => m.interval_sec) > $1 THEN due.next_check_at + make_interval(secs => m.interval_sec)
           ELSE $1::timestamptz + make_interval(secs => m.interval_sec) END
       FROM due WHERE m.id = due.id
       RETURNING m.id, m.project_id, m.url, m.method, m.timeout_ms, m.expected_min, m.expected_max, m.body_contains, due.next_check_at AS due_at`,
      [new Date(now), limit],
    );
    return r.rows.map((x) => ({
      id: x.id,
      projectId: x.project_id,
      url: x.url,
      method: x.method,
      timeoutMs: x.timeout_ms,
      expectedMin: x.expected_min,
      expectedMax: x.expected_max,
      bodyContains: x.body_contains,
      dueAt: new Date(x.due_at).getTime(),
    }));
  },

  /**
   * What the monitor rests on when a claim found nothing (issue 44): when the earliest claimable URL monitor is due
   * (epoch ms; null: there is none) and the `uptime` change stamp (migration 0049; null: no row), in one statement, so
   * of one snapshot: a change committed after it moves the stamp past what this read.
   */
  async schedule(db: Queryable): Promise<{ nextDueAt: number | null; stamp: string | null }> {
    const r = await db.query<{ next_due_at: Date | null; stamp: string | number | null }>(
      `SELECT (SELECT next_check_at FROM uptime_monitors WHERE NOT paused AND kind = 'url' ORDER BY next_check_at LIMIT 1) AS next_due_at,
              (SELECT stamp FROM change_stamps WHERE name = 'uptime') AS stamp`,
    );
    const row = r.rows[0];
    return {
      nextDueAt: row?.next_due_at == null ? null : new Date(row.next_due_at).getTime(),
      stamp: row?.stamp == null ? null : String(row.stamp),
    };
  },

  /** The `uptime` change stamp alone (null: no row): what the resting monitor reads once a second. */
  changeStamp: (db: Queryable): Promise<string | null> => changeStampsRepository.read(db, 'uptime'),

  /**
   * Record a check, in one transaction: the monitor's last check and consecutive failures, its hour's rollup, and its
   * state. It goes down after `failures_to_down` consecutive failures (an incident opens with the failure as its cause)
   * and up after one success (the open incident ends). Answers the change, if there was one. A monitor deleted or
   * paused since the claim records nothing. Under a maintenance window in progress it does not go down (its failures
   * still count, so one still failing when the window ends goes down at its next failure).
   */
  async record(db: RelationalStore, monitorId: string, at: number, c: CheckResult): Promise<Transition | undefined> {
    return db.transaction(async (tx) => {
      const m = (
        await tx.query<{
          project_id: string;
          name: string;
          url: string;
          state: MonitorState;
          consecutive_failures: number;
          failures_to_down: number;
          paused: boolean;
        }>('SELECT project_id, name, url, state, consecutive_failures, failures_to_down, paused FROM uptime_monitors WHERE id = $1 FOR UPDATE', [monitorId])
      ).rows[0];
      if (!m || m.paused) return undefined;
      const failures = c.ok ? 0 : m.consecutive_failures + 1;
      let state: MonitorState = m.state;
      let transition: Transition | undefined;
      const base = { monitorId, projectId: m.project_id, name: m.name, url: m.url };
      if (c.ok && m.state !== 'up') {
        state = 'up';
        const closed = await tx.query<{ id: string; started_at: Date; cause_error: CheckError; cause_status: number | null; cause_detail: string | null }>(
          'UPDATE uptime_incidents SET ended_at = $2 WHERE monitor_id = $1 AND ended_at IS NULL RETURNING id, started_at, cause_error, cause_status, cause_detail',
          [monitorId, new Date(at)],
        );
        const i = closed.rows[0];
        if (i)
          transition = {
            kind: 'up',
            incidentId: i.id,
            ...base,
            startedAt: new Date(i.started_at).getTime(),
            endedAt: at,
            cause: { error: i.cause_error, status: i.cause_status, detail: i.cause_detail },
          };
      } else if (
        !c.ok &&
        m.state !== 'down' &&
        failures >= m.failures_to_down &&
        // During maintenance its failures open no incident (and so send no alert): issue 43.
        !(await maintenanceRepository.underMaintenance(tx, m.project_id, monitorId, at))
      ) {
        state = 'down';
        const incidentId = newId('inc_');
        const cause = { error: c.error ?? 'connect', status: c.status, detail: c.detail };
        await tx.query(
          `INSERT INTO uptime_incidents (id, monitor_id, project_id, started_at, cause_error, cause_status, cause_detail) VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT DO NOTHING`,
          [incidentId, monitorId, m.project_id, new Date(at), cause.error, cause.status, cause.detail],
        );
        transition = { kind: 'down', incidentId, ...base, startedAt: at, endedAt: null, cause };
      }
      await tx.query(
        `UPDATE uptime_monitors SET state = $2, consecutive_failures = $3, last_check_at = $4, last_ok = $5, last_status = $6, last_ms = $7, last_error = $8
         WHERE id = $1`,
        [monitorId, state, failures, new Date(at), c.ok, c.status, c.ms, c.error],
      );
      await tx.query(
        // A successful check's response time joins the hour's sum (migration 0047): the status page's 24-hour chart.
        `INSERT INTO uptime_hourly (monitor_id, hour, checks, failures, ms_sum, ms_checks) VALUES ($1, $2, 1, $3, $4, $5)
         ON CONFLICT (monitor_id, hour) DO UPDATE SET checks = uptime_hourly.checks + 1, failures = uptime_hourly.failures + EXCLUDED.failures,
           ms_sum = uptime_hourly.ms_sum + EXCLUDED.ms_sum, ms_checks = uptime_hourly.ms_checks + EXCLUDED.ms_checks`,
        [monitorId, new Date(Math.floor(at / HOUR_MS) * HOUR_MS), c.ok ? 0 : 1, c.ok ? Math.max(0, Math.round(c.ms)) : 0, c.ok ? 1 : 0],
      );
      return transition;
    });
  },

  /** Claim the one mail of an incident's change: true for the first caller only. */
  async claimMail(db: Queryable, incidentId: string, kind: 'down' | 'up', now: number): Promise<boolean> {
    const col = kind === 'down' ? 'down_mail_at' : 'up_mail_at';
    const r = await db.query(`UPDATE uptime_incidents SET ${col} = $2 WHERE id = $1 AND ${col} IS NULL RETURNING id`, [incidentId, new Date(now)]);
    return r.rows.length > 0;
  },

  /** Rollups older than `before`. */
  async pruneRollups(db: Queryable, before: number): Promise<number> {
    const r = await db.query('DELETE FROM uptime_hourly WHERE hour < $1', [new Date(before)]);
    return r.rowCount ?? 0;
  },
};
