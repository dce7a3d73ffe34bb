import type { Logger } from '../../platform/logger.ts';
import type { Platform } from '../../platform/platform.ts';
import { type IssueEventItem, publishIssueEvents } from '../../domain/issue-events/issue-events.ts';
import type { GroupChange } from './steps/group-step.ts';
import type { EnvironmentStampedEvent } from './steps/outcome.ts';

/**
 * issue.created and issue.regressed (issue 41) for the error pipeline, after its commit: for the groups this delivery
 * created or reopened (its group step's changes, which only this delivery's newly claimed events make: a re-delivered
 * batch's events are duplicates and change no group, so it publishes nothing again). The environment is that of the
 * batch's events of the group, production when any was. Never rejects: a failure is logged (the issue is stored; only
 * the notification is lost).
 */
export type IssueNotifier = (changes: GroupChange[], accepted: EnvironmentStampedEvent[]) => Promise<void>;

export function createIssueNotifier(platform: Pick<Platform, 'bus' | 'clock' | 'db'>, publicBaseUrl: string, logger: Logger): IssueNotifier {
  return async (changes, accepted) => {
    const noted = changes.filter((c) => c.created || c.regressed);
    if (!noted.length) return;
    const envOf = new Map<string, string | null>();
    for (const e of accepted) {
      const was = envOf.get(e.groupId);
      if (was === undefined || (was !== 'production' && e.environment === 'production')) envOf.set(e.groupId, e.environment ?? null);
    }
    const byProject = new Map<string, IssueEventItem[]>();
    for (const c of noted) {
      const items = byProject.get(c.projectId) ?? [];
      items.push({ groupId: c.groupId, event: c.regressed ? 'issue.regressed' : 'issue.created', environment: envOf.get(c.groupId) ?? null });
      byProject.set(c.projectId, items);
    }
    for (const [projectId, items] of byProject) {
      try {
        await publishIssueEvents(platform, publicBaseUrl, projectId, items);
      } catch (err) {
        logger.error({ err, projectId }, 'issue events could not be published');
      }
    }
  };
}
