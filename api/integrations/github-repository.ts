import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId, tokenHash } from '../../platform/tokens.ts';
import type { GithubConnection } from '../../schemas/api/integrations.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { type CommitState, type DeployGithub, type GithubSettings, githubSettingsOf } from '../../schemas/github-status.ts';

/**
 * GitHub repositories connected to projects (github_connections, migrations 0018 and 0028), and the connections under
 * way (github_connect_states). A connection is written only with the repository id and installation id GitHub
 * answered for the signed-in user; rows from before (a name only) are listed as needing a reconnect.
 */
interface Row {
  id: string;
  slug: string;
  repo_full_name: string;
  repo_id: string | number | null;
  installation_id: string | number | null;
  clone_url: string;
  created_at: Date | string;
}
const num = (v: string | number | null): number | null => (v === null ? null : Number(v));
const toConnection = (r: Row): GithubConnection => ({
  id: r.id,
  project: r.slug,
  repository: r.repo_full_name,
  repositoryId: num(r.repo_id),
  installationId: num(r.installation_id),
  status: r.repo_id !== null && r.installation_id !== null ? 'active' : 'needs_reconnecting',
  cloneUrl: r.clone_url,
  createdAt: new Date(r.created_at).toISOString(),
});

/** Pending connections one user may have at once; starting another drops the oldest. */
const PENDING_PER_USER = 10;

