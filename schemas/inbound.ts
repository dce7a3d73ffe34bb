/**
 * The inbound provider webhooks (spec §4.2, §5.2 rule 6): which providers post to which route. The provider's signature
 * is the authentication; each is verified its own way (api/inbound/verify/).
 */
export const INBOUND_PROVIDERS = ['github', 'stripe', 'stripe_connect', 'resend'] as const;
export type InboundProvider = (typeof INBOUND_PROVIDERS)[number];

/** Each provider's route, by its id in the route table (schemas/api/route-table.ts). */
export const INBOUND_ROUTES = {
  github: 'inboundCodeHost',
  stripe: 'inboundPayments',
  stripe_connect: 'inboundPaymentsConnect',
  resend: 'inboundEmail',
} as const satisfies Record<InboundProvider, string>;

/** Why an inbound delivery was refused, counted per provider (`GET /v1/webhooks/health`). */
export const INBOUND_REFUSALS = ['no_secret_configured', 'missing_signature', 'bad_signature', 'expired_timestamp', 'malformed_body', 'rate_limited'] as const;
export type InboundRefusal = (typeof INBOUND_REFUSALS)[number];
