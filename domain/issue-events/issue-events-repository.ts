import type { Queryable } from '../../platform/ports/relational-store.ts';

/** What an issue.* event says of its issues (issue 41): the group rows with their project. */
export interface IssueEventFacts {
  id: string;
  project_id: string;
  slug: string;
  project_name: string;
  name: string;
  message: string;
  culprit: string | null;
  status: string;
  count: string | number;
  env_counts: Record<string, number> | null;
  regression_count: number;
  first_seen: Date;
  last_seen: Date;
  first_deploy_id: string | null;
  last_deploy_id: string | null;
  regressed_deploy_id: string | null;
}

export const issueEventsRepository = {
  /** The groups' facts, with their deploys (0034_issue_deploys.sql). */
  async facts(db: Queryable, projectId: string, groupIds: string[]): Promise<IssueEventFacts[]> {
    if (!groupIds.length) return [];
    const { rows } = await db.query<IssueEventFacts>(
      `SELECT g.id, g.project_id, p.slug, p.name AS project_name, g.name, g.message, g.culprit, g.status, g.count, g.env_counts,
              g.regression_count, g.first_seen, g.last_seen, g.first_deploy_id, g.last_deploy_id, g.regressed_deploy_id
         FROM error_groups g JOIN projects p ON p.id = g.project_id
        WHERE g.project_id = $1 AND g.id = ANY($2::text[])`,
      [projectId, groupIds],
    );
    return rows;
  },

  /**
   * Resolve in next deploy, completed (issue 41): the project's `resolving` issues marked before `deployId` was created
   * become `resolved` by it, when it is a ready production deploy of the project (a rollback to the marked deploy or an
   * older one, and a preview, resolve nothing). Answers the issues it resolved.
   */
  async resolveByDeploy(db: Queryable, projectId: string, deployId: string): Promise<string[]> {
    const { rows } = await db.query<{ id: string }>(
      `UPDATE error_groups g SET status = 'resolved', resolved_deploy_id = l.id
         FROM deploys l, deploys m
        WHERE l.id = $2 AND l.project_id = $1 AND l.environment = 'production' AND l.status = 'ready'
          AND g.project_id = $1 AND g.status = 'resolving' AND m.id = g.resolve_deploy_id AND (l.created_at, l.id) > (m.created_at, m.id)
        RETURNING g.id`,
      [projectId, deployId],
    );
    return rows.map((r) => r.id).sort();
  },

  /** The named deploys of the project: their git sha and branch. */
  async deploys(db: Queryable, projectId: string, ids: string[]): Promise<Array<{ id: string; git_sha: string | null; branch: string | null }>> {
    if (!ids.length) return [];
    const { rows } = await db.query<{ id: string; git_sha: string | null; branch: string | null }>(
      'SELECT id, git_sha, branch FROM deploys WHERE project_id = $1 AND id = ANY($2::text[])',
      [projectId, ids],
    );
    return rows;
  },
};
