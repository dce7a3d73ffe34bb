import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { ServiceError } from '../../schemas/error-codes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { isKnownEventPattern, PROJECT_EVENT_NAMES } from '../../schemas/project-events.ts';
import { publishProjectEvent } from '../../platform/project-event-publisher.ts';
import { validateWebhookUrl, webhookGuardOptions, WebhookUrlError } from '../../platform/webhook-url-guard.ts';
import type { Platform } from '../../platform/platform.ts';
import { AUTH, type RouteAuth } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { ErrorBodySchema } from '../http-errors.ts';
import {
  createEndpoint,
  deleteEndpoint,
  getEndpoint,
  listAttempts,
  listEndpoints,
  replayDelivery,
  rotateSecret,
  updateEndpoint,
} from './webhook-repository.ts';

/**
 * `/v1/projects/:slug/webhooks` (spec §4.3): outbound endpoint management, the delivery log,
 * replay, test events and secret rotation. Console session only (§5.2 rule 4), except
 * `POST .../test`, which a project key with scope `webhooks:send` may also call. Sending is the
 * processor's job (processor/webhooks); a replay is picked up by its next sweep (within a minute).
 */

const { maxAttempts: MA } = LIMITS.webhook;

const EventsSchema = z
  .array(z.string().max(64))
  .max(PROJECT_EVENT_NAMES.length * 2)
  .describe(`event names (${PROJECT_EVENT_NAMES.join(', ')}) or families with a trailing * (deploy.*); empty = every event except email.received`);

const CreateBodySchema = z.object({
  url: z.string().max(2048).describe('https only; private, loopback and other non-public hosts are refused'),
  events: EventsSchema.default([]),
  maxAttempts: z.number().int().min(MA.min).max(MA.max).default(MA.default),
  description: z.string().max(500).default(''),
});

const PatchBodySchema = z.object({
  url: z.string().max(2048).optional(),
  events: EventsSchema.optional(),
  maxAttempts: z.number().int().min(MA.min).max(MA.max).optional(),
  description: z.string().max(500).optional(),
});

const EndpointSchema = z.object({
  id: z.string(),
  url: z.string(),
  description: z.string(),
  events: z.array(z.string()),
  maxAttempts: z.number(),
  createdAt: z.string(),
  updatedAt: z.string(),
  previousSecretExpiresAt: z.string().nullable().describe('during a rotation: when the previous secret stops signing'),
});
const EndpointWithSecretSchema = EndpointSchema.extend({ secret: z.string().describe('whsec_...; shown only in this answer') });

const AttemptSchema = z.object({
  deliveryId: z.string(),
  eventId: z.string(),
  event: z.string(),
  attempt: z.number(),
  status: z.enum(['succeeded', 'failed']),
  responseCode: z.number().nullable(),
  error: z.string().nullable(),
  startedAt: z.string(),
  finishedAt: z.string(),
  nextAttemptAt: z.string().nullable(),
  deliveryStatus: z.string().describe('pending, sending, succeeded or dead'),
});

