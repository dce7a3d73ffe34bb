import type { Queryable } from '../platform/ports/relational-store.ts';

/**
 * The project's alert recipients; when the list is empty, the project owner (so a fresh project still hears about
 * production errors). Addresses the mail provider reported as hard-bounced or complaining (mail_suppressions) are
 * left out until re-enabled in error-alert settings.
 */
export async function alertRecipients(db: Queryable, projectId: string): Promise<string[]> {
  return (await alertRecipientStates(db, projectId)).filter((r) => !r.suppressed).map((r) => r.email);
}

/** Every address alert mail would go to, with its suppression (reason and since when) if any. */
export async function alertRecipientStates(
  db: Queryable,
  projectId: string,
): Promise<Array<{ email: string; suppressed: { reason: 'bounced' | 'complained'; since: string } | null }>> {
  const listed = await db.query<{ email: string }>('SELECT email FROM project_alert_recipients WHERE project_id = $1 ORDER BY email', [projectId]);
  const emails = listed.rows.length
    ? listed.rows.map((x) => x.email)
    : (await db.query<{ email: string }>('SELECT u.email FROM projects p JOIN users u ON u.id = p.owner_id WHERE p.id = $1', [projectId])).rows.map(
        (x) => x.email,
      );
  if (!emails.length) return [];
  const s = await db.query<{ email: string; reason: 'bounced' | 'complained'; at: Date | string }>(
    'SELECT email, reason, at FROM mail_suppressions WHERE email = ANY($1::text[])',
    [emails.map((e) => e.toLowerCase())],
  );
  const byEmail = new Map(s.rows.map((r) => [r.email, { reason: r.reason, since: new Date(r.at).toISOString() }]));
  return emails.map((email) => ({ email, suppressed: byEmail.get(email.toLowerCase()) ?? null }));
}

/** Take addresses off the suppression list (a person fixed the mailbox). */
export async function reenableRecipients(db: Queryable, emails: string[]): Promise<void> {
  if (emails.length) await db.query('DELETE FROM mail_suppressions WHERE email = ANY($1::text[])', [emails.map((e) => e.toLowerCase())]);
}
