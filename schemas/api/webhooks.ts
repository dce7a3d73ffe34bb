import { z } from 'zod';
import { LIMITS } from '../limits.ts';
import { PROJECT_EVENT_NAMES } from '../project-event-names.ts';
import { errorAnswers, NoContent, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';

/** Outbound project webhooks (spec §4.3): endpoints, the delivery log, replay, test events and secret rotation. */
const { maxAttempts: MA } = LIMITS.webhook;

export const WebhookIdParams = z.object({ slug: z.string(), id: z.string() });

const EventsSchema = z
  .array(z.string().max(64))
  .max(PROJECT_EVENT_NAMES.length * 2)
  .describe(`event names (${PROJECT_EVENT_NAMES.join(', ')}) or families with a trailing * (deploy.*); empty = every event except email.received`);

export const WEBHOOK_FORMATS = ['standard', 'slack', 'discord'] as const;
export type WebhookFormat = (typeof WEBHOOK_FORMATS)[number];
const FormatSchema = z
  .enum(WEBHOOK_FORMATS)
  .describe(
    'standard: our signed JSON ({ event, data, sentAt }); slack: a Slack incoming webhook message ({ text, blocks }), url on hooks.slack.com; discord: a Discord webhook message ({ content, embeds }), url on discord.com or discordapp.com. Slack and Discord deliveries carry no signature headers (their URL is the credential)',
  );

export const CreateEndpointBody = z.object({
  url: z.string().max(2048).describe('https only; private, loopback and other non-public hosts are refused'),
  format: FormatSchema.default('standard'),
  events: EventsSchema.default([]),
  maxAttempts: z.number().int().min(MA.min).max(MA.max).default(MA.default),
  description: z.string().max(500).default(''),
});
export type CreateEndpointBody = z.infer<typeof CreateEndpointBody>;
export const PatchEndpointBody = z.object({
  url: z.string().max(2048).optional(),
  format: FormatSchema.optional(),
  events: EventsSchema.optional(),
  maxAttempts: z.number().int().min(MA.min).max(MA.max).optional(),
  description: z.string().max(500).optional(),
});
export type PatchEndpointBody = z.infer<typeof PatchEndpointBody>;

export const EndpointSchema = z.object({
  id: z.string(),
  url: z.string(),
  format: z.enum(WEBHOOK_FORMATS),
  description: z.string(),
  events: z.array(z.string()),
  maxAttempts: z.number(),
  createdAt: z.string(),
  updatedAt: z.string(),
  previousSecretExpiresAt: z.string().nullable().describe('during a rotation: when the previous secret stops signing'),
});
export type Endpoint = z.infer<typeof EndpointSchema>;
export const EndpointAnswer = z.object({ endpoint: EndpointSchema });
export type EndpointAnswer = z.infer<typeof EndpointAnswer>;
export const EndpointList = z.object({
  endpoints: z.array(EndpointSchema),
  localReceiversAllowed: z
    .boolean()
    .describe(
      'whether this deployment accepts http:// and loopback receivers (ALLOW_LOCAL_OUTBOUND, a development switch; ALLOW_LOCAL_WEBHOOKS its alias); otherwise https and public hosts only',
    ),
});
export type EndpointList = z.infer<typeof EndpointList>;
export const EndpointWithSecretAnswer = z.object({ endpoint: EndpointSchema.extend({ secret: z.string().describe('whsec_...; shown only in this answer') }) });
export type EndpointWithSecretAnswer = z.infer<typeof EndpointWithSecretAnswer>;

export const AttemptSchema = z.object({
  deliveryId: z.string(),
  eventId: z.string(),
  event: z.string(),
  attempt: z.number().describe("the attempt's number for its delivery, counting across replays"),
  status: z.enum(['succeeded', 'failed']),
  responseCode: z.number().nullable(),
  error: z.string().nullable(),
  startedAt: z.string(),
  finishedAt: z.string(),
  nextAttemptAt: z.string().nullable().describe("when the delivery's next attempt was scheduled after this one (null: none)"),
  deliveryStatus: z.string().describe('pending, sending, succeeded or dead'),
  deliveryNextAttemptAt: z
    .string()
    .nullable()
    .describe("while the delivery is pending: when its next attempt is due (the delivery's, the same on each of its attempts)"),
});
export type Attempt = z.infer<typeof AttemptSchema>;
export const AttemptList = z.object({ deliveries: z.array(AttemptSchema) });
export type AttemptList = z.infer<typeof AttemptList>;

export const DeliverySchema = z.object({
  id: z.string(),
  endpointId: z.string(),
  eventId: z.string(),
  event: z.string(),
  status: z.string(),
  attempts: z.number(),
  maxAttempts: z.number(),
  nextAttemptAt: z.string(),
  lastError: z.string().nullable(),
  lastResponseCode: z.number().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Delivery = z.infer<typeof DeliverySchema>;
export const DeliveryAnswer = z.object({ delivery: DeliverySchema });
export type DeliveryAnswer = z.infer<typeof DeliveryAnswer>;
export const TestEventAnswer = z.object({ event: z.object({ id: z.string(), event: z.string() }) });
export type TestEventAnswer = z.infer<typeof TestEventAnswer>;

const tags = ['webhooks'];
const errors = errorAnswers(400, 404, 409);

/** The family's routes (paths in route-table.ts). */
export const webhookRoutes = routeShapes({
  createWebhookEndpoint: {
    tags,
    summary: 'Create a webhook endpoint (its secret is shown once)',
    params: SlugParams,
    body: CreateEndpointBody,
    response: { 201: EndpointWithSecretAnswer, ...errors },
  },
  listWebhookEndpoints: { tags, summary: "The project's webhook endpoints", params: SlugParams, response: { 200: EndpointList } },
  sendTestWebhook: { tags, summary: 'Fire one webhook.test event to the subscribed endpoints', params: SlugParams, response: { 202: TestEventAnswer } },
  getWebhookEndpoint: { tags, summary: 'One webhook endpoint', params: WebhookIdParams, response: { 200: EndpointAnswer, ...errorAnswers(404) } },
  updateWebhookEndpoint: {
    tags,
    summary: 'Change url, format, events, maxAttempts or description',
    params: WebhookIdParams,
    body: PatchEndpointBody,
    response: { 200: EndpointAnswer, ...errors },
  },
  deleteWebhookEndpoint: {
    tags,
    summary: 'Delete an endpoint and its pending deliveries',
    params: WebhookIdParams,
    response: { 204: NoContent, ...errorAnswers(404) },
  },
  listWebhookAttempts: {
    tags,
    summary: 'The last 100 delivery attempts of the endpoint, newest first',
    params: WebhookIdParams,
    response: { 200: AttemptList, ...errorAnswers(404) },
  },
  replayWebhookDelivery: {
    tags,
    summary: 'Reset a delivery to pending with a fresh attempt budget (same delivery id)',
    params: WebhookIdParams,
    response: { 200: DeliveryAnswer, ...errors },
  },
  rotateWebhookSecret: {
    tags,
    summary: 'New signing secret (shown once); the previous one keeps signing for 24 h',
    params: WebhookIdParams,
    response: { 200: EndpointWithSecretAnswer, ...errorAnswers(404) },
  },
});
