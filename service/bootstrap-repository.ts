import type { Queryable } from '../platform/ports/relational-store.ts';

/** The instance's first-start marker (instance_bootstrap: one row, id 1), written with everything first start makes. */
export const bootstrapRepository = {
  /** Insert the marker; true for the one transaction that inserted it, false once the instance was started before. */
  async claimFirstStart(tx: Queryable, now: number): Promise<boolean> {
    const r = await tx.query('INSERT INTO instance_bootstrap (id, done_at) VALUES (1, $1) ON CONFLICT (id) DO NOTHING RETURNING id', [new Date(now)]);
    return r.rowCount === 1 && r.rows.length > 0;
  },
};
