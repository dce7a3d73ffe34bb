import type { AnalyticalStore } from '../../../platform/ports/analytical-store.ts';
import type { Queryable } from '../../../platform/ports/relational-store.ts';
import type { CommitState } from '../../../schemas/github-status.ts';

/**
 * What GitHub is told about deploys (github_deploy_links, migration 0041): the link a push or pull request makes
 * between a deploy and its commit, the sweep's leased take of the links due, what was told, and the numbers a
 * comment shows (issues first seen in the deploy and never in production, its crash-free sessions).
 */
export interface DueLink {
  deployId: string;
  projectId: string;
  slug: string;
  repoId: number;
  installationId: number;
  headSha: string;
  prNumber: number | null;
  prLookedUp: boolean;
  reportedState: CommitState | null;
  reportedDescription: string | null;
  commentId: number | null;
  commentHash: string | null;
  attempts: number;
  /** The deploy as it is now. */
  status: string;
  environment: 'production' | 'preview';
  branch: string;
  failureReason: string | null;
  finishedAt: number | null;
  /** projects.github_settings as stored. */
  settings: unknown;
  /** A newer deploy of the same project carries the same pull request: it keeps the comment, not this one. */
  superseded: boolean;
}

/** What one pass told GitHub, written back with the next look (null: nothing more to tell). */
export interface Told {
  reportedState?: CommitState;
  reportedDescription?: string;
  statusId?: number;
  prNumber?: number | null;
  prLookedUp?: boolean;
  commentId?: number;
  commentHash?: string;
  attempts: number;
  lastError: string | null;
  nextAttemptAt: number | null;
}

export interface PreviewIssue {
  id: string;
  name: string;
  message: string;
}

const num = (v: string | number | null): number | null => (v === null ? null : Number(v));
const chTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');

