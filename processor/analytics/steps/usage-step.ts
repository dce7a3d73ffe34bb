import type { Queryable, RelationalStore } from '../../../platform/ports/relational-store.ts';
import { usageMonth } from '../../../domain/usage-month.ts';

/**
 * The batch ledger and the monthly count the edge holds a project's quota to (LIMITS.analyticsMonthlyQuota).
 * The pipeline claims a delivery's batch ids, stores the events of the batches it claimed, and counts them, all in
 * one Postgres transaction: a batch already claimed (a re-delivery) is neither stored nor counted again, and a
 * failure anywhere rolls the claim back so the retry does it all.
 */
export function claimBatches(tx: Queryable) {
  return async function claim(batches: Array<{ batchId: string; projectId: string }>): Promise<Set<string>> {
    if (!batches.length) return new Set();
    const r = await tx.query<{ batch_id: string }>(
      `INSERT INTO analytics_batches_consumed (batch_id, project_id)
       SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT (batch_id) DO NOTHING RETURNING batch_id`,
      [batches.map((b) => b.batchId), batches.map((b) => b.projectId)],
    );
    return new Set(r.rows.map((x) => x.batch_id));
  };
}

export function countUsage(tx: Queryable) {
  return async function count(stored: Array<{ projectId: string; receivedAt: number; events: number }>): Promise<void> {
    const totals = new Map<string, { projectId: string; month: string; events: number }>();
    for (const s of stored) {
      if (!s.events) continue;
      const month = usageMonth(s.receivedAt);
      const key = `${s.projectId}/${month}`;
      const t = totals.get(key) ?? { projectId: s.projectId, month, events: 0 };
      t.events += s.events;
      totals.set(key, t);
    }
    // In key order, so concurrent processors lock usage rows in one order and never deadlock.
    for (const t of [...totals.values()].sort((a, b) => (a.projectId + a.month < b.projectId + b.month ? -1 : 1))) {
      await tx.query(
        `INSERT INTO analytics_monthly_usage (project_id, month, accepted) VALUES ($1, $2, $3)
         ON CONFLICT (project_id, month) DO UPDATE SET accepted = analytics_monthly_usage.accepted + EXCLUDED.accepted`,
        [t.projectId, t.month, t.events],
      );
    }
  };
}

/** Ledger rows older than this are deleted (a re-delivery comes within minutes; Kafka keeps 7 days by default). */
export const ANALYTICS_LEDGER_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

export async function pruneAnalyticsLedger(db: RelationalStore, now: number): Promise<number> {
  const r = await db.query(
    `DELETE FROM analytics_batches_consumed WHERE batch_id IN (SELECT batch_id FROM analytics_batches_consumed WHERE consumed_at < $1 LIMIT 10000)`,
    [new Date(now - ANALYTICS_LEDGER_RETENTION_MS)],
  );
  return r.rowCount ?? 0;
}
