import type { Platform } from '../../platform/platform.ts';
import { siteUrls } from '../../platform/sites/site-urls.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { siteMonitorRepository } from './site-monitor-repository.ts';

/**
 * The live site's own monitor (issue 26): when a project's first production deploy goes live, and the project has
 * not switched it off (`PATCH /v1/projects/:slug/uptime/settings { siteMonitor: false }`), its production address gets
 * a monitor at the default interval. Later deploys add none, so a deleted site monitor stays deleted.
 *
 * It is public (its URL not shown; issue 43): the live site is public already and anyone can watch it answer, so the
 * project's status JSON and page answer from its first live deploy, as the console's "Public status" link promises.
 * The owner makes it private like any monitor.
 *
 * The address is the one people open (platform/sites/site-urls.ts: the public base URL's scheme and port, so
 * `http://demo.localhost:8080/` under `npm start`) when the outbound guard takes it: on one machine that needs
 * ALLOW_LOCAL_OUTBOUND. Otherwise `https://<slug>.<SITES_DOMAIN>/` (a deployment behind a TLS proxy), unless the
 * guard refuses it or it is a `localhost` name no https answers on: no monitor then, its checks could only fail.
 */
export async function ensureSiteMonitor(
  platform: Pick<Platform, 'db' | 'clock' | 'outbound' | 'config'>,
  projectId: string,
): Promise<'created' | 'exists' | 'switched_off' | 'not_first' | 'unreachable_domain'> {
  const { db } = platform;
  const p = await siteMonitorRepository.project(db, projectId);
  if (!p) return 'not_first';
  if (!p.siteMonitor) return 'switched_off';
  if ((await siteMonitorRepository.readyProductionDeploys(db, projectId)) !== 1) return 'not_first';
  const url = siteAddress(platform, p.slug);
  if (!url) return 'unreachable_domain';
  const created = await siteMonitorRepository.insert(db, {
    projectId,
    url,
    intervalSec: LIMITS.uptime.intervalSec.default,
    timeoutMs: LIMITS.uptime.timeoutMs.default,
    now: platform.clock.now(),
  });
  return created ? 'created' : 'exists';
}

/** The live site's address its monitor can check, or undefined when there is none (see ensureSiteMonitor). */
function siteAddress(platform: Pick<Platform, 'outbound' | 'config'>, slug: string): string | undefined {
  const takes = (url: string) => {
    try {
      platform.outbound.parseUrl(url, 'uptime');
      return true;
    } catch {
      return false;
    }
  };
  const opened = siteUrls(platform.config).project(slug);
  if (takes(opened) && (opened.startsWith('http:') || !isLocalhost(platform.config.SITES_DOMAIN))) return opened;
  const https = `https://${slug}.${platform.config.SITES_DOMAIN}/`;
  return takes(https) && !isLocalhost(platform.config.SITES_DOMAIN) ? https : undefined;
}

const isLocalhost = (domain: string) => /(^|\.)localhost$/i.test(domain);
