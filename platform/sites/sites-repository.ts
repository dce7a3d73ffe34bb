import type { Queryable } from '../ports/relational-store.ts';

/**
 * What serving sites reads of projects, deploys and custom domains: the hosts the platform serves for each project
 * (platform-hosts.ts, for environment stamping) and the site a Host names (site-server.ts).
 */
export interface PlatformHostsRow {
  project_id: string;
  slug: string;
  /** The project's own patterns, read in the same query (the processor stamps with both). */
  production_domains: string[] | null;
  preview_domains: string[] | null;
  live_deploy_id: string | null;
  verified_domains: string[] | null;
  site_deploy_ids: string[] | null;
}

/** A site as stored: its project and output directory (relative to DATA_DIR, or absolute); none when nothing serves. */
export interface SiteRow {
  project_id: string;
  artifact_dir: string | null;
  serve_source_maps?: boolean | null;
  /** A per-deploy host's protection (ofDeploy only; issue 42 "Previews that only the team sees"). */
  preview_protection?: boolean | null;
  preview_password_hash?: string | null;
  preview_password_version?: number | null;
  preview_key?: string | null;
  /** The project's share links that still open its previews (unrevoked, unexpired). */
  preview_link_ids?: string[] | null;
  /** A custom domain that serves the project's status page (ofDomain only; issue 43): the project's slug. */
  status_slug?: string | null;
}

export const sitesRepository = {
  /** One row per project among `projectIds`, or (null) per project with a live ingest key: the ones the edge serves. */
  async platformHosts(db: Queryable, projectIds: string[] | null): Promise<Map<string, PlatformHostsRow>> {
    const r = await db.query<PlatformHostsRow>(
      `SELECT p.id AS project_id, p.slug, p.live_deploy_id, p.production_domains, p.preview_domains,
              (SELECT array_agg(pd.domain ORDER BY pd.domain) FROM project_domains pd WHERE pd.project_id = p.id AND pd.verified_at IS NOT NULL) AS verified_domains,
              (SELECT array_agg(d.id ORDER BY d.id) FROM deploys d WHERE d.project_id = p.id AND d.status = 'ready' AND d.artifact_dir IS NOT NULL) AS site_deploy_ids
         FROM projects p
        WHERE ($1::text[] IS NULL AND EXISTS (SELECT 1 FROM api_keys k WHERE k.project_id = p.id AND k.kind = 'ingest' AND k.revoked_at IS NULL))
           OR p.id = ANY($1::text[])`,
      [projectIds],
    );
    return new Map(r.rows.map((row) => [row.project_id, row]));
  },

  /** A deploy's own host (`dep-<id>`): its project, and its output while the deploy is ready. */
  async ofDeploy(db: Queryable, deployId: string): Promise<SiteRow | undefined> {
    const r = await db.query<SiteRow>(
      `SELECT d.project_id, CASE WHEN d.status = 'ready' THEN d.artifact_dir END AS artifact_dir, p.serve_source_maps,
              p.preview_protection, p.preview_password_hash, p.preview_password_version, p.preview_key,
              (SELECT array_agg(l.id) FROM preview_links l
                WHERE l.project_id = p.id AND l.revoked_at IS NULL AND l.expires_at > now()) AS preview_link_ids
         FROM deploys d JOIN projects p ON p.id = d.project_id WHERE d.id = $1`,
      [deployId],
    );
    return r.rows[0];
  },

  /** A project's host (`<slug>`): the project, and its live deploy's output when that is ready. */
  async ofSlug(db: Queryable, slug: string): Promise<SiteRow | undefined> {
    const r = await db.query<SiteRow>(
      `SELECT p.id AS project_id, d.artifact_dir, p.serve_source_maps FROM projects p
         LEFT JOIN deploys d ON d.id = p.live_deploy_id AND d.status = 'ready' WHERE p.slug = $1`,
      [slug],
    );
    return r.rows[0];
  },

  /** A share link of the project that still opens its previews, by its token's hash, with when it expires. */
  async previewLink(db: Queryable, projectId: string, tokenHash: string): Promise<{ id: string; expires_at: Date | string } | undefined> {
    const r = await db.query<{ id: string; expires_at: Date | string }>(
      `SELECT id, expires_at FROM preview_links
        WHERE project_id = $1 AND token_hash = $2 AND revoked_at IS NULL AND expires_at > now()`,
      [projectId, tokenHash],
    );
    return r.rows[0];
  },

  /**
   * A verified custom domain whose project has a ready live deploy, or that serves the project's status page
   * (`serves = 'status'`, migration 0047: no files, its slug).
   */
  async ofDomain(db: Queryable, domain: string): Promise<SiteRow | undefined> {
    const r = await db.query<SiteRow>(
      `SELECT p.id AS project_id, CASE WHEN pd.serves = 'status' THEN NULL ELSE d.artifact_dir END AS artifact_dir, p.serve_source_maps,
              CASE WHEN pd.serves = 'status' THEN p.slug END AS status_slug
         FROM project_domains pd JOIN projects p ON p.id = pd.project_id
         LEFT JOIN deploys d ON d.id = p.live_deploy_id AND d.status = 'ready'
        WHERE pd.domain = $1 AND pd.verified_at IS NOT NULL AND (pd.serves = 'status' OR d.id IS NOT NULL) LIMIT 1`,
      [domain],
    );
    return r.rows[0];
  },
};
