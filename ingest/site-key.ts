import type { SiteServer } from '../hosting/serve/site-server.ts';
import type { EdgeKey, ProjectCache } from './project-cache.ts';
import { refusal, type Refusal } from './refusals.ts';

/**
 * The key a site's same-origin path (§7.1, `/service/v1/...`) acts with: the Host names the site's project
 * (platform/sites/, cached), and the edge attaches that project's oldest live ingest key (ProjectCache.siteKeyOf), so
 * no key is in the page. Shared by every same-origin route (errors, analytics, flags). Rejects only when the site
 * lookup itself fails; `ip` (the caller's) pays for lookups of Hosts that are no site (429 past the limit).
 */
export async function siteKeyOfHost(sites: SiteServer | undefined, cache: ProjectCache, host: string, ip?: string): Promise<EdgeKey | Refusal> {
  const site = host && sites ? await sites.lookup(host, ip) : undefined;
  if (site?.limited)
    return refusal('rate_limited', 'too many lookups of hosts that are no site from this address; retry later', { retryAfterSec: site.limited.retryAfterSec });
  if (!site?.projectId) return refusal('not_a_site', 'this host serves no site of the platform');
  return cache.siteKeyOf(site.projectId) ?? refusal('no_site_key', 'the project has no live ingest key for its site to use; create one');
}
