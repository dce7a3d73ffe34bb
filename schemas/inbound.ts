/**
 * The inbound provider webhooks (spec §4.2, §5.2 rule 6): which providers post to which route. The provider's signature
 * is the authentication; each is verified its own way (api/inbound/verify/).
 */
import { ROUTES } from './api/route-table.ts';

export const INBOUND_PROVIDERS = ['github', 'stripe', 'stripe_connect', 'resend'] as const;
export type InboundProvider = (typeof INBOUND_PROVIDERS)[number];

export const INBOUND_ROUTES: Record<InboundProvider, string> = {
  github: ROUTES.inboundCodeHost.path,
  stripe: ROUTES.inboundPayments.path,
  stripe_connect: ROUTES.inboundPaymentsConnect.path,
  resend: ROUTES.inboundEmail.path,
};

/** Why an inbound delivery was refused, counted per provider (`GET /v1/webhooks/health`). */
export const INBOUND_REFUSALS = ['no_secret_configured', 'missing_signature', 'bad_signature', 'expired_timestamp', 'malformed_body', 'rate_limited'] as const;
export type InboundRefusal = (typeof INBOUND_REFUSALS)[number];
