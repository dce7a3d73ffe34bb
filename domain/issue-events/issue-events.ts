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
 *     (the resolve route moves an issue once, and each resolve after a reopen is news); issue.escalating's names the
 *     escalation's time (processor/errors/issue-triage-sweep.ts).
 */
export type IssueEventName = 'issue.created' | 'issue.regressed' | 'issue.resolved' | 'issue.escalating';

export interface IssueEventItem {
  groupId: string;
  event: IssueEventName;
  environment: string | null;
  /** issue.escalating: the evidence; its `since` names the escalation in the event's id (a re-publish sends nothing twice). */
  escalation?: NonNullable<IssueEventData['escalation']>;
  /** issue.resolved by a deploy going live (resolve-on-deploy.ts): that deploy, named in the event and in its id. */
  deployId?: string;
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
  const deployIds = [...new Set(items.flatMap((i) => deployIdOf(facts.get(i.groupId), i) ?? []))];
  const deploys = new Map((await issueEventsRepository.deploys(platform.db, projectId, deployIds)).map((d) => [d.id, d]));
  for (const item of items) {
    const f = facts.get(item.groupId);
    if (!f) continue;
    // 2. build, 3. publish
    const id =
      item.event === 'issue.created'
        ? `issue.created:${f.id}`
        : item.event === 'issue.regressed'
          ? `issue.regressed:${f.id}:${Number(f.regression_count)}`
          : item.event === 'issue.escalating' && item.escalation
            ? `issue.escalating:${f.id}:${Date.parse(item.escalation.since)}`
            : item.deployId
              ? `issue.resolved:${f.id}:${item.deployId}`
              : undefined;
    await publishProjectEvent(platform, { ...(id ? { id } : {}), projectId, event: item.event, data: issueEventData(f, item, deploys, publicBaseUrl) });
  }
}

/** The deploy an event names: the issue's first (created), its regression's (regressed), the one that resolved it, or its last seen (resolved, escalating). */
export function deployIdOf(f: IssueEventFacts | undefined, { event, deployId }: IssueEventItem): string | null {
  if (!f) return null;
  if (deployId) return deployId;
  return event === 'issue.created' ? f.first_deploy_id : event === 'issue.regressed' ? f.regressed_deploy_id : f.last_deploy_id;
}

/** An issue.* event's data (alert rules' issue.alert carries the same, processor/alerts/evaluate-rules.ts). */
export function issueEventData(
  f: IssueEventFacts,
  item: IssueEventItem,
  deploys: Map<string, { id: string; git_sha: string | null; branch: string | null }>,
  publicBaseUrl: string,
): IssueEventData {
  const deploy = deploys.get(deployIdOf(f, item) ?? '');
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
    deploy: deploy ? { id: deploy.id, gitSha: deploy.git_sha ?? null, branch: deploy.branch ?? null } : null,
    project: { id: f.project_id, slug: f.slug, name: f.project_name },
    url: `${publicBaseUrl.replace(/\/+$/, '')}/projects/${encodeURIComponent(f.slug)}/errors/${f.id}`,
    ...(item.escalation ? { escalation: item.escalation } : {}),
  };
}
