import type { Queryable, RelationalStore } from '../../../platform/ports/relational-store.ts';

/** Connected Stripe accounts and the orders their events build (payment_accounts, payment_orders, migrations 0019 and 0029). */
export interface OrderRow {
  project_id: string;
  order_id: string;
  account_id: string;
  amount: string | number | null;
  currency: string | null;
  customer_email_hash: string | null;
  created_emitted: boolean;
  paid_emitted: boolean;
  refunded_emitted: boolean;
  refund_pending: boolean;
  amount_refunded: string | number | null;
}

export const paymentsRepository = {
  /**
   * The project an account feeds, and whether it was bound by Stripe's token exchange (proven) or typed in before
   * migration 0029 (which proves nothing, and feeds nothing).
   */
  async projectOfAccount(db: Queryable, accountId: string): Promise<{ projectId: string; proven: boolean } | undefined> {
    const r = await db.query<{ project_id: string; connected_via: string }>('SELECT project_id, connected_via FROM payment_accounts WHERE account_id = $1', [
      accountId,
    ]);
    const row = r.rows[0];
    return row && { projectId: row.project_id, proven: row.connected_via === 'stripe_oauth' };
  },

  /** The account's binding gone (Stripe says the account disconnected the platform); whether there was one. */
  async unbind(db: Queryable, accountId: string): Promise<boolean> {
    const r = await db.query('DELETE FROM payment_accounts WHERE account_id = $1 RETURNING account_id', [accountId]);
    return r.rows.length > 0;
  },

  /**
   * Run `fn` on the order's row (made if new), locked for the transaction, and write back the row it returns. Returns
   * the row as it was, to write back when what follows the commit fails.
   */
  async withOrder(
    db: RelationalStore,
    key: { projectId: string; orderId: string; accountId: string },
    now: number,
    fn: (row: OrderRow) => OrderRow,
  ): Promise<OrderRow> {
    return db.transaction(async (tx) => {
      await tx.query(`INSERT INTO payment_orders (project_id, order_id, account_id, updated_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING`, [
        key.projectId,
        key.orderId,
        key.accountId,
        new Date(now),
      ]);
      const r = await tx.query<OrderRow>('SELECT * FROM payment_orders WHERE project_id = $1 AND order_id = $2 FOR UPDATE', [key.projectId, key.orderId]);
      const before = r.rows[0]!;
      const next = fn({ ...before });
      await paymentsRepository.write(tx, next, now);
      return before;
    });
  },

  /** Write an order's row (also to put one back as it was, when the events its change promised could not be published). */
  async write(db: Queryable, row: OrderRow, now: number): Promise<void> {
    await db.query(
      `UPDATE payment_orders SET amount = $3, currency = $4, customer_email_hash = $5, created_emitted = $6, paid_emitted = $7, refunded_emitted = $8,
         refund_pending = $9, amount_refunded = $10, updated_at = $11 WHERE project_id = $1 AND order_id = $2`,
      [
        row.project_id,
        row.order_id,
        row.amount,
        row.currency,
        row.customer_email_hash,
        row.created_emitted,
        row.paid_emitted,
        row.refunded_emitted,
        row.refund_pending,
        row.amount_refunded,
        new Date(now),
      ],
    );
  },
};
