import type { AnalyticalStore } from '../../../platform/ports/analytical-store.ts';

/**
 * The release-health rows in ClickHouse `release_sessions` (platform/migrations/analytical/0007_release_sessions.sql),
 * as the pipeline writes them: which of a delivery's batch ids were written before, and the insert.
 */
export const RELEASE_SESSIONS_TABLE = 'release_sessions';

export const releaseSessionsRepository = {
  /**
   * The batch ids among these whose rows an earlier delivery wrote. Their rows start between `from` and `to` (a row's
   * bucket is never after its message was received nor more than 5 days before), which the table's key prunes by; the
   * bloom-filter index on batch_id serves the rest.
   */
  async writtenBatches(analytics: AnalyticalStore, q: { projectIds: string[]; batchIds: string[]; from: string; to: string }): Promise<Set<string>> {
    if (!q.batchIds.length) return new Set();
    const rows = await analytics.query<{ batch_id: string }>(
      `SELECT DISTINCT batch_id FROM ${RELEASE_SESSIONS_TABLE}
        WHERE project_id IN {p:Array(String)} AND bucket >= {from:DateTime('UTC')} AND bucket <= {to:DateTime('UTC')} AND batch_id IN {b:Array(String)}`,
      { p: q.projectIds, b: q.batchIds, from: q.from, to: q.to },
    );
    return new Set(rows.map((r) => r.batch_id));
  },

  /** Rows in one block, under a token the same rows always get: a retried insert of them is a no-op. */
  async insert(analytics: AnalyticalStore, rows: Array<Record<string, unknown>>, dedupToken: string): Promise<void> {
    await analytics.insert(RELEASE_SESSIONS_TABLE, rows, { dedupToken });
  },
};
