import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId } from '../../platform/tokens.ts';
import type { Page } from '../../schemas/api/common.ts';
import type { Inbox, InboxMessage } from '../../schemas/api/email.ts';
import { rawKeyOf } from '../../schemas/project-events.ts';
import { timeCursor } from '../time-cursor.ts';

/** The API's side of inboxes and inbound_mail (spec §6.2): a project's inboxes and the messages each received. */
interface InboxRow {
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
const toInbox = (r: InboxRow): Inbox => ({ id: r.id, address: r.address, webhookUrl: r.webhook_url, createdAt: new Date(r.created_at).toISOString() });
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

export const inboxesRepository = {
  /** The new inbox, or undefined when its address is taken. */
  async create(
    db: Queryable,
    inbox: { projectId: string; address: string; webhookUrl: string | null; webhookSecret: string | null },
    now: number,
  ): Promise<Inbox | undefined> {
    const r = await db.query<InboxRow>(
      `INSERT INTO inboxes (id, project_id, address, webhook_url, webhook_secret, created_at) VALUES ($1, $2, $3, $4, $5, $6)
       ON CONFLICT DO NOTHING RETURNING id, address, webhook_url, created_at`,
      [newId('ibx_'), inbox.projectId, inbox.address, inbox.webhookUrl, inbox.webhookSecret, new Date(now)],
    );
    return r.rows[0] && toInbox(r.rows[0]);
  },

  async list(db: Queryable, projectId: string): Promise<Inbox[]> {
    const r = await db.query<InboxRow>('SELECT id, address, webhook_url, created_at FROM inboxes WHERE project_id = $1 ORDER BY created_at, id', [projectId]);
    return r.rows.map(toInbox);
  },

  async exists(db: Queryable, projectId: string, id: string): Promise<boolean> {
    return (await db.query('SELECT id FROM inboxes WHERE project_id = $1 AND id = $2', [projectId, id])).rows.length > 0;
  },

  /** False when the project has no such inbox. */
  async delete(db: Queryable, projectId: string, id: string): Promise<boolean> {
    return (await db.query('DELETE FROM inboxes WHERE project_id = $1 AND id = $2 RETURNING id', [projectId, id])).rows.length > 0;
  },

  /** An inbox's messages, newest first, a page after the cursor (empty also when the project has no such inbox). */
  async messages(db: Queryable, projectId: string, inboxId: string, opts: { limit: number; cursor?: string }): Promise<Page<InboxMessage>> {
    const after = opts.cursor === undefined ? undefined : timeCursor.decode(opts.cursor);
    const r = await db.query<MessageRow>(
      `SELECT m.id, m.inbox_id, m.thread_id, m.from_address, m.from_name, m.subject, m.sender_authenticated, m.attachments, m.size, m.received_at
       FROM inbound_mail m JOIN inboxes i ON i.id = m.inbox_id
       WHERE i.project_id = $1 AND i.id = $2 AND ($3::timestamptz IS NULL OR (m.received_at, m.id) < ($3::timestamptz, $4::text))
       ORDER BY m.received_at DESC, m.id DESC LIMIT $5`,
      [projectId, inboxId, after?.at ?? null, after?.id ?? '', opts.limit + 1],
    );
    return timeCursor.page(r.rows, opts.limit, toMessage, (m) => ({ at: m.received_at, id: m.id }));
  },

  /** A message's .eml as it arrived, or undefined. */
  async rawMessage(db: Queryable, projectId: string, inboxId: string, messageId: string): Promise<Uint8Array | undefined> {
    const r = await db.query<{ raw: Uint8Array }>(
      'SELECT m.raw FROM inbound_mail m JOIN inboxes i ON i.id = m.inbox_id WHERE i.project_id = $1 AND i.id = $2 AND m.id = $3',
      [projectId, inboxId, messageId],
    );
    return r.rows[0]?.raw;
  },
};
