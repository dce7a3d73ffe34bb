import type { Queryable } from '../../../platform/ports/relational-store.ts';
import type { InboundProvider } from '../../../schemas/inbound.ts';

/** The processor's side of the inbound deliveries ledger (inbound_deliveries, migration 0018) and the code-host connections. */
export const inboundLedger = {
  /**
   * Mark a delivery acted on, with what came of it (`deploys: queued`, `skip_requested`, ...). False when an earlier
   * delivery of the same message marked it first: this one is a duplicate, and is not counted.
   */
  async markProcessed(db: Queryable, provider: InboundProvider, deliveryId: string, outcome: string, now: number): Promise<boolean> {
    const r = await db.query(
      'UPDATE inbound_deliveries SET processed_at = $3, outcome = $4 WHERE provider = $1 AND delivery_id = $2 AND processed_at IS NULL RETURNING delivery_id',
      [provider, deliveryId, new Date(now), outcome],
    );
    return r.rows.length > 0;
  },
  /** Ledger rows older than `before` (providers redeliver for 3 days; kept 7), at most `limit`. */
  async pruneOlderThan(db: Queryable, before: Date, limit: number): Promise<number> {
    const r = await db.query(
      `DELETE FROM inbound_deliveries WHERE (provider, delivery_id) IN (SELECT provider, delivery_id FROM inbound_deliveries WHERE received_at < $1 LIMIT ${Math.trunc(limit)})`,
      [before],
    );
    return r.rowCount ?? 0;
  },
};

export const codeHostConnections = {
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
};

/**
 * Pushes acted on (code_host_pushes, migration 0028), by repository id, ref and head commit: GitHub signs the body and
 * not X-GitHub-Delivery, so the same body under a new delivery id is the same push, and queues nothing again.
 */
export const codeHostPushes = {
  /** True when this delivery is the first to carry the push (or is that first delivery again, redelivered by the bus). */
  async claim(db: Queryable, push: { repositoryId: number; ref: string; sha: string; deliveryId: string; now: number }): Promise<boolean> {
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
  async pruneOlderThan(db: Queryable, before: Date, limit: number): Promise<number> {
    const r = await db.query(
      `DELETE FROM code_host_pushes WHERE (repo_id, ref, head_sha) IN (SELECT repo_id, ref, head_sha FROM code_host_pushes WHERE received_at < $1 LIMIT ${Math.trunc(limit)})`,
      [before],
    );
    return r.rowCount ?? 0;
  },
};
