import type { AnalyticalStore } from '../../platform/ports/analytical-store.ts';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { GuardEvidence, GuardStatus } from '../../schemas/guarded-rollout.ts';
import type { Counted } from './guard-verdict.ts';

/**
 * What guarded rollout reads and writes (issue 41): the production deploys in their window, the previous live deploy,
 * the numbers (issues from Postgres error_groups.first_deploy_id; error events from ClickHouse error_occurrences by the
 * pipeline's naming rule, sessions from release_sessions by deploy_id), the verdict on the deploy, and a line appended to its build log.
 */

export interface WatchedDeploy {
  id: string;
  projectId: string;
  slug: string;
  branch: string;
  gitSha: string | null;
  liveAt: number;
  guardStatus: GuardStatus | null;
  /** Whether it is still the project's live deploy. */
  live: boolean;
  /** projects.guarded_rollout as stored. */
  setting: unknown;
}

/** A span of one deploy's traffic: epoch ms, [from, to), while it was the live deploy. */
export interface Span {
  projectId: string;
  deployId: string;
  gitSha: string | null;
  /** Its own host, `dep-….<SITES_DOMAIN>`, lowercase. */
  host: string;
  from: number;
  to: number;
}

/** A degraded verdict taken over by a later sweep (its follow-through unfinished), with the evidence it was taken on. */
export interface UnfinishedVerdict extends WatchedDeploy {
  evidence: GuardEvidence;
}

const chTime = (ms: number) => new Date(ms).toISOString().replace('T', ' ').replace('Z', '');
/** How long the builder that took a degraded verdict has to finish its follow-through before another sweep may. */
export const FOLLOW_THROUGH_MS = 60_000;

interface WatchedRow {
  id: string;
  project_id: string;
  slug: string;
  branch: string;
  git_sha: string | null;
  live_at: Date | string;
  guard_status: GuardStatus | null;
  live: boolean;
  guarded_rollout: unknown;
}
const WATCHED_COLUMNS = `d.id, d.project_id, p.slug, d.branch, d.git_sha, COALESCE(d.live_at, d.finished_at) AS live_at, d.guard_status,
  p.live_deploy_id IS NOT DISTINCT FROM d.id AS live, p.guarded_rollout`;
const watchedOf = (x: WatchedRow): WatchedDeploy => ({
  id: x.id,
  projectId: x.project_id,
  slug: x.slug,
  branch: x.branch,
  gitSha: x.git_sha,
  liveAt: new Date(x.live_at).getTime(),
  guardStatus: x.guard_status,
  live: x.live === true,
  setting: typeof x.guarded_rollout === 'string' ? JSON.parse(x.guarded_rollout) : x.guarded_rollout,
});
/** How many deploys one sweep looks at, at most (the oldest first; the rest at the next sweep). */
const BATCH = 200;

