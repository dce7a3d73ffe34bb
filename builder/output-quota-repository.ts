import type { Queryable } from '../platform/ports/relational-store.ts';

/**
 * What the disk quotas read and write of deploys (output-quota.ts): the outputs an account keeps, the lock that makes
 * charges to one account take turns, releasing outputs, and the charge itself (deploys.artifact_bytes); and the
 * outputs the artifact sweep (artifact-sweep.ts) takes from deploys past a project's newest.
 */
export interface KeptOutput {
  id: string;
  projectId: string;
  /** Apparent size; 0 for an output kept from before sizes were recorded and not measured yet. */
  bytes: number;
  /** Ready, not live anywhere, and under DATA_DIR/artifacts: a new output may release it to make room. */
  releasable: boolean;
}

/** Outputs kept: ready deploys whose output is on disk, and outputs charged to deploys still finishing. */
const KEPT = `((d.status = 'ready' AND d.artifact_dir IS NOT NULL) OR (d.status = 'building' AND d.artifact_bytes IS NOT NULL))`;
const NOT_LIVE = 'd.id NOT IN (SELECT live_deploy_id FROM projects WHERE live_deploy_id IS NOT NULL)';

export const outputQuotaRepository = {
  /** The outputs kept by every project of `projectId`'s owner, but `deployId`'s own, oldest first. */
  async kept(db: Queryable, projectId: string, deployId: string): Promise<KeptOutput[]> {
    const r = await db.query<{ id: string; project_id: string; bytes: string | number; releasable: boolean }>(
      `SELECT d.id, d.project_id, COALESCE(d.artifact_bytes, 0) AS bytes,
              (d.status = 'ready' AND starts_with(d.artifact_dir, 'artifacts/') AND ${NOT_LIVE}) AS releasable
         FROM deploys d JOIN projects p ON p.id = d.project_id
        WHERE p.owner_id = (SELECT owner_id FROM projects WHERE id = $1) AND d.id <> $2 AND ${KEPT}
        ORDER BY d.finished_at NULLS LAST, d.id`,
      [projectId, deployId],
    );
    return r.rows.map((row) => ({ id: row.id, projectId: row.project_id, bytes: Number(row.bytes), releasable: row.releasable }));
  },

  /** Inside a transaction: charges to the owner of `projectId` wait for this one's (a lock on the owner's row). */
  async lockAccount(db: Queryable, projectId: string): Promise<void> {
    await db.query('SELECT u.id FROM users u JOIN projects p ON p.owner_id = u.id WHERE p.id = $1 FOR UPDATE OF u', [projectId]);
  },

  /**
   * Forget these outputs (their files go after the commit: artifact-sweep.ts), skipping any that became live since;
   * answers the ones released with their directories.
   */
  async release(db: Queryable, ids: string[]): Promise<Array<{ id: string; projectId: string; artifactDir: string }>> {
    if (!ids.length) return [];
    const r = await db.query<{ id: string; project_id: string; artifact_dir: string }>(
      `UPDATE deploys d SET artifact_dir = NULL FROM (SELECT id, artifact_dir FROM deploys WHERE id = ANY($1::text[])) old
        WHERE d.id = old.id AND d.status = 'ready' AND d.artifact_dir IS NOT NULL AND ${NOT_LIVE}
        RETURNING d.id, d.project_id, old.artifact_dir`,
      [ids],
    );
    return r.rows.map((row) => ({ id: row.id, projectId: row.project_id, artifactDir: row.artifact_dir }));
  },

  /** Charge a building deploy's output; false when it is no longer building (canceled, its lease lost). */
  async charge(db: Queryable, deployId: string, bytes: number): Promise<boolean> {
    const r = await db.query(`UPDATE deploys SET artifact_bytes = $2 WHERE id = $1 AND status = 'building'`, [deployId, bytes]);
    return r.rowCount > 0;
  },

  /** What a building deploy's output is charged; undefined when it is no longer building or not charged. */
  async charged(db: Queryable, deployId: string): Promise<number | undefined> {
    const r = await db.query<{ bytes: string | number | null }>(`SELECT artifact_bytes AS bytes FROM deploys WHERE id = $1 AND status = 'building'`, [
      deployId,
    ]);
    const bytes = r.rows[0]?.bytes;
    return bytes === null || bytes === undefined ? undefined : Number(bytes);
  },

  /** Ready outputs under DATA_DIR/artifacts kept from before sizes were recorded. */
  async unmeasured(db: Queryable, batch: number): Promise<Array<{ id: string; artifactDir: string }>> {
    const r = await db.query<{ id: string; artifact_dir: string }>(
      `SELECT id, artifact_dir FROM deploys WHERE status = 'ready' AND starts_with(artifact_dir, 'artifacts/') AND artifact_bytes IS NULL ORDER BY id LIMIT $1`,
      [batch],
    );
    return r.rows.map((row) => ({ id: row.id, artifactDir: row.artifact_dir }));
  },

  async measured(db: Queryable, deployId: string, bytes: number): Promise<void> {
    await db.query('UPDATE deploys SET artifact_bytes = $2 WHERE id = $1 AND artifact_bytes IS NULL', [deployId, bytes]);
  },

  /**
   * Forget the outputs of up to `batch` ready deploys that are past their project's newest `keep` (by finish time), are
   * stored under `under` (an absolute directory) or as `artifacts/...`, and are live nowhere at the moment of the
   * statement. Answers each deploy with the directory it forgot, for the caller to delete.
   */
  async forgetOldOutputs(db: Queryable, keep: number, under: string, batch: number): Promise<Array<{ id: string; artifactDir: string }>> {
    const r = await db.query<{ id: string; artifact_dir: string }>(
      `WITH doomed AS (
         SELECT id, artifact_dir FROM (
           SELECT d.id, d.artifact_dir, row_number() OVER (PARTITION BY d.project_id ORDER BY d.finished_at DESC NULLS LAST, d.id DESC) AS rn
             FROM deploys d
            WHERE d.status = 'ready' AND d.artifact_dir IS NOT NULL AND (starts_with(d.artifact_dir, 'artifacts/') OR starts_with(d.artifact_dir, $2))
         ) ranked
         WHERE rn > $1
         LIMIT $3)
       UPDATE deploys SET artifact_dir = NULL FROM doomed
        WHERE deploys.id = doomed.id AND deploys.artifact_dir IS NOT NULL
          AND deploys.id NOT IN (SELECT live_deploy_id FROM projects WHERE live_deploy_id IS NOT NULL)
        RETURNING deploys.id, doomed.artifact_dir`,
      [keep, under, batch],
    );
    return r.rows.map((row) => ({ id: row.id, artifactDir: row.artifact_dir }));
  },
};