export const githubConnectionsRepository = {
  /** The project of `slug` when `userId` is a member of it. */
  async memberProject(db: Queryable, userId: string, slug: string): Promise<{ id: string; slug: string }> {
    const { rows } = await db.query<{ id: string; slug: string }>(
      'SELECT p.id, p.slug FROM projects p JOIN project_members m ON m.project_id = p.id WHERE p.slug = $1 AND m.user_id = $2',
      [slug, userId],
    );
    if (!rows[0]) throw new ServiceError('not_found', 'project not found');
    return rows[0];
  },

  /** Remember a connection under way, by the hash of its state; the user's expired and oldest past the cap go. */
  async startConnect(
    db: Queryable,
    input: { state: string; userId: string; projectId: string; repository: string; now: number; ttlMs: number },
  ): Promise<void> {
    const now = new Date(input.now);
    await db.query('DELETE FROM github_connect_states WHERE user_id = $1 AND expires_at <= $2', [input.userId, now]);
    await db.query(
      `DELETE FROM github_connect_states WHERE state_hash IN (
         SELECT state_hash FROM github_connect_states WHERE user_id = $1 ORDER BY created_at DESC, state_hash OFFSET ${PENDING_PER_USER - 1})`,
      [input.userId],
    );
    await db.query('INSERT INTO github_connect_states (state_hash, user_id, project_id, repository, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)', [
      tokenHash(input.state),
      input.userId,
      input.projectId,
      input.repository,
      now,
      new Date(input.now + input.ttlMs),
    ]);
  },

  /** The connection under way that `state` names, unexpired, without using it up. */
  async pendingConnect(
    db: Queryable,
    state: string,
    now: number,
  ): Promise<{ userId: string; projectId: string; slug: string; repository: string } | undefined> {
    const { rows } = await db.query<{ user_id: string; project_id: string; slug: string; repository: string }>(
      `SELECT s.user_id, s.project_id, p.slug, s.repository FROM github_connect_states s JOIN projects p ON p.id = s.project_id
        WHERE s.state_hash = $1 AND s.expires_at > $2`,
      [tokenHash(state), new Date(now)],
    );
    const r = rows[0];
    return r && { userId: r.user_id, projectId: r.project_id, slug: r.slug, repository: r.repository };
  },

  /** Use the state up; false when another request used it first. */
  async useConnect(db: Queryable, state: string): Promise<boolean> {
    const r = await db.query('DELETE FROM github_connect_states WHERE state_hash = $1 RETURNING state_hash', [tokenHash(state)]);
    return r.rows.length > 0;
  },

  /**
   * Bind a repository GitHub vouched for. A row of the same project from before (by name only, or an old id for the
   * same name) is replaced. Undefined when the project already has this repository id.
   */
  async connect(
    db: Queryable,
    input: { projectId: string; repositoryId: number; installationId: number; fullName: string; cloneUrl: string; userId: string; now: number },
  ): Promise<GithubConnection | undefined> {
    await db.query('DELETE FROM github_connections WHERE project_id = $1 AND lower(repo_full_name) = lower($2) AND (repo_id IS NULL OR repo_id <> $3)', [
      input.projectId,
      input.fullName,
      input.repositoryId,
    ]);
    const { rows } = await db.query<Row>(
      `WITH ins AS (
         INSERT INTO github_connections (id, project_id, repo_full_name, repo_id, installation_id, clone_url, created_by, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         ON CONFLICT (project_id, repo_id) DO NOTHING RETURNING *)
       SELECT ins.id, p.slug, ins.repo_full_name, ins.repo_id, ins.installation_id, ins.clone_url, ins.created_at FROM ins JOIN projects p ON p.id = ins.project_id`,
      [newId('ghc_'), input.projectId, input.fullName, input.repositoryId, input.installationId, input.cloneUrl, input.userId, new Date(input.now)],
    );
    return rows[0] && toConnection(rows[0]);
  },

  async listForUser(db: Queryable, userId: string): Promise<GithubConnection[]> {
    const { rows } = await db.query<Row>(
      `SELECT c.id, p.slug, c.repo_full_name, c.repo_id, c.installation_id, c.clone_url, c.created_at FROM github_connections c
         JOIN projects p ON p.id = c.project_id JOIN project_members m ON m.project_id = p.id
        WHERE m.user_id = $1 ORDER BY c.created_at, c.id`,
      [userId],
    );
    return rows.map(toConnection);
  },

  /**
   * What GitHub was told of a deploy (github_deploy_links, migration 0041): its commit, pull request (its page on
   * `webUrl`, by the repository's name as connected) and the commit status last set; null for a deploy GitHub did not queue.
   */
  async deployGithub(db: Queryable, projectId: string, deployId: string, webUrl: string): Promise<DeployGithub | null> {
    const { rows } = await db.query<{
      repo_id: string | number;
      head_sha: string;
      pr_number: number | null;
      reported_state: CommitState | null;
      reported_description: string | null;
      repo_full_name: string | null;
    }>(
      `SELECT l.repo_id, l.head_sha, l.pr_number, l.reported_state, l.reported_description,
              (SELECT c.repo_full_name FROM github_connections c WHERE c.project_id = l.project_id AND c.repo_id = l.repo_id LIMIT 1) AS repo_full_name
         FROM github_deploy_links l WHERE l.deploy_id = $1 AND l.project_id = $2`,
      [deployId, projectId],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      repositoryId: Number(r.repo_id),
      headSha: r.head_sha,
      pullRequest: r.pr_number,
      pullRequestUrl: r.pr_number !== null && r.repo_full_name ? `${webUrl}/${r.repo_full_name}/pull/${r.pr_number}` : null,
      commitStatus: r.reported_state,
      statusDescription: r.reported_description,
    };
  },

  /** The project's GitHub settings (projects.github_settings, migration 0041), with their defaults. */
  async settings(db: Queryable, projectId: string): Promise<GithubSettings> {
    const { rows } = await db.query<{ github_settings: unknown }>('SELECT github_settings FROM projects WHERE id = $1', [projectId]);
    const v = rows[0]?.github_settings;
    return githubSettingsOf(typeof v === 'string' ? JSON.parse(v) : v);
  },

  /** The fields given over the stored ones. */
  async updateSettings(db: Queryable, projectId: string, patch: Partial<GithubSettings>): Promise<GithubSettings> {
    await db.query('UPDATE projects SET github_settings = github_settings || $2::jsonb WHERE id = $1', [projectId, JSON.stringify(patch)]);
    return this.settings(db, projectId);
  },

  async disconnect(db: Queryable, userId: string, id: string): Promise<void> {
    const r = await db.query(
      `DELETE FROM github_connections c USING project_members m WHERE c.id = $1 AND m.project_id = c.project_id AND m.user_id = $2 RETURNING c.id`,
      [id, userId],
    );
    if (!r.rows.length) throw new ServiceError('not_found', 'no such connection');
  },
};
