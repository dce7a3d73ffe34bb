import type { AnalyticalStore } from '../../../platform/ports/analytical-store.ts';

/**
 * The release-health rows in ClickHouse `release_sessions` (platform/migrations/analytical/0007_release_sessions.sql),
 * as the pipeline writes them: which of a delivery's batch ids were written before, and the insert.
 */
export const RELEASE_SESSIONS_TABLE = 'release_sessions';

export const releaseSessionsRepository = {
  /** The batch ids among these whose rows an earlier delivery wrote (the bloom-filter index on batch_id serves it). */
  async writtenBatches(analytics: AnalyticalStore, projectIds: string[], batchIds: string[]): Promise<Set<string>> {
    if (!batchIds.length) return new Set();
    const rows = await analytics.query<{ batch_id: string }>(
      `SELECT DISTINCT batch_id FROM ${RELEASE_SESSIONS_TABLE} WHERE project_id IN {p:Array(String)} AND batch_id IN {b:Array(String)}`,
      { p: projectIds, b: batchIds },
    );
    return new Set(rows.map((r) => r.batch_id));
  },

  /** Rows in one block, under a token the same rows always get: a retried insert of them is a no-op. */
  async insert(analytics: AnalyticalStore, rows: Array<Record<string, unknown>>, dedupToken: string): Promise<void> {
    await analytics.insert(RELEASE_SESSIONS_TABLE, rows, { dedupToken });
  },
};
