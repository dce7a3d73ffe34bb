import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { InboundProvider } from '../../schemas/inbound.ts';

/** The inbound deliveries ledger (inbound_deliveries, migration 0018): a replay of a delivery id changes nothing. */
export const inboundRepository = {
  /** Remember a delivery; false when it was seen before (a replay). */
  async remember(db: Queryable, provider: InboundProvider, deliveryId: string, event: string, now: number): Promise<boolean> {
    const r = await db.query(
      `INSERT INTO inbound_deliveries (provider, delivery_id, event, received_at) VALUES ($1, $2, $3, $4) ON CONFLICT (provider, delivery_id) DO NOTHING RETURNING delivery_id`,
      [provider, deliveryId, event, new Date(now)],
    );
    return r.rows.length > 0;
  },
  /** Forget a delivery the bus did not take, so the provider's retry is taken. */
  async forget(db: Queryable, provider: InboundProvider, deliveryId: string): Promise<void> {
    await db.query('DELETE FROM inbound_deliveries WHERE provider = $1 AND delivery_id = $2 AND processed_at IS NULL', [provider, deliveryId]);
  },
};
