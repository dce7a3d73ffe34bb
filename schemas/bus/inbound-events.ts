import { z } from 'zod';
import { INBOUND_PROVIDERS } from '../inbound.ts';
import { TOPICS } from '../topics.ts';
import { jsonCodec } from './json-codec.ts';

/**
 * A verified inbound provider delivery (key: provider and delivery id): the route checked the signature and remembered
 * the delivery id, then hands the provider's JSON payload to the processor (processor/inbound/), which acts on it once.
 */
export const TOPIC = TOPICS.inboundEvents;

export const InboundEventSchema = z.object({
  v: z.literal(1),
  provider: z.enum(INBOUND_PROVIDERS),
  deliveryId: z.string().min(1).max(200),
  /** The provider's event type: GitHub's X-GitHub-Event (`push`, `pull_request`), Stripe's `type`, Resend's `type`. */
  event: z.string().min(1).max(200),
  receivedAt: z.number(),
  payload: z.record(z.string(), z.unknown()),
});
export type InboundEvent = z.infer<typeof InboundEventSchema>;

export const { encode, decode } = jsonCodec(InboundEventSchema);
