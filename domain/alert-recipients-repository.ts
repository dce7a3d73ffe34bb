import type { Queryable } from '../platform/ports/relational-store.ts';

/**
 * Who alert mail goes to (project_alert_recipients, migration 0002) and the addresses it skips (mail_suppressions,
 * migration 0020): the processor's alerts and the API's error-alert settings read them through alert-recipients.ts,
 * the inbound processor suppresses what the mail provider reports. Suppressed addresses are stored lower-cased.
 */
export type SuppressionReason = 'bounced' | 'complained';

export const alertRecipientsRepository = {
  /** The project's own recipient list, in address order (empty: none chosen). */
  async listed(db: Queryable, projectId: string): Promise<string[]> {
    const r = await db.query<{ email: string }>('SELECT email FROM project_alert_recipients WHERE project_id = $1 ORDER BY email', [projectId]);
    return r.rows.map((x) => x.email);
  },

  /** The project owner's address, if the project exists. */
  async ownerEmail(db: Queryable, projectId: string): Promise<string | undefined> {
    const r = await db.query<{ email: string }>('SELECT u.email FROM projects p JOIN users u ON u.id = p.owner_id WHERE p.id = $1', [projectId]);
    return r.rows[0]?.email;
  },

  /** The suppressions among `emails` (lower-cased), with their reason and since when. */
  async suppressions(db: Queryable, emails: string[]): Promise<Array<{ email: string; reason: SuppressionReason; since: string }>> {
    const r = await db.query<{ email: string; reason: SuppressionReason; at: Date | string }>(
      'SELECT email, reason, at FROM mail_suppressions WHERE email = ANY($1::text[])',
      [emails],
    );
    return r.rows.map((x) => ({ email: x.email, reason: x.reason, since: new Date(x.at).toISOString() }));
  },

  /** Put addresses (lower-cased) on the list, or refresh their reason: the newest report wins. */
  async suppress(db: Queryable, emails: string[], reason: SuppressionReason, at: number, sourceEvent: string): Promise<void> {
    await db.query(
      `INSERT INTO mail_suppressions (email, reason, at, source_event) SELECT unnest($1::text[]), $2, $3, $4
       ON CONFLICT (email) DO UPDATE SET reason = EXCLUDED.reason, at = EXCLUDED.at, source_event = EXCLUDED.source_event`,
      [emails, reason, new Date(at), sourceEvent],
    );
  },

  /** Take addresses (lower-cased) off the list. */
  async unsuppress(db: Queryable, emails: string[]): Promise<void> {
    await db.query('DELETE FROM mail_suppressions WHERE email = ANY($1::text[])', [emails]);
  },
};
