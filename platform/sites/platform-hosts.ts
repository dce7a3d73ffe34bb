import type { Queryable } from '../ports/relational-store.ts';

/**
 * The hosts the platform itself serves for a project, as host patterns, so environment stamping (§7.4) is right
 * with no domains configured (issue 23):
 *   production  `<slug>.<SITES_DOMAIN>` (any port), the project's verified custom domains, and the live production
 *               deploy's own host `dep-<id>.<SITES_DOMAIN>`
 *   preview     every other deploy host of the project that still serves (ready, output kept): previews, and
 *               production deploys that are not live (an older build is not production traffic)
 * They are added to the project's own domain patterns, at the edge (caps, flags) and in the processor alike.
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

export interface PlatformHosts {
  production: string[];
  preview: string[];
}

/** One row per project among `projectIds`, or (null) per project with a live ingest key: the ones the edge serves. */
export async function loadPlatformHosts(db: Queryable, projectIds: string[] | null): Promise<Map<string, PlatformHostsRow>> {
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
}

export function platformHostPatterns(row: PlatformHostsRow | undefined, sitesDomain: string): PlatformHosts {
  if (!row) return { production: [], preview: [] };
  const suffix = `.${sitesDomain.toLowerCase()}`;
  const deployHost = (id: string) => `${id.replace(/_/g, '-')}${suffix}`;
  const production = [`${row.slug}${suffix}`, ...(row.verified_domains ?? [])];
  const preview: string[] = [];
  for (const id of row.site_deploy_ids ?? []) (id === row.live_deploy_id ? production : preview).push(deployHost(id));
  return { production, preview };
}
