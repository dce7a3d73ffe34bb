import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { BillingAnswer, type ProjectBilling } from '../../schemas/api/billing.ts';
import { userIdOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';

/**
 * `GET /v1/billing` (spec §4.1, §5.2 rule 1: session only): the plan state of each of the user's projects, read from the
 * billing ledger the platform's own Stripe events fill (processor/inbound/payments/billing-ledger.ts). Stripe may deliver
 * out of order: the newest subscription event and the newest invoice event by Stripe's own time decide.
 */
export function billingRoutes(platform: Pick<Platform, 'db'>): FastifyPluginAsyncZod {
  const { db } = platform;
  return async (app) => {
    app.get(
      '/v1/billing',
      {
        config: { auth: AUTH.sessionOnly },
        schema: { tags: ['billing'], summary: "The plan state of each of the user's projects", response: { 200: BillingAnswer } },
      },
      async (request) => {
        const { rows } = await db.query<{
          slug: string;
          plan: string | null;
          sub_status: string | null;
          inv_status: 'paid' | 'failed' | null;
          inv_amount: string | number | null;
          inv_currency: string | null;
          inv_at: Date | string | null;
        }>(
          `SELECT p.slug, s.plan, s.status AS sub_status, i.status AS inv_status, i.amount AS inv_amount, i.currency AS inv_currency, i.occurred_at AS inv_at
           FROM projects p JOIN project_members m ON m.project_id = p.id
           LEFT JOIN LATERAL (SELECT plan, status FROM billing_ledger WHERE project_id = p.id AND type LIKE 'customer.subscription.%' ORDER BY occurred_at DESC, event_id DESC LIMIT 1) s ON true
           LEFT JOIN LATERAL (SELECT status, amount, currency, occurred_at FROM billing_ledger WHERE project_id = p.id AND type LIKE 'invoice.%' ORDER BY occurred_at DESC, event_id DESC LIMIT 1) i ON true
          WHERE m.user_id = $1 ORDER BY p.slug`,
          [userIdOf(request)],
        );
        const projects: ProjectBilling[] = rows.map((r) => ({
          project: r.slug,
          plan: r.plan,
          status: r.sub_status,
          lastInvoice: r.inv_status
            ? {
                status: r.inv_status,
                amount: r.inv_amount === null ? null : Number(r.inv_amount),
                currency: r.inv_currency,
                at: new Date(r.inv_at!).toISOString(),
              }
            : null,
        }));
        return { projects };
      },
    );
  };
}
