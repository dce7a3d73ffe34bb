import type { Queryable } from '../../../platform/ports/relational-store.ts';
import type { InboundProvider } from '../../../schemas/inbound.ts';

/** The processor's side of the inbound deliveries ledger (inbound_deliveries, migration 0018). */
export const inboundRepository = {
  /**
   * Mark a delivery acted on, with what came of it (`deploys: queued`, `skip_requested`, ...). False when an earlier
   * delivery of the same message marked it first: this one is a duplicate, and is not counted.
   */
  async markProcessed(db: Queryable, provider: InboundProvider, deliveryId: string, outcome: string, now: number): Promise<boolean> {
    const r = await db.query(
      'UPDATE inbound_deliveries SET processed_at = $3, outcome = $4 WHERE provider = $1 AND delivery_id = $2 AND processed_at IS NULL RETURNING delivery_id',
      [provider, deliveryId, new Date(now), outcome],
    );
    return r.rows.length > 0;
  },
  /** Ledger rows older than `before` (providers redeliver for 3 days; kept 7), at most `limit`. */
  async pruneOlderThan(db: Queryable, before: Date, limit: number): Promise<number> {
    const r = await db.query(
      `DELETE FROM inbound_deliveries WHERE (provider, delivery_id) IN (SELECT provider, delivery_id FROM inbound_deliveries WHERE received_at < $1 LIMIT ${Math.trunc(limit)})`,
      [before],
    );
    return r.rowCount ?? 0;
  },
};
