import type { Clock } from '../../../platform/clock.ts';
import type { Logger } from '../../../platform/logger.ts';
import type { Mailer } from '../../../platform/ports/mailer.ts';
import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { LIMITS } from '../../../schemas/limits.ts';
import type { GroupsRepository } from '../repositories/groups-repository.ts';
import type { GroupChange } from './group-step.ts';
import { alertRecipients } from '../../../domain/alert-recipients.ts';

/**
 * Alert email (spec §7.6). A group earns an alert when this batch holds a production occurrence and
 * the group is new to production or regressed. Claiming is one atomic UPDATE inside the batch
 * transaction (last_alert_at at most once per 6 hours, never for ignored groups, only with alerts
 * enabled), so concurrent processors and re-deliveries send at most one mail. Sending happens after
 * the batch is stored and never fails or holds up the batch: a mail error is logged.
 */
export interface AlertClaim {
  groupId: string;
  projectId: string;
  reason: 'new' | 'regression';
}

export interface AlertDeps {
  mailer: Mailer;
  clock: Clock;
  logger: Logger;
  publicBaseUrl: string;
  groups: Pick<GroupsRepository, 'claimAlerts' | 'alertMailFacts'>;
}

export function createAlertStep(deps: AlertDeps) {
  async function claimAlerts(tx: Queryable, changes: GroupChange[]): Promise<AlertClaim[]> {
    const candidates = changes.filter((c) => c.hasProduction && (c.firstInProduction || c.regressed));
    if (!candidates.length) return [];
    const ids = await deps.groups.claimAlerts(
      tx,
      candidates.map((c) => c.groupId),
      deps.clock.now(),
      LIMITS.errorAlert.perIssueMs,
    );
    return candidates
      .filter((c) => ids.has(c.groupId))
      .map((c) => ({ groupId: c.groupId, projectId: c.projectId, reason: c.regressed ? 'regression' : 'new' }));
  }

  /** Send the claimed alerts; resolves when done, never rejects. */
  async function sendAlerts(db: Queryable, claims: AlertClaim[]): Promise<void> {
    for (const claim of claims) {
      try {
        const mail = await buildAlertMail(db, deps.groups, deps.publicBaseUrl, claim);
        if (!mail) continue;
        await deps.mailer.send(mail);
      } catch (err) {
        deps.logger.error({ err, groupId: claim.groupId }, 'error alert mail failed');
      }
    }
  }

  return { claimAlerts, sendAlerts };
}

export function issueLink(publicBaseUrl: string, slug: string, groupId: string): string {
  return `${publicBaseUrl.replace(/\/+$/, '')}/projects/${encodeURIComponent(slug)}/errors/${groupId}`;
}

async function buildAlertMail(db: Queryable, groups: AlertDeps['groups'], publicBaseUrl: string, claim: AlertClaim) {
  const row = await groups.alertMailFacts(db, claim.groupId);
  if (!row) return undefined;
  const to = await alertRecipients(db, claim.projectId);
  if (!to.length) return undefined;
  const link = issueLink(publicBaseUrl, row.slug, claim.groupId);
  const what = claim.reason === 'regression' ? 'Regression' : 'New issue';
  const subject = `[${row.project_name}] ${what} in production: ${row.name}: ${truncate(row.message, 120)}`;
  const text = [
    `${what} in project ${row.project_name} (${row.slug}), environment production.`,
    '',
    `Error: ${row.name}: ${row.message}`,
    `Occurrences: ${Number(row.count)} in all, ${Number(row.env_counts?.production ?? 0)} in production`,
    `First frame of your code: ${row.culprit ?? 'none found in the stack'}`,
    row.suggestion ? `Suggestion: ${row.suggestion}` : undefined,
    '',
    `Open the issue: ${link}`,
    '',
    'At most one email per issue every 6 hours. Ignore the issue to stop these emails.',
  ]
    .filter((l) => l !== undefined)
    .join('\n');
  return { to, subject, text };
}

function truncate(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}
