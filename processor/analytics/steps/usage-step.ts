import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { usageMonth } from '../../../domain/usage-month.ts';
import { batchesRepository } from '../repositories/batches-repository.ts';
import { analyticsUsageRepository } from '../repositories/usage-repository.ts';

/**
 * The batch ledger and the monthly count the edge holds a project's quota to (LIMITS.analyticsMonthlyQuota).
 * The pipeline claims a delivery's batch ids, stores the events of the batches it claimed, and counts them, all in
 * one Postgres transaction: a batch already claimed (a re-delivery) is neither stored nor counted again, and a
 * failure anywhere rolls the claim back so the retry does it all. SQL: repositories/.
 */
export function claimBatches(tx: Queryable) {
  return (batches: Array<{ batchId: string; projectId: string }>): Promise<Set<string>> => batchesRepository.claim(tx, batches);
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
    for (const t of [...totals.values()].sort((a, b) => (a.projectId + a.month < b.projectId + b.month ? -1 : 1)))
      await analyticsUsageRepository.add(tx, t.projectId, t.month, t.events);
  };
}

/** Ledger rows older than this are deleted (a re-delivery comes within minutes; Kafka keeps 7 days by default). */
export const ANALYTICS_LEDGER_RETENTION_MS = 7 * 24 * 60 * 60 * 1000;

/** One pruning pass: ledger rows consumed before the retention, at most 10,000 per statement. */
export async function pruneAnalyticsLedger(db: Queryable, now: number): Promise<number> {
  let total = 0;
  for (;;) {
    const n = await batchesRepository.pruneOlderThan(db, new Date(now - ANALYTICS_LEDGER_RETENTION_MS), 10_000);
    total += n;
    if (n < 10_000) return total;
  }
}
