import type { Queryable, RelationalStore } from '../../../platform/ports/relational-store.ts';
import { newId } from '../../../platform/tokens.ts';

/** The processor's side of the mailbox tables (inboxes, mail_threads, inbound_mail; migrations 0003, 0022). */
export interface InboxTarget {
  id: string;
  projectId: string;
  address: string;
  hasWebhook: boolean;
}

export interface StoredMail {
  id: string;
  threadId: string;
  threadSubject: string;
  threadMessageCount: number;
  /** False when this (inbox, delivery) was stored by an earlier delivery of the same provider event. */
  created: boolean;
}

export interface NewMail {
  inboxId: string;
  deliveryId: string;
  rfcMessageId: string | null;
  /** Message ids this one answers (In-Reply-To first, then References newest first). */
  parents: string[];
  fromAddress: string;
  fromName: string | null;
  subject: string;
  senderAuthenticated: boolean;
  attachments: number;
  raw: Buffer;
  receivedAt: number;
}

/** `Re: Re: [x] Fwd: Hello` is the thread `[x] Fwd: Hello`'s subject without its reply prefixes. */
const threadSubject = (subject: string) => subject.replace(/^(\s*(re|fwd?|aw|sv)\s*:\s*)+/i, '').trim() || '(no subject)';

export const mailRepository = {
  /** The inboxes among `addresses` (lower-cased), each with its project. */
  async inboxesAt(db: Queryable, addresses: string[]): Promise<InboxTarget[]> {
    if (!addresses.length) return [];
    const r = await db.query<{ id: string; project_id: string; address: string; webhook_url: string | null }>(
      'SELECT id, project_id, address, webhook_url FROM inboxes WHERE lower(address) = ANY($1::text[]) ORDER BY id',
      [addresses],
    );
    return r.rows.map((x) => ({ id: x.id, projectId: x.project_id, address: x.address, hasWebhook: x.webhook_url !== null }));
  },

  /**
   * Store a message in its inbox, in the thread of the newest stored message it answers (or a new thread), in one
   * transaction. A message already stored for this (inbox, delivery id) is returned as it was.
   */
  async store(db: RelationalStore, m: NewMail): Promise<StoredMail> {
    return db.transaction(async (tx) => {
      const existing = await tx.query<{ id: string; thread_id: string; subject: string; message_count: number }>(
        `SELECT m.id, m.thread_id, t.subject, t.message_count FROM inbound_mail m JOIN mail_threads t ON t.id = m.thread_id
         WHERE m.inbox_id = $1 AND m.delivery_id = $2`,
        [m.inboxId, m.deliveryId],
      );
      const was = existing.rows[0];
      if (was) return { id: was.id, threadId: was.thread_id, threadSubject: was.subject, threadMessageCount: was.message_count, created: false };
      const at = new Date(m.receivedAt);
      const parent = m.parents.length
        ? await tx.query<{ thread_id: string }>(
            'SELECT thread_id FROM inbound_mail WHERE inbox_id = $1 AND rfc_message_id = ANY($2::text[]) ORDER BY received_at DESC LIMIT 1',
            [m.inboxId, m.parents],
          )
        : { rows: [] };
      let threadId = parent.rows[0]?.thread_id;
      if (!threadId) {
        threadId = newId('thr_');
        await tx.query('INSERT INTO mail_threads (id, inbox_id, subject, message_count, last_message_at) VALUES ($1, $2, $3, 0, $4)', [
          threadId,
          m.inboxId,
          threadSubject(m.subject),
          at,
        ]);
      }
      const thread = await tx.query<{ subject: string; message_count: number }>(
        'UPDATE mail_threads SET message_count = message_count + 1, last_message_at = GREATEST(last_message_at, $2) WHERE id = $1 RETURNING subject, message_count',
        [threadId, at],
      );
      const id = newId('msg_');
      await tx.query(
        `INSERT INTO inbound_mail (id, inbox_id, thread_id, delivery_id, rfc_message_id, from_address, from_name, subject, sender_authenticated,
           attachments, size, raw, received_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
        [
          id,
          m.inboxId,
          threadId,
          m.deliveryId,
          m.rfcMessageId,
          m.fromAddress,
          m.fromName,
          m.subject,
          m.senderAuthenticated,
          m.attachments,
          m.raw.length,
          m.raw,
          at,
        ],
      );
      const t = thread.rows[0]!;
      return { id, threadId, threadSubject: t.subject, threadMessageCount: t.message_count, created: true };
    });
  },
};
