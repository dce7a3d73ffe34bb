import type { Queryable } from '../../../platform/ports/relational-store.ts';

/**
 * Monthly usage per project, month and environment (error_monthly_usage): accepted occurrences and
 * dropped ones by reason. The caps step counts against it; the edge reads it to learn a project is capped.
 */
export interface UsageBucket {
  projectId: string;
  month: string;
  environment: string;
}

export interface UsageChange extends UsageBucket {
  accepted: number;
  dropped: Record<string, number>;
}

export interface UsageRepository {
  /**
   * Create the buckets' rows if missing and lock them, in a fixed order (so concurrent processors of one
   * project queue instead of deadlocking); returns each bucket's accepted count, keyed by bucketKey.
   */
  lock(tx: Queryable, buckets: UsageBucket[]): Promise<Map<string, number>>;
  /** Add accepted counts and dropped counts by reason. */
  add(tx: Queryable, changes: UsageChange[]): Promise<void>;
}

export const bucketKey = (b: UsageBucket): string => `${b.projectId}\u0000${b.month}\u0000${b.environment}`;

export const usageRepository: UsageRepository = {
  async lock(tx, unordered) {
    if (!unordered.length) return new Map();
    const buckets = [...new Map(unordered.map((b) => [bucketKey(b), b])).entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, b]) => b);
    const cols = [buckets.map((b) => b.projectId), buckets.map((b) => b.month), buckets.map((b) => b.environment)];
    // Set-based, so a batch spanning many projects costs the same few round trips as one project.
    await tx.query(
      `INSERT INTO error_monthly_usage (project_id, month, environment)
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) ON CONFLICT DO NOTHING`,
      cols,
    );
    // Locked in a fixed order (LockRows runs above the sort).
    const locked = await tx.query<{ project_id: string; month: string; environment: string; accepted: string | number }>(
      `SELECT u.project_id, u.month, u.environment, u.accepted
         FROM error_monthly_usage u
         JOIN unnest($1::text[], $2::text[], $3::text[]) AS b(p, m, e) ON u.project_id = b.p AND u.month = b.m AND u.environment = b.e
        ORDER BY u.project_id, u.month, u.environment
        FOR UPDATE OF u`,
      cols,
    );
    return new Map(locked.rows.map((r) => [bucketKey({ projectId: r.project_id, month: r.month, environment: r.environment }), Number(r.accepted)]));
  },

  async add(tx, changes) {
    if (!changes.length) return;
    const rows = changes.map((c) => ({ project_id: c.projectId, month: c.month, environment: c.environment, delta: c.accepted, dropped: c.dropped }));
    await tx.query(
      `UPDATE error_monthly_usage u SET accepted = u.accepted + x.delta,
         dropped = (SELECT COALESCE(jsonb_object_agg(k, total), '{}'::jsonb) FROM (
           SELECT k, sum(v::bigint) AS total FROM (
             SELECT key AS k, value AS v FROM jsonb_each_text(u.dropped)
             UNION ALL SELECT key, value FROM jsonb_each_text(x.dropped)) d GROUP BY k) t)
        FROM jsonb_to_recordset($1::jsonb) AS x(project_id text, month text, environment text, delta bigint, dropped jsonb)
       WHERE u.project_id = x.project_id AND u.month = x.month AND u.environment = x.environment`,
      [JSON.stringify(rows)],
    );
  },
};
