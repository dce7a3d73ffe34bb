import type { Queryable } from '../../../platform/ports/relational-store.ts';

/** The platform's own billing ledger (billing_ledger, migration 0019), which `GET /v1/billing` reads. */
export interface BillingEntry {
  /** Stripe's event id (the delivery id): an event recorded twice is kept once. */
  eventId: string;
  /** The project's id or slug as the event names it; an entry naming none, or an unknown project, has no project. */
  projectRef: string | null;
  type: string;
  status: string | null;
  plan: string | null;
  amount: number | null;
  currency: string | null;
  occurredAt: number;
  recordedAt: number;
}

export const billingRepository = {
  async record(db: Queryable, e: BillingEntry): Promise<void> {
    await db.query(
      `INSERT INTO billing_ledger (event_id, project_id, type, status, plan, amount, currency, occurred_at, recorded_at)
       VALUES ($1, (SELECT id FROM projects WHERE id = $2 OR slug = $2 LIMIT 1), $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (event_id) DO NOTHING`,
      [e.eventId, e.projectRef, e.type, e.status, e.plan, e.amount, e.currency, new Date(e.occurredAt), new Date(e.recordedAt)],
    );
  },
};