export const guardRepository = {
  /** Ready production deploys not judged yet that went live less than `maxWindowMs` ago. */
  async watched(db: Queryable, now: number, maxWindowMs: number): Promise<WatchedDeploy[]> {
    const r = await db.query<WatchedRow>(
      `SELECT ${WATCHED_COLUMNS}
         FROM deploys d JOIN projects p ON p.id = d.project_id
        WHERE d.environment = 'production' AND d.status = 'ready' AND (d.guard_status IS NULL OR d.guard_status = 'watching')
          AND d.finished_at > $1
        ORDER BY d.finished_at, d.id LIMIT ${BATCH}`,
      [new Date(now - maxWindowMs)],
    );
    return r.rows.map(watchedOf);
  },

  /**
   * The production deploy live before this one: the newest ready one that went live earlier and was not found degraded
   * (the comparison's baseline, and where an automatic rollback goes); undefined for a project's first deploy.
   */
  async previousLive(
    db: Queryable,
    projectId: string,
    deployId: string,
    liveAt: number,
  ): Promise<{ id: string; gitSha: string | null; liveAt: number; nextLiveAt: number } | undefined> {
    // nextLiveAt: when the next production deploy after it went live (a degraded one included), so its span never
    // counts another deploy's time.
    const r = await db.query<{ id: string; git_sha: string | null; live_at: Date | string; next_live_at: Date | string }>(
      `SELECT p.id, p.git_sha, COALESCE(p.live_at, p.finished_at) AS live_at,
              (SELECT min(COALESCE(n.live_at, n.finished_at)) FROM deploys n
                WHERE n.project_id = p.project_id AND n.environment = 'production' AND n.status = 'ready'
                  AND COALESCE(n.live_at, n.finished_at) > COALESCE(p.live_at, p.finished_at)) AS next_live_at
         FROM deploys p
        WHERE p.project_id = $1 AND p.id <> $2 AND p.environment = 'production' AND p.status = 'ready'
          AND COALESCE(p.live_at, p.finished_at) < $3 AND (p.guard_status IS NULL OR p.guard_status NOT IN ('degraded', 'rolled_back'))
        ORDER BY COALESCE(p.live_at, p.finished_at) DESC, p.id DESC LIMIT 1`,
      [projectId, deployId, new Date(liveAt)],
    );
    const p = r.rows[0];
    return p && { id: p.id, gitSha: p.git_sha, liveAt: new Date(p.live_at).getTime(), nextLiveAt: new Date(p.next_live_at).getTime() };
  },

  /** A deploy's numbers over a span. */
  async count(db: Queryable, analytics: AnalyticalStore, s: Span): Promise<Counted> {
    const params = { p: s.projectId, d: s.deployId, sha: (s.gitSha ?? '').toLowerCase(), host: s.host, from: chTime(s.from), to: chTime(s.to) };
    const span = "project_id = {p:String} AND received_at >= {from:DateTime64(3, 'UTC')} AND received_at < {to:DateTime64(3, 'UTC')}";
    const [issues, events, sessions] = await Promise.all([
      db.query<{ n: number | string }>(
        'SELECT count(*)::int AS n FROM error_groups WHERE project_id = $1 AND first_deploy_id = $2 AND first_seen >= $3 AND first_seen < $4',
        [s.projectId, s.deployId, new Date(s.from), new Date(s.to)],
      ),
      // An occurrence keeps the deploy id its client sent; the deploy the pipeline named (processor/environment/
      // deploy-naming.ts) is read back by the same rule: its id or sha, its own host, or (none named) a production page
      // while it was the live deploy, which the span is.
      analytics.query<{ n: number | string }>(
        `SELECT count() AS n FROM error_occurrences FINAL WHERE ${span} AND (deploy_id = {d:String}
            OR (deploy_id = '' AND {sha:String} != '' AND lower(git_sha) = {sha:String})
            OR (deploy_id = '' AND (lower(origin_host) = {host:String} OR startsWith(lower(origin_host), concat({host:String}, ':'))))
            OR (deploy_id = '' AND git_sha = '' AND environment = 'production' AND origin_host != '' AND NOT match(lower(origin_host), '^dep-[0-9a-z]{1,64}[.]')))`,
        params,
      ),
      // Release health's counting (api/release-health/health-numbers.ts): a session once per id, aggregates summed;
      // an unhandled error counts as a crash.
      analytics.query<{ started: number | string; crashed: number | string }>(
        `SELECT uniqExactIf(session_id, kind = 'update' AND started > 0) + sumIf(started, kind = 'aggregate') AS started,
                uniqExactIf(session_id, kind = 'update' AND (crashed > 0 OR unhandled > 0)) + sumIf(crashed + unhandled, kind = 'aggregate') AS crashed
           FROM release_sessions FINAL WHERE ${span} AND deploy_id = {d:String}`,
        params,
      ),
    ]);
    const started = Number(sessions[0]?.started ?? 0);
    const crashed = Number(sessions[0]?.crashed ?? 0);
    return {
      newIssues: Number(issues.rows[0]?.n ?? 0),
      errorEvents: Number(events[0]?.n ?? 0),
      sessions: started,
      crashFreeSessions: started > 0 ? Math.min(1, Math.max(0, 1 - crashed / started)) : null,
    };
  },

  /**
   * Record a verdict on a deploy still being watched (or never looked at); false when another sweep judged it first.
   * `from` narrows the move (a rollback's rolled_back follows this sweep's own degraded).
   */
  async record(
    db: Queryable,
    deployId: string,
    status: GuardStatus,
    evidence: GuardEvidence | null,
    now: number,
    from: 'unjudged' | 'degraded' = 'unjudged',
  ): Promise<boolean> {
    // A degraded verdict taken here is the claim of its follow-through (guard_acting_until: `finished` clears it).
    const r = await db.query(
      `UPDATE deploys SET guard_status = $2, guard_evidence = COALESCE($3::jsonb, guard_evidence),
              guard_decided_at = CASE WHEN $2 = 'watching' THEN NULL ELSE $4::timestamptz END,
              guard_acting_until = CASE WHEN $2 = 'degraded' AND guard_status IS DISTINCT FROM 'degraded' THEN $5::timestamptz ELSE guard_acting_until END
        WHERE id = $1 AND ${from === 'degraded' ? "guard_status = 'degraded'" : "(guard_status IS NULL OR guard_status = 'watching')"}`,
      [deployId, status, evidence === null ? null : JSON.stringify(evidence), new Date(now), new Date(now + FOLLOW_THROUGH_MS)],
    );
    return (r.rowCount ?? 0) > 0;
  },

  /**
   * Degraded verdicts whose follow-through (rollback, log line, deploy.degraded) was not finished by the builder that
   * took them (it failed or died midway) and whose minute has passed, each taken over here for another minute.
   */
  async takeOverUnfinished(db: Queryable, now: number): Promise<UnfinishedVerdict[]> {
    const r = await db.query<WatchedRow & { guard_evidence: GuardEvidence | string }>(
      `UPDATE deploys d SET guard_acting_until = $2
         FROM projects p
        WHERE p.id = d.project_id AND d.id IN (SELECT id FROM deploys WHERE guard_acting_until IS NOT NULL AND guard_acting_until <= $1
                                               ORDER BY guard_acting_until LIMIT ${BATCH} FOR UPDATE SKIP LOCKED)
        RETURNING ${WATCHED_COLUMNS}, d.guard_evidence`,
      [new Date(now), new Date(now + FOLLOW_THROUGH_MS)],
    );
    return r.rows.map((x) => ({
      ...watchedOf(x),
      evidence: typeof x.guard_evidence === 'string' ? (JSON.parse(x.guard_evidence) as GuardEvidence) : x.guard_evidence,
    }));
  },

  /** The follow-through of a degraded verdict is done. */
  async finished(db: Queryable, deployId: string): Promise<void> {
    await db.query('UPDATE deploys SET guard_acting_until = NULL WHERE id = $1', [deployId]);
  },

  /** The project's live deploy now. */
  async liveOf(db: Queryable, projectId: string): Promise<string | null> {
    const r = await db.query<{ live_deploy_id: string | null }>('SELECT live_deploy_id FROM projects WHERE id = $1', [projectId]);
    return r.rows[0]?.live_deploy_id ?? null;
  },

  /** One `system` line after the deploy's build log (its next sequence number, counted in log_lines). */
  async appendLogLine(db: Queryable, analytics: AnalyticalStore, projectId: string, deployId: string, line: string, now: number): Promise<void> {
    const r = await db.query<{ seq: number }>('UPDATE deploys SET log_lines = log_lines + 1 WHERE id = $1 RETURNING log_lines - 1 AS seq', [deployId]);
    const seq = r.rows[0]?.seq;
    if (seq === undefined) return;
    await analytics.insert('deploy_logs', [{ project_id: projectId, deploy_id: deployId, seq, at: chTime(now), stream: 'system', line }], {
      dedupToken: `dlog-${deployId}-${seq}-1`,
    });
  },
};
