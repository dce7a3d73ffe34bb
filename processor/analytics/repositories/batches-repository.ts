import type { Queryable } from '../../../platform/ports/relational-store.ts';

/**
 * The analytics batch ledger (analytics_batches_consumed): one row per batch id a processor stored, so a re-delivered
 * batch is recognised and neither stored nor counted again.
 */
export const batchesRepository = {
  /** Claim these batch ids; returns the ids that were new (the rest were consumed before). */
  async claim(tx: Queryable, batches: Array<{ batchId: string; projectId: string }>): Promise<Set<string>> {
    if (!batches.length) return new Set();
    const r = await tx.query<{ batch_id: string }>(
      `INSERT INTO analytics_batches_consumed (batch_id, project_id)
       SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT (batch_id) DO NOTHING RETURNING batch_id`,
      [batches.map((b) => b.batchId), batches.map((b) => b.projectId)],
    );
    return new Set(r.rows.map((x) => x.batch_id));
  },

  /** Delete up to `limit` ledger rows consumed before `before`; returns how many. */
  async pruneOlderThan(db: Queryable, before: Date, limit: number): Promise<number> {
    const r = await db.query(
      `DELETE FROM analytics_batches_consumed WHERE batch_id IN (SELECT batch_id FROM analytics_batches_consumed WHERE consumed_at < $1 LIMIT ${Math.trunc(limit)})`,
      [before],
    );
    return r.rowCount ?? 0;
  },
};
