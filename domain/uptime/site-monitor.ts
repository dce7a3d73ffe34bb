import type { Platform } from '../../platform/platform.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { siteMonitorRepository } from './site-monitor-repository.ts';

/**
 * The live site's own monitor (issue 26): when a project's first production deploy goes live, and the project has
 * not switched it off (`PATCH /v1/projects/:slug/uptime/settings { siteMonitor: false }`), its production address
 * `https://<slug>.<SITES_DOMAIN>/` gets a monitor, private and at the default interval. Later deploys add none, so a
 * deleted site monitor stays deleted. A sites domain the outbound guard refuses (the default `localhost`) gets none:
 * its checks could only fail.
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
  const url = `https://${p.slug}.${platform.config.SITES_DOMAIN}/`;
  try {
    platform.outbound.parseUrl(url, 'uptime');
    if (/(^|\.)localhost$/i.test(platform.config.SITES_DOMAIN)) return 'unreachable_domain';
  } catch {
    return 'unreachable_domain';
  }
  const created = await siteMonitorRepository.insert(db, {
    projectId,
    url,
    intervalSec: LIMITS.uptime.intervalSec.default,
    timeoutMs: LIMITS.uptime.timeoutMs.default,
    now: platform.clock.now(),
  });
  return created ? 'created' : 'exists';
}
