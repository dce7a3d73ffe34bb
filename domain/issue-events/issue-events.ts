import type { Platform } from '../../platform/platform.ts';
import type { IssueEventData } from '../../schemas/project-events.ts';
import { publishProjectEvent } from '../project-event-publisher.ts';
import { type IssueEventFacts, issueEventsRepository } from './issue-events-repository.ts';

/**
 * The issue.* project events (issue 41), through the webhook fan-out like any project event (spec §6.1): signed,
 * retried, or rendered for Slack and Discord endpoints.
 *  1. read the issues as stored (after the change committed)
 *  2. build each one's data (schemas/project-events.ts IssueEventDataSchema), the console link from PUBLIC_BASE_URL
 *  3. publish, one project event per issue. issue.created's id is the issue's and issue.regressed's names the
 *     regression's number, so a second publish of the same change sends nothing twice; issue.resolved gets a fresh id
 *     (the resolve route moves an issue once, and each resolve after a reopen is news).
 */
export type IssueEventName = 'issue.created' | 'issue.regressed' | 'issue.resolved';

export interface IssueEventItem {
  groupId: string;
  event: IssueEventName;
  environment: string | null;
}

export async function publishIssueEvents(
  platform: Pick<Platform, 'bus' | 'clock' | 'db'>,
  publicBaseUrl: string,
  projectId: string,
  items: IssueEventItem[],
): Promise<void> {
  if (!items.length) return;
  // 1. read
  const facts = new Map((await issueEventsRepository.facts(platform.db, projectId, [...new Set(items.map((i) => i.groupId))])).map((f) => [f.id, f]));
  for (const item of items) {
    const f = facts.get(item.groupId);
    if (!f) continue;
    // 2. build, 3. publish
    const id =
      item.event === 'issue.created'
        ? `issue.created:${f.id}`
        : item.event === 'issue.regressed'
          ? `issue.regressed:${f.id}:${Number(f.regression_count)}`
          : undefined;
    await publishProjectEvent(platform, { ...(id ? { id } : {}), projectId, event: item.event, data: issueEventData(f, item, publicBaseUrl) });
  }
}

function issueEventData(f: IssueEventFacts, item: IssueEventItem, publicBaseUrl: string): IssueEventData {
  const deployId = item.event === 'issue.created' ? f.first_deploy_id : item.event === 'issue.regressed' ? f.regressed_deploy_id : f.last_deploy_id;
  const title = `${f.name}: ${f.message}`;
  return {
    issue: {
      id: f.id,
      title: title.length > 500 ? `${title.slice(0, 499)}…` : title,
      culprit: f.culprit ?? null,
      status: f.status,
      count: Number(f.count),
      environmentCounts: Object.fromEntries(Object.entries(f.env_counts ?? {}).map(([k, v]) => [k, Number(v)])),
      regressionCount: Number(f.regression_count),
      firstSeen: new Date(f.first_seen).toISOString(),
      lastSeen: new Date(f.last_seen).toISOString(),
    },
    environment: item.environment,
    deploy: deployId ? { id: deployId } : null,
    project: { id: f.project_id, slug: f.slug, name: f.project_name },
    url: `${publicBaseUrl.replace(/\/+$/, '')}/projects/${encodeURIComponent(f.slug)}/errors/${f.id}`,
  };
}
