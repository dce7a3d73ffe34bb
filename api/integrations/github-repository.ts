import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId } from '../../platform/tokens.ts';
import type { GithubConnection } from '../../schemas/api/integrations.ts';
import { ServiceError } from '../../schemas/error-codes.ts';

/** GitHub repositories connected to projects (github_connections, migration 0018). */
interface Row {
  id: string;
  slug: string;
  repo_full_name: string;
  clone_url: string;
  created_at: Date | string;
}
const toConnection = (r: Row): GithubConnection => ({
  id: r.id,
  project: r.slug,
  repository: r.repo_full_name,
  cloneUrl: r.clone_url,
  createdAt: new Date(r.created_at).toISOString(),
});

export const githubConnections = {
  /** The project of `slug` when `userId` is a member of it. */
  async memberProject(db: Queryable, userId: string, slug: string): Promise<{ id: string; slug: string }> {
    const { rows } = await db.query<{ id: string; slug: string }>(
      'SELECT p.id, p.slug FROM projects p JOIN project_members m ON m.project_id = p.id WHERE p.slug = $1 AND m.user_id = $2',
      [slug, userId],
    );
    if (!rows[0]) throw new ServiceError('not_found', 'project not found');
    return rows[0];
  },

  async connect(db: Queryable, input: { projectId: string; repository: string; cloneUrl: string; userId: string; now: number }): Promise<GithubConnection> {
    const { rows } = await db.query<Row>(
      `WITH ins AS (
         INSERT INTO github_connections (id, project_id, repo_full_name, clone_url, created_by, created_at) VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (project_id, repo_full_name) DO NOTHING RETURNING *)
       SELECT ins.id, p.slug, ins.repo_full_name, ins.clone_url, ins.created_at FROM ins JOIN projects p ON p.id = ins.project_id`,
      [newId('ghc_'), input.projectId, input.repository, input.cloneUrl, input.userId, new Date(input.now)],
    );
    if (!rows[0]) throw new ServiceError('conflict', `${input.repository} is already connected to this project`);
    return toConnection(rows[0]);
  },

  async listForUser(db: Queryable, userId: string): Promise<GithubConnection[]> {
    const { rows } = await db.query<Row>(
      `SELECT c.id, p.slug, c.repo_full_name, c.clone_url, c.created_at FROM github_connections c
         JOIN projects p ON p.id = c.project_id JOIN project_members m ON m.project_id = p.id
        WHERE m.user_id = $1 ORDER BY c.created_at, c.id`,
      [userId],
    );
    return rows.map(toConnection);
  },

  async disconnect(db: Queryable, userId: string, id: string): Promise<void> {
    const r = await db.query(
      `DELETE FROM github_connections c USING project_members m WHERE c.id = $1 AND m.project_id = c.project_id AND m.user_id = $2 RETURNING c.id`,
      [id, userId],
    );
    if (!r.rows.length) throw new ServiceError('not_found', 'no such connection');
  },
};
