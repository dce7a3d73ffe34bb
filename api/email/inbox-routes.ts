import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { checkedUrl } from '../outbound-url.ts';
import { newToken } from '../../platform/tokens.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';
import { declared } from '../declared-route.ts';
import { inboxesRepository } from './inboxes-repository.ts';

/**
 * `/v1/projects/:slug/email/inboxes` (spec §6.2): create an inbox (an address local part, and optionally the inbox's
 * own `webhookUrl`, whose `whsec_` secret is shown once), list, delete. A session or CLI token of a member; the
 * webhook URL passes the outbound URL guard. Inbox webhooks travel the project webhooks' delivery pipeline but are
 * never listed among them. An inbox's received messages are listed newest first, a cursor page at a time, and each
 * one's .eml (email.received's `rawKey`) is served as message/rfc822.
 */
const noInbox = () => new ServiceError('not_found', 'no such inbox');

export function inboxRoutes(platform: Pick<Platform, 'db' | 'clock' | 'config' | 'outbound'>): FastifyPluginAsyncZod {
  const { db, clock, config } = platform;
  return async (app) => {
    app.route({
      ...declared('createInbox'),
      config: { auth: AUTH.user },
      handler: async (request, reply) => {
        const project = projectOf(request);
        const webhookUrl = request.body.webhookUrl === undefined ? null : await checkedUrl(platform, request.body.webhookUrl, 'webhook', 'webhookUrl');
        const webhookSecret = webhookUrl ? newToken(TOKEN_PREFIX.webhookSecret) : null;
        const address = `${request.body.localPart}@${project.slug}.${config.INBOUND_EMAIL_DOMAIN}`;
        const inbox = await inboxesRepository.create(db, { projectId: project.id, address, webhookUrl, webhookSecret }, clock.now());
        if (!inbox) throw new ServiceError('conflict', `${address} is already an inbox`);
        return reply.code(201).send({ inbox: { ...inbox, webhookSecret } });
      },
    });

    app.route({
      ...declared('listInboxes'),
      config: { auth: AUTH.user },
      handler: async (request) => ({ inboxes: await inboxesRepository.list(db, projectOf(request).id) }),
    });

    app.route({
      ...declared('deleteInbox'),
      config: { auth: AUTH.user },
      handler: async (request, reply) => {
        if (!(await inboxesRepository.delete(db, projectOf(request).id, request.params.id))) throw noInbox();
        return reply.code(204).send(null);
      },
    });

    app.route({
      ...declared('listInboxMessages'),
      config: { auth: AUTH.user },
      handler: async (request) => {
        const projectId = projectOf(request).id;
        const page = await inboxesRepository.messages(db, projectId, request.params.id, request.query);
        // An empty page is an inbox with no (more) mail, or no inbox at all: only the second is 404.
        if (!page.data.length && !(await inboxesRepository.exists(db, projectId, request.params.id))) throw noInbox();
        return page;
      },
    });

    app.route({
      ...declared('getRawInboxMessage'),
      config: { auth: AUTH.user },
      handler: async (request, reply) => {
        const raw = await inboxesRepository.rawMessage(db, projectOf(request).id, request.params.id, request.params.messageId);
        if (!raw) throw new ServiceError('not_found', 'no such message');
        return reply
          .header('content-type', 'message/rfc822')
          .header('content-disposition', `attachment; filename="${request.params.messageId.replace(/[^\w.-]/g, '')}.eml"`)
          .header('x-content-type-options', 'nosniff')
          .send(Buffer.from(raw) as never); // bytes skip the JSON serializer; the shape documents the errors only
      },
    });
  };
}
