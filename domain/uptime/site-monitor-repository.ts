import type { Queryable } from '../../platform/ports/relational-store.ts';
import { newId } from '../../platform/tokens.ts';

/** What the live site's own monitor (site-monitor.ts) reads of projects and deploys, and its row in uptime_monitors. */
export const siteMonitorRepository = {
  /** The project's slug and whether it wants a site monitor, or undefined when there is no such project. */
  async project(db: Queryable, projectId: string): Promise<{ slug: string; siteMonitor: boolean } | undefined> {
    const r = await db.query<{ slug: string; uptime_site_monitor: boolean }>('SELECT slug, uptime_site_monitor FROM projects WHERE id = $1', [projectId]);
    const p = r.rows[0];
    return p && { slug: p.slug, siteMonitor: p.uptime_site_monitor };
  },

  /** How many of the project's production deploys are ready. */
  async readyProductionDeploys(db: Queryable, projectId: string): Promise<number> {
    const r = await db.query<{ n: string }>("SELECT count(*) AS n FROM deploys WHERE project_id = $1 AND environment = 'production' AND status = 'ready'", [
      projectId,
    ]);
    return Number(r.rows[0]!.n);
  },

  /** Add the project's site monitor, public with its URL hidden; false when it has one already (the partial unique index on `site` decides). */
  async insert(db: Queryable, m: { projectId: string; url: string; intervalSec: number; timeoutMs: number; now: number }): Promise<boolean> {
    const now = new Date(m.now);
    const r = await db.query(
      `INSERT INTO uptime_monitors (id, project_id, name, url, method, interval_sec, timeout_ms, site, public, next_check_at, created_at, updated_at)
       VALUES ($1, $2, 'Live site', $3, 'GET', $4, $5, true, true, $6, $6, $6) ON CONFLICT (project_id) WHERE site DO NOTHING RETURNING id`,
      [newId('mon_'), m.projectId, m.url, m.intervalSec, m.timeoutMs, now],
    );
    return r.rows.length > 0;
  },
};
