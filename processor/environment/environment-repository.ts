import { platformHostPatterns } from '../../platform/sites/platform-hosts.ts';
import { sitesRepository } from '../../platform/sites/sites-repository.ts';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import type { DeployRef, ProjectDomains } from './environment.ts';

/** What environment stamping (§7.4) reads: the projects' domains and the deploys events name; release health (processor/release-health/) also the live deploys. */
export interface EnvironmentRepository {
  /** Domains of the projects that exist among `projectIds`: their own patterns and the platform's hosts of them. */
  projectDomains(db: Queryable, projectIds: string[], sitesDomain: string): Promise<Map<string, ProjectDomains>>;
  /** Deploys of these projects with one of these ids or git shas (lower-cased), oldest first. */
  deploys(db: Queryable, projectIds: string[], ids: string[], shas: string[]): Promise<Array<DeployRef & { projectId: string }>>;
  /** The live (production) deploy of each of these projects that has one ready, and when it finished building. */
  liveDeploys(db: Queryable, projectIds: string[]): Promise<Map<string, { id: string; finishedAt: number | null }>>;
}

export const environmentRepository: EnvironmentRepository = {
  async projectDomains(db, projectIds, sitesDomain) {
    const rows = await sitesRepository.platformHosts(db, projectIds);
    return new Map(
      [...rows.values()].map((p) => {
        const own = platformHostPatterns(p, sitesDomain);
        return [
          p.project_id,
          { productionDomains: [...(p.production_domains ?? []), ...own.production], previewDomains: [...(p.preview_domains ?? []), ...own.preview] },
        ];
      }),
    );
  },

  async deploys(db, projectIds, ids, shas) {
    // Oldest first, so for a sha deployed more than once the most recent deploy wins.
    const r = await db.query<{ id: string; project_id: string; git_sha: string | null; environment: 'production' | 'preview' }>(
      `SELECT id, project_id, lower(git_sha) AS git_sha, environment FROM deploys
        WHERE project_id = ANY($1::text[]) AND (id = ANY($2::text[]) OR lower(git_sha) = ANY($3::text[]))
        ORDER BY created_at, id`,
      [projectIds, ids, shas],
    );
    return r.rows.map((d) => ({ id: d.id, projectId: d.project_id, gitSha: d.git_sha, environment: d.environment }));
  },

  async liveDeploys(db, projectIds) {
    const r = await db.query<{ project_id: string; id: string; finished_at: Date | string | null }>(
      `SELECT p.id AS project_id, d.id, d.finished_at FROM projects p JOIN deploys d ON d.id = p.live_deploy_id AND d.status = 'ready'
        WHERE p.id = ANY($1::text[])`,
      [projectIds],
    );
    return new Map(r.rows.map((x) => [x.project_id, { id: x.id, finishedAt: x.finished_at === null ? null : new Date(x.finished_at).getTime() }]));
  },
};
