import type { Queryable } from '../platform/ports/relational-store.ts';
import type { DeployFailureReason } from '../schemas/deploys.ts';

/**
 * What the builder reads and writes of deploys: claiming a queued one under a lease, renewing leases,
 * finishing, failing the ones whose builder died, and the project's build source.
 */
export interface ClaimedDeploy {
  id: string;
  projectId: string;
  projectSlug: string;
  branch: string;
  environment: 'production' | 'preview';
  createdAt: number;
}

export interface BuildSource {
  repoUrl: string;
  buildCommand: string;
  outputDir: string;
  /** The spa setting (issue 42): hosting/build/compile-site.ts writes the `/* /index.html 200` fallback. */
  spa: boolean;
}

export interface FinishedDeploy {
  id: string;
  projectId: string;
  branch: string;
  environment: 'production' | 'preview';
  gitSha: string | null;
  startedAt: number | null;
  finishedAt: number;
  failureReason: string | null;
}

export const buildsRepository = {
  /**
   * Take a queued deploy, leased to `owner` until `leaseUntil`: the one named (`deployId`), or else the oldest
   * queued before `queuedBefore` (any project); undefined when there is none to take.
   */
  async claim(
    db: Queryable,
    owner: string,
    now: number,
    leaseUntil: number,
    which: { deployId: string } | { queuedBefore: number },
  ): Promise<ClaimedDeploy | undefined> {
    const r = await db.query<{
      id: string;
      project_id: string;
      slug: string;
      branch: string;
      environment: 'production' | 'preview';
      created_at: Date | string;
    }>(
      `UPDATE deploys d SET status = 'building', started_at = $2, lease_owner = $1, lease_until = $3
         FROM projects p
        WHERE d.id = (SELECT id FROM deploys WHERE status = 'queued' AND ($4::text IS NULL OR id = $4) AND ($5::timestamptz IS NULL OR created_at < $5)
                       ORDER BY created_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
          AND p.id = d.project_id
        RETURNING d.id, d.project_id, p.slug, d.branch, d.environment, d.created_at`,
      [owner, new Date(now), new Date(leaseUntil), 'deployId' in which ? which.deployId : null, 'queuedBefore' in which ? new Date(which.queuedBefore) : null],
    );
    const d = r.rows[0];
    return (
      d && { id: d.id, projectId: d.project_id, projectSlug: d.slug, branch: d.branch, environment: d.environment, createdAt: new Date(d.created_at).getTime() }
    );
  },

  /**
   * The project's newest GitHub App connection cloned from `repoUrl` (github-checkout.ts), by GitHub's ids; undefined
   * when the URL is no connection of this project's.
   */
  async githubConnection(db: Queryable, projectId: string, repoUrl: string): Promise<{ repoId: number; installationId: number } | undefined> {
    const r = await db.query<{ repo_id: string | number; installation_id: string | number }>(
      `SELECT repo_id, installation_id FROM github_connections
        WHERE project_id = $1 AND clone_url = $2 AND repo_id IS NOT NULL AND installation_id IS NOT NULL ORDER BY created_at DESC LIMIT 1`,
      [projectId, repoUrl],
    );
    const c = r.rows[0];
    return c && { repoId: Number(c.repo_id), installationId: Number(c.installation_id) };
  },

  async source(db: Queryable, projectId: string): Promise<BuildSource | undefined> {
    // Its variables are build-variables.ts's (per environment and branch).
    const s = await db.query<{ repo_url: string; build_command: string; output_dir: string; spa: boolean }>(
      'SELECT repo_url, build_command, output_dir, spa FROM project_build_settings WHERE project_id = $1',
      [projectId],
    );
    const row = s.rows[0];
    return row && { repoUrl: row.repo_url, buildCommand: row.build_command, outputDir: row.output_dir, spa: row.spa === true };
  },

  async recordSha(db: Queryable, deployId: string, sha: string): Promise<void> {
    await db.query('UPDATE deploys SET git_sha = $2 WHERE id = $1', [deployId, sha]);
  },

  /** Extend the leases of these deploys (still building and still ours). */
  async renew(db: Queryable, owner: string, ids: string[], leaseUntil: number): Promise<void> {
    if (!ids.length) return;
    await db.query(`UPDATE deploys SET lease_until = $3 WHERE id = ANY($2::text[]) AND lease_owner = $1 AND status = 'building'`, [
      owner,
      ids,
      new Date(leaseUntil),
    ]);
  },

  /** Which of these building deploys were asked to cancel. */
  async cancelRequested(db: Queryable, ids: string[]): Promise<string[]> {
    if (!ids.length) return [];
    const r = await db.query<{ id: string }>(`SELECT id FROM deploys WHERE id = ANY($1::text[]) AND status = 'building' AND cancel_requested`, [ids]);
    return r.rows.map((x) => x.id);
  },

  /**
   * Finish a build this owner holds; undefined when it no longer holds it (its lease expired meanwhile). A ready
   * build's `artifactDir` is stored relative to DATA_DIR (`artifacts/<deployId>`): a data directory moved or restored
   * elsewhere still serves its sites.
   */
  async finish(
    db: Queryable,
    owner: string,
    deployId: string,
    outcome: { status: 'ready'; artifactDir: string } | { status: 'failed'; reason: DeployFailureReason; exitCode?: number } | { status: 'canceled' },
    now: number,
    logLines: number,
  ): Promise<FinishedDeploy | undefined> {
    // One statement: a ready production deploy goes live on the project's production hosts with it, and its live_at
    // (guarded rollout's window starts there) is its finished_at. Apart, a guarded-rollout sweep between them saw a
    // ready deploy that was not live yet and called it superseded.
    const r = await db.query<FinishedRow>(
      `WITH f AS (
         UPDATE deploys SET status = $3, finished_at = $4, failure_reason = $5, exit_code = $6, artifact_dir = $7, log_lines = $8,
                lease_owner = NULL, lease_until = NULL,
                live_at = CASE WHEN $3 = 'ready' AND environment = 'production' THEN $4::timestamptz ELSE live_at END
          WHERE id = $1 AND lease_owner = $2 AND status = 'building'
          RETURNING ${FINISHED_COLUMNS}
       ), live AS (
         UPDATE projects p SET live_deploy_id = f.id FROM f WHERE p.id = f.project_id AND $3 = 'ready' AND f.environment = 'production'
       )
       SELECT * FROM f`,
      [
        deployId,
        owner,
        outcome.status,
        new Date(now),
        outcome.status === 'failed' ? outcome.reason : null,
        outcome.status === 'failed' ? (outcome.exitCode ?? null) : null,
        outcome.status === 'ready' ? outcome.artifactDir : null,
        logLines,
      ],
    );
    return r.rows[0] && toFinished(r.rows[0]);
  },

  /** Fail every building deploy whose lease ran out (its builder died): builder_lost, which frees the production slot. */
  async failExpired(db: Queryable, now: number): Promise<FinishedDeploy[]> {
    const r = await db.query<FinishedRow>(
      `UPDATE deploys SET status = 'failed', failure_reason = 'builder_lost', finished_at = $1, lease_owner = NULL, lease_until = NULL
        WHERE id IN (SELECT id FROM deploys WHERE status = 'building' AND lease_until < $1 FOR UPDATE SKIP LOCKED)
        RETURNING ${FINISHED_COLUMNS}`,
      [new Date(now)],
    );
    return r.rows.map(toFinished);
  },
};

interface FinishedRow {
  id: string;
  project_id: string;
  branch: string;
  environment: 'production' | 'preview';
  git_sha: string | null;
  started_at: Date | string | null;
  finished_at: Date | string;
  failure_reason: string | null;
}
const FINISHED_COLUMNS = 'id, project_id, branch, environment, git_sha, started_at, finished_at, failure_reason';
const toFinished = (r: FinishedRow): FinishedDeploy => ({
  id: r.id,
  projectId: r.project_id,
  branch: r.branch,
  environment: r.environment,
  gitSha: r.git_sha,
  startedAt: r.started_at === null ? null : new Date(r.started_at).getTime(),
  finishedAt: new Date(r.finished_at).getTime(),
  failureReason: r.failure_reason,
});
