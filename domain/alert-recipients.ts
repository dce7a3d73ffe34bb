import type { Queryable } from '../platform/ports/relational-store.ts';
import { alertRecipientsRepository } from './alert-recipients-repository.ts';

/**
 * The project's alert recipients; when the list is empty, the project owner (so a fresh project still hears about
 * production errors). Addresses the mail provider reported as hard-bounced or complaining (mail_suppressions) are
 * left out until re-enabled in error-alert settings. Suppressions match addresses whatever their case.
 */
export async function alertRecipients(db: Queryable, projectId: string): Promise<string[]> {
  return (await alertRecipientStates(db, projectId)).filter((r) => !r.suppressed).map((r) => r.email);
}

/** Every address alert mail would go to, with its suppression (reason and since when) if any. */
export async function alertRecipientStates(
  db: Queryable,
  projectId: string,
): Promise<Array<{ email: string; suppressed: { reason: 'bounced' | 'complained'; since: string } | null }>> {
  const listed = await alertRecipientsRepository.listed(db, projectId);
  const owner = listed.length ? undefined : await alertRecipientsRepository.ownerEmail(db, projectId);
  const emails = listed.length ? listed : owner ? [owner] : [];
  if (!emails.length) return [];
  const s = await alertRecipientsRepository.suppressions(
    db,
    emails.map((e) => e.toLowerCase()),
  );
  const byEmail = new Map(s.map((r) => [r.email, { reason: r.reason, since: r.since }]));
  return emails.map((email) => ({ email, suppressed: byEmail.get(email.toLowerCase()) ?? null }));
}

/** Take addresses off the suppression list (a person fixed the mailbox). */
export async function reenableRecipients(db: Queryable, emails: string[]): Promise<void> {
  if (emails.length)
    await alertRecipientsRepository.unsuppress(
      db,
      emails.map((e) => e.toLowerCase()),
    );
}
