import { z } from 'zod';
import { INBOUND_PROVIDERS, INBOUND_REFUSALS, type InboundProvider } from '../inbound.ts';
import { errorAnswers } from './common.ts';
import { routeShapes } from './route-shape.ts';

/** The inbound provider routes (spec §4.2): what a provider (or an operator) reads back. */
export const InboundAnswer = z.object({
  received: z.literal(true),
  duplicate: z.boolean().describe('this delivery id was taken before: nothing changed'),
});
export type InboundAnswer = z.infer<typeof InboundAnswer>;
export const PingAnswer = z.object({ received: z.literal(true), ping: z.literal(true) });

export const InboundHealthAnswer = z.object({
  providers: z.record(
    z.enum(INBOUND_PROVIDERS),
    z.object({
      configured: z.boolean().describe('a signing secret is set'),
      accepted: z.number().int(),
      duplicates: z.number().int(),
      refused: z.record(z.enum(INBOUND_REFUSALS), z.number().int()),
    }),
  ),
});
export type InboundHealth = z.infer<typeof InboundHealthAnswer>;

const tags = ['inbound'];
/**
 * A provider's delivery: its body is read raw (the signature is over exactly what was sent), so the shape names none.
 * No query string: GitHub, Stripe and Resend (Svix) post to the URL configured with them and add no parameters of
 * their own, so a URL configured with one is refused (400, in the provider's delivery log) rather than half-read.
 */
const delivery = (provider: InboundProvider, name: string) => ({
  tags,
  summary: `Inbound ${name} webhook (${provider}): the provider's signature is the authentication`,
  response: { 200: InboundAnswer, ...errorAnswers(401, 413, 429, 503) },
});

/** The family's routes (paths in route-table.ts). */
export const inboundRoutes = routeShapes({
  inboundCodeHost: delivery('github', 'GitHub'),
  inboundPayments: delivery('stripe', 'Stripe'),
  inboundPaymentsConnect: delivery('stripe_connect', 'Stripe'),
  inboundEmail: delivery('resend', 'Resend'),
  inboundHealth: { tags, summary: 'Inbound webhook counters by provider and refusal reason (no tenant data)', response: { 200: InboundHealthAnswer } },
});