export const githubStatusRepository = {
  /**
   * Link a deploy queued by a push or pull request to its commit, due now. A preview's queued deploy taken again by a
   * later push of its branch (queue-deploy's deduplication) moves to the newer commit; a pull request number is kept.
   */
  async link(
    db: Queryable,
    l: { deployId: string; projectId: string; repoId: number; installationId: number; headSha: string; prNumber: number | null; now: number },
  ): Promise<void> {
    await db.query(
      `INSERT INTO github_deploy_links (deploy_id, project_id, repo_id, installation_id, head_sha, pr_number, next_attempt_at, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $7)
       ON CONFLICT (deploy_id) DO UPDATE SET head_sha = EXCLUDED.head_sha, pr_number = COALESCE(EXCLUDED.pr_number, github_deploy_links.pr_number),
         reported_state = CASE WHEN github_deploy_links.head_sha = EXCLUDED.head_sha THEN github_deploy_links.reported_state END,
         reported_description = CASE WHEN github_deploy_links.head_sha = EXCLUDED.head_sha THEN github_deploy_links.reported_description END,
         next_attempt_at = EXCLUDED.next_attempt_at`,
      [l.deployId, l.projectId, l.repoId, l.installationId, l.headSha, l.prNumber, new Date(l.now)],
    );
  },

  /**
   * A pull request opened (or reopened) on a commit already deployed by its push: the links of that commit learn the
   * number and are due now, so the comment is posted. How many learned it.
   */
  async notePullRequest(db: Queryable, repoId: number, headSha: string, prNumber: number, now: number): Promise<number> {
    const r = await db.query(
      `UPDATE github_deploy_links SET pr_number = $3, next_attempt_at = $4, attempts = 0
        WHERE repo_id = $1 AND head_sha = $2 AND pr_number IS DISTINCT FROM $3 RETURNING deploy_id`,
      [repoId, headSha, prNumber, new Date(now)],
    );
    return r.rows.length;
  },

  /** Take up to `limit` links due at `now`, leased until `leaseUntil` (a crashed sweep's lease runs out), with their deploy. */
  async takeDue(db: Queryable, now: number, leaseUntil: number, limit: number): Promise<DueLink[]> {
    const r = await db.query<{
      deploy_id: string;
      project_id: string;
      slug: string;
      repo_id: string | number;
      installation_id: string | number;
      head_sha: string;
      pr_number: number | null;
      pr_looked_up: boolean;
      reported_state: CommitState | null;
      reported_description: string | null;
      comment_id: string | number | null;
      comment_hash: string | null;
      attempts: number;
      status: string;
      environment: 'production' | 'preview';
      branch: string;
      failure_reason: string | null;
      finished_at: Date | string | null;
      github_settings: unknown;
      superseded: boolean;
    }>(
      `WITH taken AS (
         UPDATE github_deploy_links l SET lease_until = $2
          WHERE l.deploy_id IN (
            SELECT deploy_id FROM github_deploy_links
             WHERE next_attempt_at IS NOT NULL AND next_attempt_at <= $1 AND (lease_until IS NULL OR lease_until <= $1)
             ORDER BY next_attempt_at, deploy_id LIMIT ${Math.trunc(limit)} FOR UPDATE SKIP LOCKED)
         RETURNING l.*)
       SELECT t.deploy_id, t.project_id, p.slug, t.repo_id, t.installation_id, t.head_sha, t.pr_number, t.pr_looked_up, t.reported_state,
              t.reported_description, t.comment_id, t.comment_hash, t.attempts, d.status, d.environment, d.branch, d.failure_reason,
              d.finished_at, p.github_settings,
              t.pr_number IS NOT NULL AND EXISTS (
                SELECT 1 FROM github_deploy_links n WHERE n.project_id = t.project_id AND n.repo_id = t.repo_id AND n.pr_number = t.pr_number
                   AND (n.created_at, n.deploy_id) > (t.created_at, t.deploy_id)) AS superseded
         FROM taken t JOIN deploys d ON d.id = t.deploy_id JOIN projects p ON p.id = t.project_id`,
      [new Date(now), new Date(leaseUntil)],
    );
    return r.rows.map((x) => ({
      deployId: x.deploy_id,
      projectId: x.project_id,
      slug: x.slug,
      repoId: Number(x.repo_id),
      installationId: Number(x.installation_id),
      headSha: x.head_sha,
      prNumber: x.pr_number,
      prLookedUp: x.pr_looked_up,
      reportedState: x.reported_state,
      reportedDescription: x.reported_description,
      commentId: num(x.comment_id),
      commentHash: x.comment_hash,
      attempts: x.attempts,
      status: x.status,
      environment: x.environment,
      branch: x.branch,
      failureReason: x.failure_reason,
      finishedAt: x.finished_at === null ? null : new Date(x.finished_at).getTime(),
      settings: typeof x.github_settings === 'string' ? JSON.parse(x.github_settings) : x.github_settings,
      superseded: x.superseded === true,
    }));
  },

  /** What a pass told GitHub, and when to look next; the lease is let go. */
  async record(db: Queryable, deployId: string, t: Told): Promise<void> {
    await db.query(
      `UPDATE github_deploy_links SET
         reported_state = COALESCE($2, reported_state), reported_description = COALESCE($3, reported_description),
         status_id = COALESCE($4, status_id), pr_number = CASE WHEN $5::boolean THEN $6::integer ELSE pr_number END,
         pr_looked_up = pr_looked_up OR $7, comment_id = COALESCE($8, comment_id), comment_hash = COALESCE($9, comment_hash),
         attempts = $10, last_error = $11, next_attempt_at = $12, lease_until = NULL
        WHERE deploy_id = $1`,
      [
        deployId,
        t.reportedState ?? null,
        t.reportedDescription ?? null,
        t.statusId ?? null,
        t.prNumber !== undefined,
        t.prNumber ?? null,
        t.prLookedUp === true,
        t.commentId ?? null,
        t.commentHash ?? null,
        t.attempts,
        t.lastError,
        t.nextAttemptAt === null ? null : new Date(t.nextAttemptAt),
      ],
    );
  },

  /** Issues first seen in this deploy and never in production: how many, and the first `limit` of them (oldest first). */
  async previewIssues(db: Queryable, projectId: string, deployId: string, limit: number): Promise<{ total: number; issues: PreviewIssue[] }> {
    const r = await db.query<{ id: string; name: string; message: string; total: number | string }>(
      `SELECT id, name, message, count(*) OVER () AS total FROM error_groups
        WHERE project_id = $1 AND first_deploy_id = $2 AND NOT (env_counts ? 'production')
        ORDER BY first_seen, id LIMIT ${Math.trunc(limit)}`,
      [projectId, deployId],
    );
    return { total: Number(r.rows[0]?.total ?? 0), issues: r.rows.map((x) => ({ id: x.id, name: x.name, message: x.message })) };
  },

  /** The deploy's sessions and how many crashed (release health's counting: api/release-health/health-numbers.ts). */
  async sessions(analytics: AnalyticalStore, projectId: string, deployId: string, now: number): Promise<{ started: number; crashed: number }> {
    const rows = await analytics.query<{ started: number | string; crashed: number | string }>(
      `SELECT uniqExactIf(session_id, kind = 'update' AND started > 0) + sumIf(started, kind = 'aggregate') AS started,
              uniqExactIf(session_id, kind = 'update' AND (crashed > 0 OR unhandled > 0)) + sumIf(crashed + unhandled, kind = 'aggregate') AS crashed
         FROM release_sessions FINAL WHERE project_id = {p:String} AND deploy_id = {d:String} AND received_at <= {to:DateTime64(3, 'UTC')}`,
      { p: projectId, d: deployId, to: chTime(now) },
    );
    return { started: Number(rows[0]?.started ?? 0), crashed: Number(rows[0]?.crashed ?? 0) };
  },

  /** The deploy page's view: the commit, the pull request and the status last set; undefined for a deploy GitHub did not queue. */
  async ofDeploy(
    db: Queryable,
    deployId: string,
  ): Promise<{ repoId: number; headSha: string; prNumber: number | null; reportedState: CommitState | null; reportedDescription: string | null } | undefined> {
    const r = await db.query<{
      repo_id: string | number;
      head_sha: string;
      pr_number: number | null;
      reported_state: CommitState | null;
      reported_description: string | null;
    }>('SELECT repo_id, head_sha, pr_number, reported_state, reported_description FROM github_deploy_links WHERE deploy_id = $1', [deployId]);
    const x = r.rows[0];
    return (
      x && {
        repoId: Number(x.repo_id),
        headSha: x.head_sha,
        prNumber: x.pr_number,
        reportedState: x.reported_state,
        reportedDescription: x.reported_description,
      }
    );
  },
};
