import { z } from 'zod';
import { LIMITS } from '../limits.ts';
import { errorAnswers, NoContent, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';

/**
 * Status page subscribers (issue 43, spec §4.2): people who sign up on a project's status page for mail about its
 * incidents and maintenance (double opt-in, one-click unsubscribe), and the project's own webhook receivers of the
 * same events. The public routes answer JSON, or a small HTML page to a browser (a form post without script, a link
 * opened from a mail).
 */
const S = LIMITS.statusSubscribers;
const tags = ['status'];

const StatusSlugParams = z.object({ slug: z.string().max(100) });
const TokenQuery = z.object({ token: z.string().max(200).describe('the token of the link in the mail') });

export const SubscribeBody = z.object({
  email: z.string().max(S.emailMaxChars).describe('the address to send the confirmation link to'),
});
export type SubscribeBody = z.infer<typeof SubscribeBody>;

export const SubscribeAnswer = z.object({
  ok: z.literal(true),
  message: z.string().describe('the same whether the address is new, waiting for its confirmation or subscribed already'),
});

export const ConfirmAnswer = z.object({ subscribed: z.literal(true), page: z.string().describe('the status page the address now gets mail about') });
export const UnsubscribeInfo = z.object({
  subscribed: z.literal(true),
  email: z.string().describe('the address, partly hidden'),
  page: z.string(),
});
export const UnsubscribeAnswer = z.object({ unsubscribed: z.literal(true) });

export const STATUS_SUBSCRIBER_KINDS = ['email', 'webhook'] as const;
export const StatusSubscriberSchema = z.object({
  id: z.string().describe('`ssb_...`'),
  kind: z.enum(STATUS_SUBSCRIBER_KINDS),
  email: z.string().nullable().describe('an e-mail subscriber'),
  url: z.string().nullable().describe("a webhook subscriber's receiver (a webhook endpoint of the project)"),
  endpointId: z.string().nullable().describe("a webhook subscriber's endpoint (`whk_...`): its deliveries are in the webhook log"),
  status: z.enum(['pending', 'confirmed']).describe('an e-mail subscriber is pending until its confirmation link is opened'),
  suppressed: z.boolean().describe('the mail provider reported a bounce or complaint: no mail goes to it'),
  createdAt: z.string(),
  confirmedAt: z.string().nullable(),
});
export type StatusSubscriber = z.infer<typeof StatusSubscriberSchema>;

export const StatusSubscriberList = z.object({
  subscribers: z.array(StatusSubscriberSchema),
  counts: z.object({ confirmed: z.number().int(), pending: z.number().int(), webhooks: z.number().int() }),
});
export const CreateWebhookSubscriberBody = z.object({ url: z.string().max(2048).describe('an https receiver; deliveries are signed like every webhook') });
export const WebhookSubscriberAnswer = z.object({
  subscriber: StatusSubscriberSchema.extend({ secret: z.string().describe('the signing secret (`whsec_...`), shown once') }),
});
const SubscriberParams = SlugParams.extend({ subscriberId: z.string().max(64) });

export const statusSubscriberRoutes = routeShapes({
  subscribeToStatus: {
    tags,
    summary: 'Sign an address up for mail about a status page: a confirmation link is mailed (JSON, or a form post answered with HTML)',
    params: StatusSlugParams,
    body: SubscribeBody,
    consumes: ['application/json', 'application/x-www-form-urlencoded'],
    response: { 202: SubscribeAnswer, ...errorAnswers(400, 404, 409, 429) },
  },
  confirmStatusSubscription: {
    tags,
    summary: "Confirm a sign-up with the mailed link's token (HTML to a browser, else JSON)",
    params: StatusSlugParams,
    querystring: TokenQuery,
    response: { 200: ConfirmAnswer, ...errorAnswers(404, 429) },
  },
  statusUnsubscribePage: {
    tags,
    summary: 'What an unsubscribe link ends (HTML with a button to a browser, else JSON); POST to the same address ends it',
    params: StatusSlugParams,
    querystring: TokenQuery,
    response: { 200: UnsubscribeInfo, ...errorAnswers(404, 429) },
  },
  statusUnsubscribe: {
    tags,
    summary: 'Unsubscribe at once (RFC 8058 one-click: the body `List-Unsubscribe=One-Click`, or none); an unknown token answers the same',
    params: StatusSlugParams,
    querystring: TokenQuery,
    body: z
      .object({ 'List-Unsubscribe': z.string().max(100).optional() })
      .passthrough()
      .nullish(),
    consumes: ['application/x-www-form-urlencoded', 'application/json'],
    response: { 200: UnsubscribeAnswer, ...errorAnswers(429) },
  },
  listStatusSubscribers: {
    tags,
    summary: "The status page's subscribers: e-mail (pending and confirmed) and webhook",
    params: SlugParams,
    response: { 200: StatusSubscriberList },
  },
  createStatusWebhookSubscriber: {
    tags,
    summary: 'Add a webhook subscriber: signed uptime.incident.* and uptime.maintenance.* deliveries through the webhook pipeline',
    params: SlugParams,
    body: CreateWebhookSubscriberBody,
    response: { 201: WebhookSubscriberAnswer, ...errorAnswers(400, 409) },
  },
  deleteStatusSubscriber: {
    tags,
    summary: 'Remove a subscriber (a webhook subscriber takes its endpoint with it)',
    params: SubscriberParams,
    response: { 204: NoContent, ...errorAnswers(404) },
  },
});
