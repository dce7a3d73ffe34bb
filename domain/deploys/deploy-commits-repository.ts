import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { DeployCommit } from './suspect-commits.ts';

/** A deploy's commits (issue 41, migration 0036): written once by the builder, read by the API. */
export const deployCommitsRepository = {
  /** The git sha of the project's newest ready production deploy created before this one, if any. */
  async previousProductionSha(db: Queryable, projectId: string, deployId: string): Promise<string | null> {
    const r = await db.query<{ git_sha: string | null }>(
      `SELECT p.git_sha FROM deploys d JOIN deploys p ON p.project_id = d.project_id
        WHERE d.id = $2 AND d.project_id = $1 AND p.id <> d.id AND p.environment = 'production' AND p.status = 'ready' AND p.git_sha IS NOT NULL
          AND (p.created_at, p.id) < (d.created_at, d.id)
        ORDER BY p.created_at DESC, p.id DESC LIMIT 1`,
      [projectId, deployId],
    );
    return r.rows[0]?.git_sha ?? null;
  },

  async save(db: Queryable, deployId: string, commits: DeployCommit[]): Promise<void> {
    await db.query('DELETE FROM deploy_commits WHERE deploy_id = $1', [deployId]);
    if (!commits.length) return;
    await db.query(
      `INSERT INTO deploy_commits (deploy_id, position, sha, author, committed_at, subject, files, files_cut)
       SELECT $1, c.position, c.sha, c.author, c.committed_at, c.subject, c.files, c.files_cut
         FROM jsonb_to_recordset($2::jsonb) AS c(position int, sha text, author text, committed_at timestamptz, subject text, files jsonb, files_cut boolean)`,
      [
        deployId,
        JSON.stringify(
          commits.map((c, i) => ({
            position: i,
            sha: c.sha,
            author: c.author,
            committed_at: c.committedAt,
            subject: c.subject,
            files: c.files,
            files_cut: c.filesCut,
          })),
        ),
      ],
    );
  },

  /** Newest first, as the builder read them; an empty list for a deploy with none recorded. */
  async list(db: Queryable, deployId: string): Promise<DeployCommit[]> {
    const r = await db.query<{ sha: string; author: string; committed_at: Date | string; subject: string; files: string[]; files_cut: boolean }>(
      'SELECT sha, author, committed_at, subject, files, files_cut FROM deploy_commits WHERE deploy_id = $1 ORDER BY position',
      [deployId],
    );
    return r.rows.map((c) => ({
      sha: c.sha,
      author: c.author,
      committedAt: new Date(c.committed_at).toISOString(),
      subject: c.subject,
      files: c.files,
      filesCut: c.files_cut,
    }));
  },
};
