import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { mergeLockKey } from '../../../domain/issue-merges/merge-lock.ts';

/**
 * Merged issues (issue 41, migration 0038) as the error pipeline reads them: a merged group's redirect to the issue it
 * was merged into (one hop: a merge moves the redirects of the issues it merges).
 */
export const mergesRepository = {
  /**
   * The redirects among the batch's group ids, in ONE statement: first the merge lock of each project of the batch,
   * shared and in project order (domain/issue-merges/merge-lock.ts), then the read. Run it first in the batch's
   * transaction: a merge committed before it is seen, a merge after it waits for the batch to commit.
   */
  async redirects(tx: Queryable, projectIds: string[], groupIds: string[]): Promise<Map<string, string>> {
    if (!groupIds.length) return new Map();
    const r = await tx.query<{ group_id: string | null; merged_into: string | null }>(
      `WITH locks AS MATERIALIZED (
         SELECT count(pg_advisory_xact_lock_shared(hashtextextended(k, 0))) AS n FROM (SELECT k FROM unnest($1::text[]) AS k ORDER BY k) s
       )
       SELECT m.group_id, m.merged_into FROM locks LEFT JOIN error_group_merges m ON m.group_id = ANY($2::text[])`,
      [[...new Set(projectIds)].map(mergeLockKey), groupIds],
    );
    return new Map(r.rows.flatMap((x) => (x.group_id && x.merged_into ? [[x.group_id, x.merged_into] as const] : [])));
  },
};
