import type { RelationalStore } from '../../../platform/ports/relational-store.ts';
import { usageMonth } from '../../../schemas/usage-month.ts';

/**
 * The monthly count the edge holds a project's quota to (LIMITS.analyticsMonthlyQuota), counted exactly once per bus
 * message: the batch id goes into the ledger in the same transaction as the increment, so a re-delivered batch adds
 * nothing. Returns whether the batch was new.
 */
export function createUsageStep(deps: { db: RelationalStore }) {
  return async function usageStep(batch: { batchId: string; projectId: string; receivedAt: number; stored: number }): Promise<boolean> {
    return deps.db.transaction(async (tx) => {
      const fresh = await tx.query('INSERT INTO analytics_batches_consumed (batch_id, project_id) VALUES ($1, $2) ON CONFLICT (batch_id) DO NOTHING RETURNING batch_id', [batch.batchId, batch.projectId]);
      if (!fresh.rows.length) return false;
      if (batch.stored > 0) {
        await tx.query(
          `INSERT INTO analytics_monthly_usage (project_id, month, accepted) VALUES ($1, $2, $3)
           ON CONFLICT (project_id, month) DO UPDATE SET accepted = analytics_monthly_usage.accepted + EXCLUDED.accepted`,
          [batch.projectId, usageMonth(batch.receivedAt), batch.stored],
        );
      }
      return true;
    });
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
