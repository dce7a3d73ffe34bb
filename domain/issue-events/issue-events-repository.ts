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
  /**
   * The groups' facts. The deploy columns (0034_issue_deploys.sql) are read through to_jsonb, so a group row without
   * them reads null rather than failing.
   */
  async facts(db: Queryable, projectId: string, groupIds: string[]): Promise<IssueEventFacts[]> {
    if (!groupIds.length) return [];
    const { rows } = await db.query<IssueEventFacts>(
      `SELECT g.id, g.project_id, p.slug, p.name AS project_name, g.name, g.message, g.culprit, g.status, g.count, g.env_counts,
              g.regression_count, g.first_seen, g.last_seen,
              to_jsonb(g) ->> 'first_deploy_id' AS first_deploy_id, to_jsonb(g) ->> 'last_deploy_id' AS last_deploy_id,
              to_jsonb(g) ->> 'regressed_deploy_id' AS regressed_deploy_id
         FROM error_groups g JOIN projects p ON p.id = g.project_id
        WHERE g.project_id = $1 AND g.id = ANY($2::text[])`,
      [projectId, groupIds],
    );
    return rows;
  },
};
