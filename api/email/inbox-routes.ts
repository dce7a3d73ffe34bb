import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { checkedUrl } from '../outbound-url.ts';
import { newId, newToken } from '../../platform/tokens.ts';
import { errorAnswers, NoContent, SlugParams } from '../../schemas/api/common.ts';
import {
  CreatedInboxAnswer,
  CreateInboxBody,
  InboxList,
  InboxMessageList,
  InboxMessageParams,
  InboxMessagesQuery,
  InboxParams,
  type Inbox,
  type InboxMessage,
} from '../../schemas/api/email.ts';
import { rawKeyOf } from '../../schemas/project-events.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { TOKEN_PREFIX } from '../../schemas/scopes.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';

/**
 * `/v1/projects/:slug/email/inboxes` (spec §6.2): create an inbox (an address local part, and optionally the inbox's
 * own `webhookUrl`, whose `whsec_` secret is shown once), list, delete. A session or CLI token of a member; the
 * webhook URL passes the outbound URL guard. Inbox webhooks travel the project webhooks' delivery pipeline but are
 * never listed among them. An inbox's received messages are listed newest first, and each one's .eml (email.received's
 * `rawKey`) is served as message/rfc822.
 */
interface Row {
  id: string;
  address: string;
  webhook_url: string | null;
  created_at: Date | string;
}
interface MessageRow {
  id: string;
  inbox_id: string;
  thread_id: string;
  from_address: string;
  from_name: string | null;
  subject: string;
  sender_authenticated: boolean;
  attachments: number;
  size: number;
  received_at: Date | string;
}
const toMessage = (r: MessageRow): InboxMessage => ({
  id: r.id,
  threadId: r.thread_id,
  from: r.from_address,
  fromName: r.from_name,
  subject: r.subject,
  senderAuthenticated: r.sender_authenticated,
  attachments: r.attachments,
  size: r.size,
  receivedAt: new Date(r.received_at).toISOString(),
  rawKey: rawKeyOf(r.inbox_id, r.id),
});
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

    app.get(
      '/v1/projects/:slug/email/inboxes/:id/messages',
      {
        config: { auth: AUTH.user },
        schema: {
          tags: ['email'],
          summary: "An inbox's received messages, newest first",
          params: InboxParams,
          querystring: InboxMessagesQuery,
          response: { 200: InboxMessageList, ...errorAnswers(404) },
        },
      },
      async (request) => {
        const r = await db.query<MessageRow>(
          `SELECT m.id, m.inbox_id, m.thread_id, m.from_address, m.from_name, m.subject, m.sender_authenticated, m.attachments, m.size, m.received_at
           FROM inbound_mail m JOIN inboxes i ON i.id = m.inbox_id WHERE i.project_id = $1 AND i.id = $2 ORDER BY m.received_at DESC, m.id LIMIT $3`,
          [projectOf(request).id, request.params.id, request.query.limit],
        );
        if (!r.rows.length) await inboxOf(projectOf(request).id, request.params.id);
        return { messages: r.rows.map(toMessage) };
      },
    );

    app.get(
      '/v1/projects/:slug/email/inboxes/:id/messages/:messageId/raw',
      {
        config: { auth: AUTH.user },
        schema: {
          tags: ['email'],
          summary: 'A received message as it arrived (message/rfc822): the .eml its rawKey names',
          params: InboxMessageParams,
          response: { ...errorAnswers(404) },
        },
      },
      async (request, reply) => {
        const r = await db.query<{ raw: Uint8Array }>(
          'SELECT m.raw FROM inbound_mail m JOIN inboxes i ON i.id = m.inbox_id WHERE i.project_id = $1 AND i.id = $2 AND m.id = $3',
          [projectOf(request).id, request.params.id, request.params.messageId],
        );
        const row = r.rows[0];
        if (!row) throw new ServiceError('not_found', 'no such message');
        return reply
          .header('content-type', 'message/rfc822')
          .header('content-disposition', `attachment; filename="${request.params.messageId.replace(/[^\w.-]/g, '')}.eml"`)
          .header('x-content-type-options', 'nosniff')
          .send(Buffer.from(row.raw) as never); // bytes skip the JSON serializer; the schema documents the errors only
      },
    );

    async function inboxOf(projectId: string, id: string): Promise<void> {
      const r = await db.query('SELECT id FROM inboxes WHERE project_id = $1 AND id = $2', [projectId, id]);
      if (!r.rows.length) throw new ServiceError('not_found', 'no such inbox');
    }
  };
}
