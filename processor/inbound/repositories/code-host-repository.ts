import type { Queryable } from '../../../platform/ports/relational-store.ts';

/**
 * The processor's side of the code host: the projects connected to a repository (github_connections, migrations 0018
 * and 0028), and the pushes acted on (code_host_pushes, migration 0028), by repository id, ref and head commit: GitHub
 * signs the body and not X-GitHub-Delivery, so the same body under a new delivery id is the same push, and queues
 * nothing again.
 */
export const codeHostRepository = {
  /**
   * The projects a repository is connected to through this installation, by GitHub's ids (never the name: a deleted
   * repository's name can be taken by anyone), with each one's default branch.
   */
  async projectsOf(db: Queryable, repositoryId: number, installationId: number): Promise<Array<{ projectId: string; defaultBranch: string }>> {
    const r = await db.query<{ project_id: string; default_branch: string }>(
      `SELECT c.project_id, p.default_branch FROM github_connections c JOIN projects p ON p.id = c.project_id
        WHERE c.installation_id = $1 AND c.repo_id = $2 ORDER BY c.project_id`,
      [installationId, repositoryId],
    );
    return r.rows.map((x) => ({ projectId: x.project_id, defaultBranch: x.default_branch }));
  },
  /** Unbind an installation's connections (every one, or those of the repositories named); how many went. */
  async unbind(db: Queryable, installationId: number, repositoryIds: number[] | 'all'): Promise<number> {
    const r =
      repositoryIds === 'all'
        ? await db.query('DELETE FROM github_connections WHERE installation_id = $1 RETURNING id', [installationId])
        : await db.query('DELETE FROM github_connections WHERE installation_id = $1 AND repo_id = ANY($2::bigint[]) RETURNING id', [
            installationId,
            repositoryIds,
          ]);
    return r.rows.length;
  },

  /** True when this delivery is the first to carry the push (or is that first delivery again, redelivered by the bus). */
  async claimPush(db: Queryable, push: { repositoryId: number; ref: string; sha: string; deliveryId: string; now: number }): Promise<boolean> {
    const r = await db.query<{ delivery_id: string }>(
      `WITH ins AS (
         INSERT INTO code_host_pushes (repo_id, ref, head_sha, delivery_id, received_at) VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (repo_id, ref, head_sha) DO NOTHING RETURNING delivery_id)
       SELECT delivery_id FROM ins UNION ALL
       SELECT delivery_id FROM code_host_pushes WHERE repo_id = $1 AND ref = $2 AND head_sha = $3`,
      [push.repositoryId, push.ref, push.sha, push.deliveryId, new Date(push.now)],
    );
    return r.rows.some((x) => x.delivery_id === push.deliveryId);
  },
  /** Pushes remembered since before `before`, at most `limit`. */
  async prunePushes(db: Queryable, before: Date, limit: number): Promise<number> {
    const r = await db.query(
      `DELETE FROM code_host_pushes WHERE (repo_id, ref, head_sha) IN (SELECT repo_id, ref, head_sha FROM code_host_pushes WHERE received_at < $1 LIMIT ${Math.trunc(limit)})`,
      [before],
    );
    return r.rowCount ?? 0;
  },
};
