import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId } from '../../platform/tokens.ts';
import type { DeployTrigger } from '../../schemas/deploys.ts';
import { DEPLOY_COLUMNS, type DeployRow } from './deploy-row.ts';

/**
 * What queueing a deploy (queue-deploy.ts) reads and writes of projects and deploys. The partial unique indexes on
 * deploys (one active production deploy, one queued preview per branch) make an insert that would break the rule do
 * nothing, so the rule holds across processes.
 */
export const deployQueueRepository = {
  /** The project's default branch, or undefined when there is no such project. */
  async defaultBranch(db: Queryable, projectId: string): Promise<string | undefined> {
    const r = await db.query<{ default_branch: string }>('SELECT default_branch FROM projects WHERE id = $1', [projectId]);
    return r.rows[0]?.default_branch;
  },

  /** A new queued deploy, or undefined when an index refused it (a deploy it conflicts with is queued or building). */
  async insertQueued(
    db: Queryable,
    d: { id?: string; projectId: string; branch: string; environment: 'production' | 'preview'; trigger: DeployTrigger; triggerId: string | null; now: number },
  ): Promise<DeployRow | undefined> {
    const r = await db.query<DeployRow>(
      `INSERT INTO deploys (id, project_id, branch, environment, status, trigger_kind, trigger_id, created_at)
       VALUES ($1, $2, $3, $4, 'queued', $5, $6, $7)
       ON CONFLICT DO NOTHING RETURNING ${DEPLOY_COLUMNS}`,
      [d.id ?? newId('dep_'), d.projectId, d.branch, d.environment, d.trigger, d.triggerId, new Date(d.now)],
    );
    return r.rows[0];
  },

  /**
   * A prebuilt upload's deploy (builder/prebuilt-deploy.ts): building at once, leased to the API process that holds its
   * files, so the builders' lease sweep fails it (builder_lost) if that process dies before finishing it. Undefined
   * when the production index refused it.
   */
  async insertUploaded(
    db: Queryable,
    d: {
      projectId: string;
      branch: string;
      environment: 'production' | 'preview';
      gitSha: string | null;
      triggerId: string | null;
      owner: string;
      now: number;
      leaseUntil: number;
    },
  ): Promise<DeployRow | undefined> {
    const r = await db.query<DeployRow>(
      `INSERT INTO deploys (id, project_id, branch, environment, status, git_sha, trigger_kind, trigger_id, created_at, started_at, lease_owner, lease_until)
       VALUES ($1, $2, $3, $4, 'building', $5, 'upload', $6, $7, $7, $8, $9)
       ON CONFLICT DO NOTHING RETURNING ${DEPLOY_COLUMNS}`,
      [newId('dep_'), d.projectId, d.branch, d.environment, d.gitSha, d.triggerId, new Date(d.now), d.owner, new Date(d.leaseUntil)],
    );
    return r.rows[0];
  },

  /** Remove a deploy again while it is still queued (no builder was woken for it); false when a builder took it first. */
  async removeQueued(db: Queryable, deployId: string): Promise<boolean> {
    const r = await db.query(`DELETE FROM deploys WHERE id = $1 AND status = 'queued'`, [deployId]);
    return (r.rowCount ?? 0) > 0;
  },

  /** The id of the project's production deploy that is queued or building, if any. */
  async activeProduction(db: Queryable, projectId: string): Promise<string | undefined> {
    const r = await db.query<{ id: string }>(
      `SELECT id FROM deploys WHERE project_id = $1 AND environment = 'production' AND status IN ('queued', 'building')`,
      [projectId],
    );
    return r.rows[0]?.id;
  },

  /** The branch's preview deploy that is still queued, if any. */
  async queuedPreview(db: Queryable, projectId: string, branch: string): Promise<DeployRow | undefined> {
    const r = await db.query<DeployRow>(
      `SELECT ${DEPLOY_COLUMNS} FROM deploys WHERE project_id = $1 AND branch = $2 AND environment = 'preview' AND status = 'queued'`,
      [projectId, branch],
    );
    return r.rows[0];
  },
};
