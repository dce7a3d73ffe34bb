import type { Queryable } from '../../platform/ports/relational-store.ts';

/**
 * Which production deploy a project's production hosts serve (projects.live_deploy_id): the rollback rule, shared by
 * the rollback route (api/deploys/deploys-repository.ts rollbackTo) and guarded rollout's automatic rollback
 * (builder/guarded-rollout/). A deploy is made live only while its output is still kept (builder/artifact-sweep.ts keeps
 * the live one and the newest few).
 */
export const liveDeployRepository = {
  /**
   * Make `deployId` the live deploy; with `whileLive`, only while that deploy still is the live one (a newer deploy or
   * a manual rollback meanwhile wins). Answers whether it moved.
   */
  async makeLive(db: Queryable, projectId: string, deployId: string, whileLive?: string): Promise<boolean> {
    const moved = await db.query(
      `UPDATE projects SET live_deploy_id = $2 WHERE id = $1 AND ($3::text IS NULL OR live_deploy_id = $3)
          AND EXISTS (SELECT 1 FROM deploys WHERE id = $2 AND project_id = $1 AND artifact_dir IS NOT NULL)`,
      [projectId, deployId, whileLive ?? null],
    );
    return (moved.rowCount ?? 0) > 0;
  },
};
