import type { Queryable } from '../../platform/ports/relational-store.ts';

/**
 * Every statement of status page subscribers (issue 43, migration 0046): the public sign-up, confirm and unsubscribe
 * routes and the project's list (api/status-subscribers), and the processor's mail of incident and maintenance events
 * (processor/status-subscribers). Addresses are stored lower-cased; the confirmation token only as its hash.
 */
export interface SubscriberRow {
  id: string;
  project_id: string;
  kind: 'email' | 'webhook';
  email: string | null;
  endpoint_id: string | null;
  url: string | null;
  status: 'pending' | 'confirmed';
  suppressed: boolean;
  created_at: Date | string;
  confirmed_at: Date | string | null;
}

/** A confirmed e-mail subscriber the processor mails, with its unsubscribe token. */
export interface MailableRow {
  id: string;
  email: string;
  unsubscribe_token: string;
}

export const statusSubscribersRepository = {
  /** The project whose status page `slug` is (it has a public monitor), or undefined: no such page. */
  async pageProject(db: Queryable, slug: string): Promise<{ id: string; slug: string } | undefined> {
    const r = await db.query<{ id: string; slug: string }>(
      `SELECT p.id, p.slug FROM projects p WHERE p.slug = $1 AND EXISTS (SELECT 1 FROM uptime_monitors m WHERE m.project_id = p.id AND m.public)`,
      [slug],
    );
    return r.rows[0];
  },

  /** A project's slug by id (the processor's links). */
  async projectSlug(db: Queryable, projectId: string): Promise<string | undefined> {
    return (await db.query<{ slug: string }>('SELECT slug FROM projects WHERE id = $1', [projectId])).rows[0]?.slug;
  },

  /** The subscription of `email` to a project's page, if any. */
  async byEmail(db: Queryable, projectId: string, email: string): Promise<{ id: string; status: 'pending' | 'confirmed' } | undefined> {
    const r = await db.query<{ id: string; status: 'pending' | 'confirmed' }>(
      'SELECT id, status FROM status_subscribers WHERE project_id = $1 AND email = $2',
      [projectId, email],
    );
    return r.rows[0];
  },

  /** E-mail subscribers of a project (pending and confirmed). */
  async emailCount(db: Queryable, projectId: string): Promise<number> {
    const r = await db.query<{ n: string }>("SELECT count(*) AS n FROM status_subscribers WHERE project_id = $1 AND kind = 'email'", [projectId]);
    return Number(r.rows[0]?.n ?? 0);
  },

  async webhookCount(db: Queryable, projectId: string): Promise<number> {
    const r = await db.query<{ n: string }>("SELECT count(*) AS n FROM status_subscribers WHERE project_id = $1 AND kind = 'webhook'", [projectId]);
    return Number(r.rows[0]?.n ?? 0);
  },

  /** Pending sign-ups whose link ran out are forgotten (the address was never confirmed). */
  async forgetExpired(db: Queryable, projectId: string, now: number): Promise<void> {
    await db.query("DELETE FROM status_subscribers WHERE project_id = $1 AND status = 'pending' AND confirm_expires_at < $2", [projectId, new Date(now)]);
  },

  /**
   * A pending sign-up of `email` with a fresh confirmation token (hash) that runs out at `expiresAt`: a new row, or the
   * pending one's token replaced (an older link stops working). A confirmed subscription is left alone (false).
   */
  async upsertPending(
    db: Queryable,
    s: { id: string; projectId: string; email: string; confirmHash: string; expiresAt: number; unsubscribeToken: string },
    now: number,
  ): Promise<boolean> {
    const r = await db.query(
      `INSERT INTO status_subscribers (id, project_id, kind, email, status, confirm_token_hash, confirm_expires_at, unsubscribe_token, created_at)
       VALUES ($1, $2, 'email', $3, 'pending', $4, $5, $6, $7)
       ON CONFLICT (project_id, email) WHERE email IS NOT NULL DO UPDATE SET confirm_token_hash = EXCLUDED.confirm_token_hash,
         confirm_expires_at = EXCLUDED.confirm_expires_at
       WHERE status_subscribers.status = 'pending'`,
      [s.id, s.projectId, s.email, s.confirmHash, new Date(s.expiresAt), s.unsubscribeToken, new Date(now)],
    );
    return r.rowCount > 0;
  },

  /** Confirm the pending sign-up of this token's hash on this page, if its link has not run out. */
  async confirm(db: Queryable, projectId: string, confirmHash: string, now: number): Promise<boolean> {
    const r = await db.query(
      `UPDATE status_subscribers SET status = 'confirmed', confirmed_at = $3, confirm_token_hash = NULL, confirm_expires_at = NULL
       WHERE project_id = $1 AND confirm_token_hash = $2 AND status = 'pending' AND confirm_expires_at >= $3`,
      [projectId, confirmHash, new Date(now)],
    );
    return r.rowCount > 0;
  },

  /** The e-mail subscription an unsubscribe token ends, on this page. */
  async byUnsubscribeToken(db: Queryable, projectId: string, token: string): Promise<{ id: string; email: string } | undefined> {
    const r = await db.query<{ id: string; email: string }>(
      "SELECT id, email FROM status_subscribers WHERE project_id = $1 AND unsubscribe_token = $2 AND kind = 'email'",
      [projectId, token],
    );
    return r.rows[0];
  },

  async unsubscribe(db: Queryable, projectId: string, token: string): Promise<boolean> {
    const r = await db.query("DELETE FROM status_subscribers WHERE project_id = $1 AND unsubscribe_token = $2 AND kind = 'email'", [projectId, token]);
    return r.rowCount > 0;
  },

  /** A project's subscribers, e-mail ones with whether the mail provider suppressed them, webhook ones with their URL. */
  async list(db: Queryable, projectId: string, limit: number): Promise<SubscriberRow[]> {
    const r = await db.query<SubscriberRow>(
      `SELECT s.id, s.project_id, s.kind, s.email, s.endpoint_id, e.url, s.status, (m.email IS NOT NULL) AS suppressed, s.created_at, s.confirmed_at
       FROM status_subscribers s
       LEFT JOIN webhook_endpoints e ON e.id = s.endpoint_id
       LEFT JOIN mail_suppressions m ON m.email = s.email
       WHERE s.project_id = $1 ORDER BY s.kind, s.created_at DESC, s.id LIMIT $2`,
      [projectId, limit],
    );
    return r.rows;
  },

  async counts(db: Queryable, projectId: string): Promise<{ confirmed: number; pending: number; webhooks: number }> {
    const r = await db.query<{ confirmed: string; pending: string; webhooks: string }>(
      `SELECT count(*) FILTER (WHERE kind = 'email' AND status = 'confirmed') AS confirmed, count(*) FILTER (WHERE kind = 'email' AND status = 'pending') AS pending,
              count(*) FILTER (WHERE kind = 'webhook') AS webhooks
       FROM status_subscribers WHERE project_id = $1`,
      [projectId],
    );
    const row = r.rows[0];
    return { confirmed: Number(row?.confirmed ?? 0), pending: Number(row?.pending ?? 0), webhooks: Number(row?.webhooks ?? 0) };
  },

  async addWebhook(db: Queryable, s: { id: string; projectId: string; endpointId: string }, now: number): Promise<void> {
    await db.query(
      `INSERT INTO status_subscribers (id, project_id, kind, endpoint_id, status, created_at, confirmed_at) VALUES ($1, $2, 'webhook', $3, 'confirmed', $4, $4)`,
      [s.id, s.projectId, s.endpointId, new Date(now)],
    );
  },

  /** Remove a subscriber; a webhook one's endpoint goes too. False: no such subscriber of the project. */
  async remove(db: Queryable, projectId: string, id: string): Promise<boolean> {
    const r = await db.query<{ endpoint_id: string | null }>('DELETE FROM status_subscribers WHERE project_id = $1 AND id = $2 RETURNING endpoint_id', [
      projectId,
      id,
    ]);
    const endpoint = r.rows[0]?.endpoint_id;
    if (endpoint) await db.query('DELETE FROM webhook_endpoints WHERE project_id = $1 AND id = $2', [projectId, endpoint]);
    return r.rows.length > 0;
  },

  /** Confirmed e-mail subscribers of a project whose address is not suppressed (bounce or complaint), in id order after `after`. */
  async mailable(db: Queryable, projectId: string, after: string, limit: number): Promise<MailableRow[]> {
    const r = await db.query<MailableRow>(
      `SELECT s.id, s.email, s.unsubscribe_token FROM status_subscribers s
       WHERE s.project_id = $1 AND s.kind = 'email' AND s.status = 'confirmed' AND s.id > $2
         AND NOT EXISTS (SELECT 1 FROM mail_suppressions m WHERE m.email = s.email)
       ORDER BY s.id LIMIT $3`,
      [projectId, after, limit],
    );
    return r.rows;
  },

  /** Claim the mail of one event to one subscriber: false when it was sent already (a re-delivered event). */
  async claimMail(db: Queryable, eventId: string, subscriberId: string, now: number): Promise<boolean> {
    const r = await db.query(
      'INSERT INTO status_subscriber_mails (event_id, subscriber_id, sent_at) VALUES ($1, $2, $3) ON CONFLICT (event_id, subscriber_id) DO NOTHING',
      [eventId, subscriberId, new Date(now)],
    );
    return r.rowCount > 0;
  },

  /** Give a claim back (the mail could not be handed over; the bus delivers the event again). */
  async releaseMail(db: Queryable, eventId: string, subscriberId: string): Promise<void> {
    await db.query('DELETE FROM status_subscriber_mails WHERE event_id = $1 AND subscriber_id = $2', [eventId, subscriberId]);
  },

  /** Claims older than the bus keeps messages name nothing a re-delivery could bring back. */
  async pruneMails(db: Queryable, before: number): Promise<void> {
    await db.query('DELETE FROM status_subscriber_mails WHERE sent_at < $1', [new Date(before)]);
  },

  /** Whether `email` (lower-cased) is on the suppression list (a bounce or complaint). */
  async suppressed(db: Queryable, email: string): Promise<boolean> {
    return (await db.query('SELECT 1 FROM mail_suppressions WHERE email = $1', [email])).rows.length > 0;
  },
};