const DeliverySchema = z.object({
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

const SlugParams = z.object({ slug: z.string() });
const IdParams = z.object({ slug: z.string(), id: z.string() });
const errors = { 400: ErrorBodySchema, 404: ErrorBodySchema, 409: ErrorBodySchema };

/** Console session or a key holding webhooks:send (§5.2 rule 4). */
export const WEBHOOK_TEST_AUTH: RouteAuth = { session: true, keyScope: 'webhooks:send' };

function checkEvents(events: string[] | undefined): string[] | undefined {
  if (!events) return undefined;
  const unknown = events.filter((e) => !isKnownEventPattern(e));
  if (unknown.length) throw new ServiceError('unknown_event', `unknown event name(s): ${unknown.join(', ')}; known: ${PROJECT_EVENT_NAMES.join(', ')} or a family like deploy.*`);
  return [...new Set(events)];
}

async function checkUrl(platform: Platform, url: string): Promise<string> {
  try {
    const parsed = await validateWebhookUrl(url, webhookGuardOptions(platform));
    return parsed.href;
  } catch (err) {
    if (err instanceof WebhookUrlError) throw new ServiceError(err.code, err.message);
    throw err;
  }
}

const notFound = () => new ServiceError('not_found', 'webhook endpoint not found');

const routes: FastifyPluginAsyncZod = async (app) => {
  const platform = app.platform;
  const { db, clock } = platform;
  const tags = ['webhooks'];

  app.post(
    '/v1/projects/:slug/webhooks',
    {
      config: { auth: AUTH.sessionOnly },
      schema: { tags, summary: 'Create a webhook endpoint (its secret is shown once)', params: SlugParams, body: CreateBodySchema, response: { 201: z.object({ endpoint: EndpointWithSecretSchema }), ...errors } },
    },
    async (request, reply) => {
      const events = checkEvents(request.body.events)!;
      const url = await checkUrl(platform, request.body.url);
      const { endpoint, secret } = await createEndpoint(db, { projectId: projectOf(request).id, url, events, maxAttempts: request.body.maxAttempts, description: request.body.description }, clock.now());
      return reply.code(201).send({ endpoint: { ...endpoint, secret } });
    },
  );

  app.get(
    '/v1/projects/:slug/webhooks',
    { config: { auth: AUTH.sessionOnly }, schema: { tags, summary: "The project's webhook endpoints", params: SlugParams, response: { 200: z.object({ endpoints: z.array(EndpointSchema) }) } } },
    async (request) => ({ endpoints: await listEndpoints(db, projectOf(request).id, clock.now()) }),
  );

  app.post(
    '/v1/projects/:slug/webhooks/test',
    {
      config: { auth: WEBHOOK_TEST_AUTH },
      schema: { tags, summary: 'Fire one webhook.test event to the subscribed endpoints', params: SlugParams, response: { 202: z.object({ event: z.object({ id: z.string(), event: z.string() }) }) } },
    },
    async (request, reply) => {
      const project = projectOf(request);
      const ev = await publishProjectEvent(platform, { projectId: project.id, event: 'webhook.test', data: { project: project.slug, message: 'This is a test event from the webhook settings.' } });
      return reply.code(202).send({ event: { id: ev.id, event: ev.event } });
    },
  );

  app.get(
    '/v1/projects/:slug/webhooks/:id',
    { config: { auth: AUTH.sessionOnly }, schema: { tags, summary: 'One webhook endpoint', params: IdParams, response: { 200: z.object({ endpoint: EndpointSchema }), 404: ErrorBodySchema } } },
    async (request) => {
      const endpoint = await getEndpoint(db, projectOf(request).id, request.params.id, clock.now());
      if (!endpoint) throw notFound();
      return { endpoint };
    },
  );

  app.patch(
    '/v1/projects/:slug/webhooks/:id',
    { config: { auth: AUTH.sessionOnly }, schema: { tags, summary: 'Change url, events, maxAttempts or description', params: IdParams, body: PatchBodySchema, response: { 200: z.object({ endpoint: EndpointSchema }), ...errors } } },
    async (request) => {
      const events = checkEvents(request.body.events);
      const url = request.body.url === undefined ? undefined : await checkUrl(platform, request.body.url);
      const endpoint = await updateEndpoint(db, projectOf(request).id, request.params.id, { ...request.body, url, events }, clock.now());
      if (!endpoint) throw notFound();
      return { endpoint };
    },
  );

  app.delete(
    '/v1/projects/:slug/webhooks/:id',
    { config: { auth: AUTH.sessionOnly }, schema: { tags, summary: 'Delete an endpoint and its pending deliveries', params: IdParams, response: { 204: z.null(), 404: ErrorBodySchema } } },
    async (request, reply) => {
      if (!(await deleteEndpoint(db, projectOf(request).id, request.params.id))) throw notFound();
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/v1/projects/:slug/webhooks/:id/deliveries',
    {
      config: { auth: AUTH.sessionOnly },
      schema: { tags, summary: 'The last 100 delivery attempts of the endpoint, newest first', params: IdParams, response: { 200: z.object({ deliveries: z.array(AttemptSchema) }), 404: ErrorBodySchema } },
    },
    async (request) => {
      const endpoint = await getEndpoint(db, projectOf(request).id, request.params.id, clock.now());
      if (!endpoint) throw notFound();
      return { deliveries: await listAttempts(db, endpoint.id) };
    },
  );

  app.post(
    '/v1/projects/:slug/webhooks/deliveries/:id/replay',
    {
      config: { auth: AUTH.sessionOnly },
      schema: { tags, summary: 'Reset a delivery to pending with a fresh attempt budget (same delivery id)', params: IdParams, response: { 200: z.object({ delivery: DeliverySchema }), ...errors } },
    },
    async (request) => {
      const out = await replayDelivery(db, projectOf(request).id, request.params.id, clock.now());
      if (out === null) throw new ServiceError('not_found', 'delivery not found');
      if (out === 'sending') throw new ServiceError('conflict', 'the delivery is being sent right now; replay it once this attempt is recorded');
      return { delivery: out };
    },
  );

  app.post(
    '/v1/projects/:slug/webhooks/:id/rotate-secret',
    {
      config: { auth: AUTH.sessionOnly },
      schema: { tags, summary: 'New signing secret (shown once); the previous one keeps signing for 24 h', params: IdParams, response: { 200: z.object({ endpoint: EndpointWithSecretSchema }), 404: ErrorBodySchema } },
    },
    async (request) => {
      const out = await rotateSecret(db, projectOf(request).id, request.params.id, clock.now());
      if (!out) throw notFound();
      return { endpoint: { ...out.endpoint, secret: out.secret } };
    },
  );
};

/** Registered by buildApiApp; reads `app.platform`. */
export const webhookRoutes = routes as unknown as FastifyPluginAsync;
