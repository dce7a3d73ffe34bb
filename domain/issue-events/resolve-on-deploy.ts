import type { Platform } from '../../platform/platform.ts';
import { publishIssueEvents } from './issue-events.ts';
import { issueEventsRepository } from './issue-events-repository.ts';

/**
 * Resolve in next deploy, completed (issue 41). Called right after a production deploy goes live (the builder's finish,
 * builder/build-deploy.ts; the rollback route, api/deploys/deploys-routes.ts):
 *  1. the project's `resolving` issues whose mark (the deploy live when they were marked) is older than the deploy now
 *     live become `resolved`, resolved_deploy_id naming it (issue-events-repository.ts resolveByDeploy): a rollback
 *     to the marked deploy or an older one resolves nothing
 *  2. issue.resolved for each, naming that deploy; its id names the deploy too, so a second call sends nothing twice
 * A crash between the go-live and step 1 leaves them `resolving`: they still read as resolved (GET computes it from
 * the live deploy) and the next production deploy that goes live resolves them.
 */
export async function resolveOnDeploy(
  platform: Pick<Platform, 'bus' | 'clock' | 'db'>,
  publicBaseUrl: string,
  projectId: string,
  deployId: string,
): Promise<string[]> {
  // 1. resolve
  const resolved = await issueEventsRepository.resolveByDeploy(platform.db, projectId, deployId);
  // 2. announce
  await publishIssueEvents(
    platform,
    publicBaseUrl,
    projectId,
    resolved.map((groupId) => ({ groupId, event: 'issue.resolved' as const, environment: 'production', deployId })),
  );
  return resolved;
}
