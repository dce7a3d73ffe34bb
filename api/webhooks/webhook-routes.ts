import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ServiceError } from '../../schemas/error-codes.ts';
import { isKnownEventPattern, PROJECT_EVENT_NAMES } from '../../schemas/project-events.ts';
import { publishProjectEvent } from '../../domain/project-event-publisher.ts';
import { checkedUrl } from '../outbound-url.ts';
import type { Platform } from '../../platform/platform.ts';
import { AUTH, type RouteAuth } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { webhooksRepository } from './webhook-repository.ts';
import type { WebhookFormat } from '../../schemas/api/webhooks.ts';
import { declared } from '../declared-route.ts';

/**
 * `/v1/projects/:slug/webhooks` (spec §4.3): outbound endpoint management, the delivery log,
 * replay, test events and secret rotation. Console session only (§5.2 rule 4), except
 * `POST .../test`, which a project key with scope `webhooks:send` may also call. Sending is the
 * processor's job (processor/webhooks); a replay is picked up by its next sweep (within a minute).
 */

/** Console session or a key holding webhooks:send (§5.2 rule 4). */
export const WEBHOOK_TEST_AUTH: RouteAuth = { session: true, cli: true, keyScope: 'webhooks:send' };

function checkEvents(events: string[] | undefined): string[] | undefined {
  if (!events) return undefined;
  const unknown = events.filter((e) => !isKnownEventPattern(e));
  if (unknown.length)
    throw new ServiceError('unknown_event', `unknown event name(s): ${unknown.join(', ')}; known: ${PROJECT_EVENT_NAMES.join(', ')} or a family like deploy.*`);
  return [...new Set(events)];
}

const checkUrl = (platform: Pick<Platform, 'outbound'>, url: string) => checkedUrl(platform, url, 'webhook');

/**
 * A Slack or Discord endpoint posts to that service's incoming-webhook host (issue 41): their message shape means
 * nothing elsewhere. A loopback receiver is taken too where the outbound guard already took it (ALLOW_LOCAL_OUTBOUND, a
 * development switch, or tests), so the formats can be tried against a local stand-in.
 */
function checkFormatHost(url: string, format: WebhookFormat): void {
  if (format === 'standard') return;
  const host = new URL(url).hostname.toLowerCase();
  if (CHAT_HOSTS[format].includes(host)) return;
  // A loopback host got past the guard's check only where the guard takes local stand-ins (ALLOW_LOCAL_OUTBOUND, tests).
  if (host === 'localhost' || host === '127.0.0.1' || host === '[::1]') return;
  throw new ServiceError('invalid_request', `url: a ${format} endpoint posts to ${CHAT_HOSTS[format].join(' or ')}, not ${host}`);
}
const CHAT_HOSTS: Record<Exclude<WebhookFormat, 'standard'>, string[]> = {
  slack: ['hooks.slack.com'],
  discord: ['discord.com', 'discordapp.com', 'ptb.discord.com', 'canary.discord.com'],
};

/** Whether the guard takes a loopback http:// receiver: the rule itself, asked, rather than the setting read again. */
function acceptsLocalReceivers(platform: Pick<Platform, 'outbound'>): boolean {
  try {
    platform.outbound.parseUrl('http://127.0.0.1/', 'webhook');
    return true;
  } catch {
    return false;
  }
}

const notFound = () => new ServiceError('not_found', 'webhook endpoint not found');

export function webhookRoutes(platform: Pick<Platform, 'db' | 'clock' | 'bus' | 'outbound'>): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  return async (app) => {
    app.route({
      ...declared('createWebhookEndpoint'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request, reply) => {
        const events = checkEvents(request.body.events)!;
        const url = await checkUrl(platform, request.body.url);
        checkFormatHost(url, request.body.format);
        const { endpoint, secret } = await webhooksRepository.createEndpoint(
          db,
          {
            projectId: projectOf(request).id,
            url,
            format: request.body.format,
            events,
            maxAttempts: request.body.maxAttempts,
            description: request.body.description,
          },
          clock.now(),
        );
        return reply.code(201).send({ endpoint: { ...endpoint, secret } });
      },
    });

    app.route({
      ...declared('listWebhookEndpoints'),
      config: { auth: AUTH.user },
      handler: async (request) => ({
        endpoints: await webhooksRepository.listEndpoints(db, projectOf(request).id, clock.now()),
        localReceiversAllowed: acceptsLocalReceivers(platform),
      }),
    });

    app.route({
      ...declared('sendTestWebhook'),
      config: { auth: WEBHOOK_TEST_AUTH },
      handler: async (request, reply) => {
        const project = projectOf(request);
        const ev = await publishProjectEvent(platform, {
          projectId: project.id,
          event: 'webhook.test',
          data: { project: project.slug, message: 'This is a test event from the webhook settings.' },
        });
        return reply.code(202).send({ event: { id: ev.id, event: ev.event } });
      },
    });

    app.route({
      ...declared('getWebhookEndpoint'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request) => {
        const endpoint = await webhooksRepository.getEndpoint(db, projectOf(request).id, request.params.id, clock.now());
        if (!endpoint) throw notFound();
        return { endpoint };
      },
    });

    app.route({
      ...declared('updateWebhookEndpoint'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request) => {
        const events = checkEvents(request.body.events);
        const url = request.body.url === undefined ? undefined : await checkUrl(platform, request.body.url);
        if (url !== undefined || request.body.format !== undefined) {
          const current = await webhooksRepository.getEndpoint(db, projectOf(request).id, request.params.id, clock.now());
          if (!current) throw notFound();
          checkFormatHost(url ?? current.url, request.body.format ?? current.format);
        }
        const endpoint = await webhooksRepository.updateEndpoint(db, projectOf(request).id, request.params.id, { ...request.body, url, events }, clock.now());
        if (!endpoint) throw notFound();
        return { endpoint };
      },
    });

    app.route({
      ...declared('deleteWebhookEndpoint'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request, reply) => {
        if (!(await webhooksRepository.deleteEndpoint(db, projectOf(request).id, request.params.id))) throw notFound();
        return reply.code(204).send(null);
      },
    });

    app.route({
      ...declared('listWebhookAttempts'),
      config: { auth: AUTH.user },
      handler: async (request) => {
        const endpoint = await webhooksRepository.getEndpoint(db, projectOf(request).id, request.params.id, clock.now());
        if (!endpoint) throw notFound();
        return { deliveries: await webhooksRepository.listAttempts(db, endpoint.id) };
      },
    });

    app.route({
      ...declared('replayWebhookDelivery'),
      config: { auth: AUTH.user },
      handler: async (request) => {
        const out = await webhooksRepository.replayDelivery(db, projectOf(request).id, request.params.id, clock.now());
        if (out === null) throw new ServiceError('not_found', 'delivery not found');
        if (out === 'sending') throw new ServiceError('conflict', 'the delivery is being sent right now; replay it once this attempt is recorded');
        return { delivery: out };
      },
    });

    app.route({
      ...declared('rotateWebhookSecret'),
      config: { auth: AUTH.sessionOnly },
      handler: async (request) => {
        const out = await webhooksRepository.rotateSecret(db, projectOf(request).id, request.params.id, clock.now());
        if (!out) throw notFound();
        return { endpoint: { ...out.endpoint, secret: out.secret } };
      },
    });
  };
}
