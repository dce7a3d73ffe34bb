import type { Platform } from '../../platform/platform.ts';
import { newId } from '../../platform/tokens.ts';
import { LIMITS } from '../../schemas/limits.ts';

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
  const p = (await db.query<{ slug: string; uptime_site_monitor: boolean }>('SELECT slug, uptime_site_monitor FROM projects WHERE id = $1', [projectId]))
    .rows[0];
  if (!p) return 'not_first';
  if (!p.uptime_site_monitor) return 'switched_off';
  const ready = await db.query<{ n: string }>("SELECT count(*) AS n FROM deploys WHERE project_id = $1 AND environment = 'production' AND status = 'ready'", [
    projectId,
  ]);
  if (Number(ready.rows[0]!.n) !== 1) return 'not_first';
  const url = `https://${p.slug}.${platform.config.SITES_DOMAIN}/`;
  try {
    platform.outbound.parseUrl(url, 'uptime');
    if (/(^|\.)localhost$/i.test(platform.config.SITES_DOMAIN)) return 'unreachable_domain';
  } catch {
    return 'unreachable_domain';
  }
  const now = new Date(platform.clock.now());
  const r = await db.query(
    `INSERT INTO uptime_monitors (id, project_id, name, url, method, interval_sec, timeout_ms, site, next_check_at, created_at, updated_at)
     VALUES ($1, $2, 'Live site', $3, 'GET', $4, $5, true, $6, $6, $6) ON CONFLICT (project_id) WHERE site DO NOTHING RETURNING id`,
    [newId('mon_'), projectId, url, LIMITS.uptime.intervalSec.default, LIMITS.uptime.timeoutMs.default, now],
  );
  return r.rows.length ? 'created' : 'exists';
}
