import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { ProjectBilling } from '../../schemas/api/billing.ts';

/**
 * What `GET /v1/billing` reads of the billing ledger the platform's own Stripe events fill
 * (processor/inbound/payments/billing-ledger.ts). Stripe may deliver out of order: the newest subscription event and
 * the newest invoice event by Stripe's own time decide.
 */
interface PlanRow {
  slug: string;
  plan: string | null;
  sub_status: string | null;
  inv_status: 'paid' | 'failed' | null;
  inv_amount: string | number | null;
  inv_currency: string | null;
  inv_at: Date | string | null;
}

const toProjectBilling = (r: PlanRow): ProjectBilling => ({
  project: r.slug,
  plan: r.plan,
  status: r.sub_status,
  lastInvoice: r.inv_status
    ? { status: r.inv_status, amount: r.inv_amount === null ? null : Number(r.inv_amount), currency: r.inv_currency, at: new Date(r.inv_at!).toISOString() }
    : null,
});

export const billingRepository = {
  /** The plan state of each project the user is a member of, by slug. */
  async plansOfUser(db: Queryable, userId: string): Promise<ProjectBilling[]> {
    const { rows } = await db.query<PlanRow>(
      `SELECT p.slug, s.plan, s.status AS sub_status, i.status AS inv_status, i.amount AS inv_amount, i.currency AS inv_currency, i.occurred_at AS inv_at
         FROM projects p JOIN project_members m ON m.project_id = p.id
         LEFT JOIN LATERAL (SELECT plan, status FROM billing_ledger WHERE project_id = p.id AND type LIKE 'customer.subscription.%' ORDER BY occurred_at DESC, event_id DESC LIMIT 1) s ON true
         LEFT JOIN LATERAL (SELECT status, amount, currency, occurred_at FROM billing_ledger WHERE project_id = p.id AND type LIKE 'invoice.%' ORDER BY occurred_at DESC, event_id DESC LIMIT 1) i ON true
        WHERE m.user_id = $1 ORDER BY p.slug`,
      [userId],
    );
    return rows.map(toProjectBilling);
  },
};
