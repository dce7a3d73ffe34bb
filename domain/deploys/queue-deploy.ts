import type { Bus } from '../../platform/ports/bus.ts';
import type { RelationalStore } from '../../platform/ports/relational-store.ts';
import { newId } from '../../platform/tokens.ts';
import type { StoredDeploy } from '../../schemas/api/deploys.ts';
import * as deployRequests from '../../schemas/bus/deploy-requests.ts';
import type { DeployTrigger } from '../../schemas/deploys.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { DEPLOY_COLUMNS, toDeploy, type DeployRow } from './deploy-row.ts';

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
}

/**
 * Queue a deploy of `branch`: production when it is the project's default branch, preview otherwise.
 * - A production deploy while another is queued or building: 409 production_deploy_busy with
 *   activeDeployId (the partial unique index deploys_one_active_production decides, in any process).
 * - A preview branch whose deploy is still queued: that deploy is returned (`deduplicated`), not another.
 * The bus then wakes a builder; if it cannot take the message, the new deploy is removed again (so it
 * holds no production slot) and the caller gets 503.
 */
export async function queueDeploy(db: RelationalStore, bus: Bus, req: QueueRequest): Promise<{ deploy: StoredDeploy; deduplicated: boolean }> {
  const project = await db.query<{ default_branch: string }>('SELECT default_branch FROM projects WHERE id = $1', [req.projectId]);
  if (!project.rows[0]) throw new ServiceError('not_found', 'no such project');
  const environment = req.branch === project.rows[0].default_branch ? 'production' : 'preview';
  for (let attempt = 0; attempt < 3; attempt++) {
    const inserted = await db.query<DeployRow>(
      `INSERT INTO deploys (id, project_id, branch, environment, status, trigger_kind, trigger_id, created_at)
       VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7)
       ON CONFLICT DO NOTHING RETURNING ${DEPLOY_COLUMNS}`,
      [newId('dep_'), req.projectId, req.branch, environment, req.trigger, req.triggerId, new Date(req.now)],
    );
    const row = inserted.rows[0];
    if (row) {
      try {
        // Keyed by deploy, not project: the wake-ups of one project's deploys spread over partitions, so over builders.
        await bus.publish(deployRequests.TOPIC, [{ key: row.id, value: deployRequests.encode({ v: 1, deployId: row.id, projectId: row.project_id }) }]);
      } catch (err) {
        await db.query(`DELETE FROM deploys WHERE id = $1 AND status = 'queued'`, [row.id]);
        throw err;
      }
      return { deploy: toDeploy(row), deduplicated: false };
    }
    if (environment === 'production') {
      const active = await db.query<{ id: string }>(
        `SELECT id FROM deploys WHERE project_id = $1 AND environment = 'production' AND status IN ('queued', 'building')`,
        [req.projectId],
      );
      const id = active.rows[0]?.id;
      if (id)
        throw new ServiceError('production_deploy_busy', 'a production deploy of this project is already queued or building', { body: { activeDeployId: id } });
    } else {
      const queued = await db.query<DeployRow>(
        `SELECT ${DEPLOY_COLUMNS} FROM deploys WHERE project_id = $1 AND branch = $2 AND environment = 'preview' AND status = 'queued'`,
        [req.projectId, req.branch],
      );
      if (queued.rows[0]) return { deploy: toDeploy(queued.rows[0]), deduplicated: true };
    }
    // The conflicting deploy moved on between the insert and the read: try again.
  }
  throw new ServiceError('conflict', 'could not queue the deploy; try again');
}
