import { createHash } from 'node:crypto';
import type { AnalyticalStore } from '../../../platform/ports/analytical-store.ts';
import { releaseSessionsRepository } from '../repositories/release-sessions-repository.ts';
import { chTime } from '../../time-text.ts';
import { MAX_AGE_MS } from './row-step.ts';

const bucketText = (ms: number) => chTime(ms).slice(0, 19);

/**
 * Release-health rows in ClickHouse, idempotent per message (its batchId) without a ledger of its own:
 *   claim  the batch ids whose rows are already in the table were written by an earlier delivery: their items are
 *          duplicates, not written again
 *   store  the rest in one insert whose dedup token is derived from the batch ids, so a retry of the same block
 *          (a crash after ClickHouse took it, before the bus committed) is a no-op; the table's key (batch id, item)
 *          collapses anything written twice otherwise, and readers use FINAL
 */
export function createStoreStep(deps: { analytics: AnalyticalStore }) {
  return {
    async claim(batches: Array<{ projectId: string; batchId: string; receivedAt: number }>): Promise<Set<string>> {
      if (!batches.length) return new Set();
      const received = batches.map((b) => b.receivedAt);
      const seen = await releaseSessionsRepository.writtenBatches(deps.analytics, {
        projectIds: [...new Set(batches.map((b) => b.projectId))],
        batchIds: batches.map((b) => b.batchId),
        // Every row of a message is bucketed within [receivedAt - MAX_AGE_MS, receivedAt] (row-step.ts).
        from: bucketText(Math.min(...received) - MAX_AGE_MS - 60_000),
        to: bucketText(Math.max(...received) + 60_000),
      });
      return new Set(batches.map((b) => b.batchId).filter((id) => !seen.has(id)));
    },

    async store(rows: Array<Record<string, unknown>>): Promise<void> {
      if (!rows.length) return;
      const key = (r: Record<string, unknown>) => `${r.batch_id as string}/${r.item as number}`;
      const sorted = [...rows].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
      const batchIds = [...new Set(sorted.map((r) => r.batch_id as string))];
      const dedupToken = 'rhs-' + createHash('sha256').update(batchIds.join(',')).digest('hex');
      await releaseSessionsRepository.insert(deps.analytics, sorted, dedupToken);
    },
  };
}
