import type { Queryable } from '../../../platform/ports/relational-store.ts';

/** Analytics events counted per project and month (analytics_monthly_usage): what the edge holds a project's quota to. */
export const analyticsUsageRepository = {
  /** Add `events` to the project's month; callers go in key order so concurrent processors never deadlock. */
  async add(tx: Queryable, projectId: string, month: string, events: number): Promise<void> {
    await tx.query(
      `INSERT INTO analytics_monthly_usage (project_id, month, accepted) VALUES ($1, $2, $3)
       ON CONFLICT (project_id, month) DO UPDATE SET accepted = analytics_monthly_usage.accepted + EXCLUDED.accepted`,
      [projectId, month, events],
    );
  },
};
