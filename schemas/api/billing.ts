import { z } from 'zod';
import { routeShapes } from './route-shape.ts';

/** `GET /v1/billing` (spec §4.1): each of the user's projects' plan state, from the billing ledger Stripe's events fill. */
export const ProjectBillingSchema = z.object({
  project: z.string().describe('slug'),
  plan: z.string().nullable().describe("the newest subscription event's price (nickname, lookup key or id); null: none yet"),
  status: z.string().nullable().describe('the subscription status Stripe last reported (active, past_due, canceled, ...)'),
  lastInvoice: z.object({ status: z.enum(['paid', 'failed']), amount: z.number().nullable(), currency: z.string().nullable(), at: z.string() }).nullable(),
});
export type ProjectBilling = z.infer<typeof ProjectBillingSchema>;
export const BillingAnswer = z.object({ projects: z.array(ProjectBillingSchema) });
export type BillingAnswer = z.infer<typeof BillingAnswer>;

/** The family's route (path in route-table.ts). */
export const billingRoutes = routeShapes({
  billing: { tags: ['billing'], summary: "The plan state of each of the user's projects", response: { 200: BillingAnswer } },
});
