import type { PlatformHostsRow } from './sites-repository.ts';

/**
 * The hosts the platform itself serves for a project, as host patterns, so environment stamping (§7.4) is right
 * with no domains configured (issue 23):
 *   production  `<slug>.<SITES_DOMAIN>` (any port), the project's verified custom domains, and the live production
 *               deploy's own host `dep-<id>.<SITES_DOMAIN>`
 *   preview     every other deploy host of the project that still serves (ready, output kept): previews, and
 *               production deploys that are not live (an older build is not production traffic)
 * They are added to the project's own domain patterns, at the edge (caps, flags) and in the processor alike. The rows
 * come from sitesRepository.platformHosts.
 */
export interface PlatformHosts {
  production: string[];
  preview: string[];
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
