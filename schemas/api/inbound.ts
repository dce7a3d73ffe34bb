import { z } from 'zod';
import { INBOUND_PROVIDERS, INBOUND_REFUSALS } from '../inbound.ts';

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
