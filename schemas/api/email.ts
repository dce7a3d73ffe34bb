import { z } from 'zod';
import { errorAnswers, NoContent, pageOf, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';

/**
 * `/v1/projects/:slug/email/inboxes` (spec §4.1 email, §6.2): a project's mailbox inboxes. Mail to an inbox's address
 * becomes `email.received` for the project's endpoints subscribed to it and for the inbox's own `webhookUrl`, signed
 * with the inbox's own secret and never listed among the project's webhooks.
 */
export const InboxSchema = z.object({
  id: z.string().describe('`ibx_...`'),
  address: z.string().describe('<localPart>@<project slug>.<INBOUND_EMAIL_DOMAIN>'),
  webhookUrl: z.string().nullable().describe("the inbox's own webhook target, or null"),
  createdAt: z.string(),
});
export type Inbox = z.infer<typeof InboxSchema>;
export const CreateInboxBody = z
  .object({
    localPart: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[a-z0-9](?:[a-z0-9._-]*[a-z0-9])?$/, 'lowercase letters, digits, dots, hyphens and underscores, starting and ending with a letter or digit'),
    webhookUrl: z.string().max(2048).optional().describe('https only; its own whsec_ secret is shown once'),
  })
  .strict();
export const CreatedInboxAnswer = z.object({
  inbox: InboxSchema.extend({ webhookSecret: z.string().nullable().describe('whsec_...; shown only in this answer') }),
});
export type CreatedInboxAnswer = z.infer<typeof CreatedInboxAnswer>;
export const InboxList = z.object({ inboxes: z.array(InboxSchema) });
export type InboxList = z.infer<typeof InboxList>;
export const InboxParams = z.object({ slug: z.string(), id: z.string().max(64) });

export const InboxMessageParams = InboxParams.extend({ messageId: z.string().max(64) });
export const InboxMessagesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().max(512).optional().describe("the previous page's nextCursor"),
});
/** A message an inbox received, as listed (the whole message is its .eml: `GET .../messages/:messageId/raw`). */
export const InboxMessageSchema = z.object({
  id: z.string().describe('`msg_...`'),
  threadId: z.string(),
  from: z.string(),
  fromName: z.string().nullable(),
  subject: z.string(),
  senderAuthenticated: z.boolean().describe('aligned DKIM'),
  attachments: z.number().int(),
  size: z.number().int().describe('bytes of the .eml'),
  receivedAt: z.string(),
  rawKey: z.string(),
});
export type InboxMessage = z.infer<typeof InboxMessageSchema>;
export const InboxMessagePage = pageOf(InboxMessageSchema);
export type InboxMessagePage = z.infer<typeof InboxMessagePage>;

const tags = ['email'];

/** The family's routes (paths in route-table.ts). */
export const emailRoutes = routeShapes({
  createInbox: {
    tags,
    summary: 'Create a mailbox inbox',
    params: SlugParams,
    body: CreateInboxBody,
    response: { 201: CreatedInboxAnswer, ...errorAnswers(400, 409) },
  },
  listInboxes: { tags, summary: "The project's inboxes (secrets are never listed)", params: SlugParams, response: { 200: InboxList } },
  deleteInbox: {
    tags,
    summary: 'Delete an inbox: its address receives nothing from now on',
    params: InboxParams,
    response: { 204: NoContent, ...errorAnswers(404) },
  },
  listInboxMessages: {
    tags,
    summary: "An inbox's received messages, newest first, a cursor page at a time",
    params: InboxParams,
    querystring: InboxMessagesQuery,
    response: { 200: InboxMessagePage, ...errorAnswers(400, 404) },
  },
  getRawInboxMessage: {
    tags,
    summary: 'A received message as it arrived (message/rfc822): the .eml its rawKey names',
    params: InboxMessageParams,
    response: { ...errorAnswers(404) },
  },
});
