import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { checkedUrl } from '../outbound-url.ts';
import { newId, newToken } from '../../platform/tokens.ts';
import { errorAnswers, NoContent, SlugParams } from '../../schemas/api/common.ts';
import { CreatedInboxAnswer, CreateInboxBody, InboxList, InboxParams, type Inbox } from '../../schemas/api/email.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';

/**
 * `/v1/projects/:slug/email/inboxes` (spec §6.2): create an inbox (an address local part, and optionally the inbox's
 * own `webhookUrl`, whose `whsec_` secret is shown once), list, delete. A session or CLI token of a member; the
 * webhook URL passes the outbound URL guard. Inbox webhooks travel the project webhooks' delivery pipeline but are
 * never listed among them.
 */
interface Row {
  id: string;
  address: string;
  webhook_url: string | null;
  created_at: Date | string;
}
const toInbox = (r: Row): Inbox => ({ id: r.id, address: r.address, webhookUrl: r.webhook_url, createdAt: new Date(r.created_at).toISOString() });

export function inboxRoutes(platform: Pick<Platform, 'db' | 'clock' | 'config' | 'outbound'>): FastifyPluginAsyncZod {
  const { db, clock, config } = platform;
  return async (app) => {
    app.post(
      '/v1/projects/:slug/email/inboxes',
      {
        config: { auth: AUTH.user },
        schema: {
          tags: ['email'],
          summary: 'Create a mailbox inbox',
          params: SlugParams,
          body: CreateInboxBody,
          response: { 201: CreatedInboxAnswer, ...errorAnswers(400, 409) },
        },
      },
      async (request, reply) => {
        const project = projectOf(request);
        const webhookUrl = request.body.webhookUrl === undefined ? null : await checkedUrl(platform, request.body.webhookUrl, 'webhook', 'webhookUrl');
        const secret = webhookUrl ? newToken(TOKEN_PREFIX.webhookSecret) : null;
        const address = `${request.body.localPart}@${project.slug}.${config.INBOUND_EMAIL_DOMAIN}`;
        const r = await db.query<Row>(
          `INSERT INTO inboxes (id, project_id, address, webhook_url, webhook_secret, created_at) VALUES ($1, $2, $3, $4, $5, $6)
           ON CONFLICT DO NOTHING RETURNING id, address, webhook_url, created_at`,
          [newId('ibx_'), project.id, address, webhookUrl, secret, new Date(clock.now())],
        );
        if (!r.rows[0]) throw new ServiceError('conflict', `${address} is already an inbox`);
        return reply.code(201).send({ inbox: { ...toInbox(r.rows[0]), webhookSecret: secret } });
      },
    );

    app.get(
      '/v1/projects/:slug/email/inboxes',
      {
        config: { auth: AUTH.user },
        schema: { tags: ['email'], summary: "The project's inboxes (secrets are never listed)", params: SlugParams, response: { 200: InboxList } },
      },
      async (request) => {
        const r = await db.query<Row>('SELECT id, address, webhook_url, created_at FROM inboxes WHERE project_id = $1 ORDER BY created_at, id', [
          projectOf(request).id,
        ]);
        return { inboxes: r.rows.map(toInbox) };
      },
    );

    app.delete(
      '/v1/projects/:slug/email/inboxes/:id',
      {
        config: { auth: AUTH.user },
        schema: {
          tags: ['email'],
          summary: 'Delete an inbox: its address receives nothing from now on',
          params: InboxParams,
          response: { 204: NoContent, ...errorAnswers(404) },
        },
      },
      async (request, reply) => {
        const r = await db.query('DELETE FROM inboxes WHERE project_id = $1 AND id = $2 RETURNING id', [projectOf(request).id, request.params.id]);
        if (!r.rows.length) throw new ServiceError('not_found', 'no such inbox');
        return reply.code(204).send(null);
      },
    );
  };
}
