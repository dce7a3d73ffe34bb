import type { Bus } from '../../platform/ports/bus.ts';
import type { RelationalStore } from '../../platform/ports/relational-store.ts';
import type { StoredDeploy } from '../../schemas/api/deploys.ts';
import * as deployRequests from '../../schemas/bus/deploy-requests.ts';
import type { DeployTrigger } from '../../schemas/deploys.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { newId } from '../../platform/tokens.ts';
import { deployQueueRepository } from './deploy-queue-repository.ts';
import { toDeploy } from './deploy-row.ts';

/**
 * Queueing a deploy (spec §3.3), one rule for every way a deploy is asked for: the API, a deploy hook, a rollback's
 * rebuild, and a push to a connected repository (processor/inbound/). Enforced by Postgres indexes, so it holds across
 * processes.
 */
export interface QueueRequest {
  projectId: string;
  branch: string;
  trigger: DeployTrigger;
  /** The hook's id, or the user's for an API call. */
  triggerId: string | null;
  now: number;
  /**
   * Done with a new deploy's id before it is inserted, so before any builder can claim it (the build cache's "skip"
   * mark, `?cache=false`), and undone when the insert is refused. Also done for the queued preview deploy a request
   * is deduplicated into.
   */
  prepare?: { before(deployId: string): Promise<void>; undo(deployId: string): Promise<void> };
}

/**
 * Queue a deploy of `branch`: production when it is the project's default branch, preview otherwise.
 * - A production deploy while another is queued or building: 409 production_deploy_busy with
 *   activeDeployId (the partial unique index deploys_one_active_production decides, in any process).
 * - A preview branch whose deploy is still queued: that deploy is returned (`deduplicated`), not another.
 * The bus then wakes a builder; if it cannot take the message, the new deploy is removed again (so it
 * holds no production slot) and the caller gets 503, unless a builder claimed it meanwhile: then it is queued as asked.
 */
export async function queueDeploy(db: RelationalStore, bus: Bus, req: QueueRequest): Promise<{ deploy: StoredDeploy; deduplicated: boolean }> {
  const defaultBranch = await deployQueueRepository.defaultBranch(db, req.projectId);
  if (defaultBranch === undefined) throw new ServiceError('not_found', 'no such project');
  const environment = req.branch === defaultBranch ? 'production' : 'preview';
  for (let attempt = 0; attempt < 3; attempt++) {
    const id = newId('dep_');
    await req.prepare?.before(id);
    const row = await deployQueueRepository.insertQueued(db, { ...req, id, environment });
    if (!row) await req.prepare?.undo(id);
    if (row) {
      try {
        // Keyed by deploy, not project: the wake-ups of one project's deploys spread over partitions, so over builders.
        await bus.publish(deployRequests.TOPIC, [{ key: row.id, value: deployRequests.encode({ v: 1, deployId: row.id, projectId: row.project_id }) }]);
      } catch (err) {
        // A builder that claimed it meanwhile (one that finished a build takes any queued deploy) needs no wake-up: it
        // is underway, and answering 503 would tell the caller it was not.
        if (!(await deployQueueRepository.removeQueued(db, row.id))) return { deploy: toDeploy(row), deduplicated: false };
        await req.prepare?.undo(row.id);
        throw err;
      }
      return { deploy: toDeploy(row), deduplicated: false };
    }
    if (environment === 'production') {
      const id = await deployQueueRepository.activeProduction(db, req.projectId);
      if (id)
        throw new ServiceError('production_deploy_busy', 'a production deploy of this project is already queued or building', { body: { activeDeployId: id } });
    } else {
      const queued = await deployQueueRepository.queuedPreview(db, req.projectId, req.branch);
      if (queued) {
        await req.prepare?.before(queued.id);
        return { deploy: toDeploy(queued), deduplicated: true };
      }
    }
    // The conflicting deploy moved on between the insert and the read: try again.
  }
  throw new ServiceError('conflict', 'could not queue the deploy; try again');
}
