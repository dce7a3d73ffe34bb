import type { AnalyticalStore } from '../../../platform/ports/analytical-store.ts';
import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { chTime, isoTime } from '../../time-text.ts';
import { UNIGNORE_SET } from './groups-repository.ts';

/**
 * What the issue triage sweep (../issue-triage-sweep.ts, issue 41) reads and writes: ignored issues whose time came,
 * the occurrence counts escalation is judged on (ClickHouse error_occurrences), and the escalation marks (0037).
 */

/** A group the sweep judges, as Postgres holds it. */
export interface TriageGroup {
  id: string;
  project_id: string;
  status: string;
  first_seen: Date | string;
  ignore_until_escalating: boolean;
  escalating_since: Date | string | null;
}

/** One group's occurrences in one environment: in the last hour, and in the 7 days before it. */
export interface HourlyCounts {
  group_id: string;
  environment: string;
  last_hour: number;
  before: number;
}

export const triageRepository = {
  /** Ignored issues whose `ignore_until_at` has come: unresolved again, reason `time` (at most `limit` per call). */
  async expireIgnores(db: Queryable, now: number, limit: number): Promise<number> {
    const r = await db.query<{ id: string }>(
      `WITH due AS (
         SELECT id FROM error_groups WHERE ignore_until_at IS NOT NULL AND ignore_until_at <= $1 AND status = 'ignored'
          ORDER BY ignore_until_at LIMIT $2 FOR UPDATE SKIP LOCKED
       ), upd AS (
         UPDATE error_groups g SET unignored_reason = 'time', unignored_at = g.ignore_until_at, ${UNIGNORE_SET}
           FROM due WHERE g.id = due.id RETURNING g.id
       )
       SELECT id FROM upd`,
      [isoTime(now), limit],
    );
    // A condition cleared by hand (a transition) leaves ignore_until_at NULL already; a stray past one on a group no longer ignored goes.
    await db.query(
      `UPDATE error_groups SET ignore_until_at = NULL
        WHERE id IN (SELECT id FROM error_groups WHERE ignore_until_at IS NOT NULL AND ignore_until_at <= $1 AND status <> 'ignored' LIMIT $2)`,
      [isoTime(now), limit],
    );
    return r.rows.length;
  },

  /**
   * The groups with at least `min` occurrences in [from, to), most first, at most `limit`: the only ones that can be
   * escalating. Without FINAL (a re-delivered row counts twice here; the exact count is hourlyCounts').
   */
  async busyGroups(analytics: AnalyticalStore, from: number, to: number, min: number, limit: number): Promise<Array<{ project_id: string; group_id: string }>> {
    return analytics.query<{ project_id: string; group_id: string }>(
      `SELECT project_id, group_id FROM error_occurrences
        WHERE received_at >= {from:DateTime64(3, 'UTC')} AND received_at < {to:DateTime64(3, 'UTC')}
        GROUP BY project_id, group_id HAVING count() >= {min:UInt32} ORDER BY count() DESC, group_id LIMIT {limit:UInt32}`,
      { from: chTime(from), to: chTime(to), min, limit },
    );
  },

  /** The groups marked escalating (at most `limit`): they calm down when their last hour falls back. */
  async escalatingIds(db: Queryable, limit: number): Promise<string[]> {
    const r = await db.query<{ id: string }>('SELECT id FROM error_groups WHERE escalating_since IS NOT NULL ORDER BY escalating_since LIMIT $1', [limit]);
    return r.rows.map((x) => x.id);
  },

  async groups(db: Queryable, ids: string[]): Promise<TriageGroup[]> {
    if (!ids.length) return [];
    const r = await db.query<TriageGroup>(
      'SELECT id, project_id, status, first_seen, ignore_until_escalating, escalating_since FROM error_groups WHERE id = ANY($1::text[])',
      [ids],
    );
    return r.rows;
  },

  /** Exact counts (FINAL) per group and environment: [hourAgo, now) and [weekAgo, hourAgo). */
  async hourlyCounts(analytics: AnalyticalStore, groups: Array<{ project_id: string; id: string }>, weekAgo: number, hourAgo: number, now: number) {
    if (!groups.length) return [];
    const rows = await analytics.query<HourlyCounts>(
      `SELECT group_id, environment, countIf(received_at >= {hour:DateTime64(3, 'UTC')}) AS last_hour, countIf(received_at < {hour:DateTime64(3, 'UTC')}) AS before
         FROM error_occurrences FINAL
        WHERE project_id IN {projects:Array(String)} AND group_id IN {ids:Array(String)}
          AND received_at >= {week:DateTime64(3, 'UTC')} AND received_at < {now:DateTime64(3, 'UTC')}
        GROUP BY group_id, environment`,
      {
        projects: [...new Set(groups.map((g) => g.project_id))],
        ids: groups.map((g) => g.id),
        week: chTime(weekAgo),
        hour: chTime(hourAgo),
        now: chTime(now),
      },
    );
    return rows.map((r) => ({ ...r, last_hour: Number(r.last_hour), before: Number(r.before) }));
  },

  /**
   * Mark the groups escalating, once: only those still unresolved or ignored until escalating, not already escalating,
   * and not escalated in the last `againAfterMs`. An ignored one is unresolved again, reason `escalating`. Returns the
   * groups marked, and whether each was ignored. One conditional UPDATE: concurrent sweeps mark a group once.
   */
  async escalate(db: Queryable, ids: string[], now: number, againAfterMs: number): Promise<Array<{ id: string; project_id: string; unignored: boolean }>> {
    if (!ids.length) return [];
    const r = await db.query<{ id: string; project_id: string; unignored: boolean }>(
      `WITH todo AS (
         SELECT id, status = 'ignored' AS unignored FROM error_groups
          WHERE id = ANY($1::text[]) AND escalating_since IS NULL AND (escalated_at IS NULL OR escalated_at <= $3)
            AND (status = 'unresolved' OR (status = 'ignored' AND ignore_until_escalating))
          FOR UPDATE
       )
       UPDATE error_groups g SET escalating_since = $2, escalated_at = $2,
              status = CASE WHEN todo.unignored THEN 'unresolved' ELSE g.status END,
              unignored_reason = CASE WHEN todo.unignored THEN 'escalating' ELSE g.unignored_reason END,
              unignored_at = CASE WHEN todo.unignored THEN $2::timestamptz ELSE g.unignored_at END,
              ignore_until_escalating = false
         FROM todo WHERE g.id = todo.id
       RETURNING g.id, g.project_id, todo.unignored`,
      [ids, isoTime(now), isoTime(now - againAfterMs)],
    );
    return r.rows;
  },

  /** The groups calm again: escalating no more (they may escalate again, 24 hours after their last escalation). */
  async calm(db: Queryable, ids: string[]): Promise<number> {
    if (!ids.length) return 0;
    const r = await db.query('UPDATE error_groups SET escalating_since = NULL WHERE id = ANY($1::text[]) AND escalating_since IS NOT NULL', [ids]);
    return r.rowCount;
  },
};
