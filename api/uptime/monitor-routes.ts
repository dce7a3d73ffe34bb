import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { newId } from '../../platform/tokens.ts';
import { errorAnswers, NoContent, SlugParams } from '../../schemas/api/common.ts';
import {
  CheckList,
  ChecksQuery,
  CreateMonitorBody,
  IncidentList,
  MonitorAnswer,
  MonitorList,
  MonitorParams,
  UpdateMonitorBody,
  UpdateUptimeSettings,
  UptimeSettings,
} from '../../schemas/api/uptime.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import type { CheckError } from '../../schemas/uptime.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';
import { checkedUrl } from '../outbound-url.ts';
import { monitorsStore, toIncident, toMonitor } from './monitors-store.ts';

/**
 * `/v1/projects/:slug/uptime` (spec §4.1 uptime, issue 26): a project's monitors (create, list, read, change, pause,
 * delete), each one's latest checks (from the analytical store) and the incidents; and whether the live site gets a
 * monitor of its own. Reads need `uptime:read`, changes `uptime:write` (or a session or CLI token of a member). A
 * monitor's URL passes the outbound URL guard when saved, as webhook URLs do, and again at every check.
 */
export function monitorRoutes(platform: Pick<Platform, 'db' | 'analytics' | 'clock' | 'outbound'>): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  const read = { auth: AUTH.project('uptime:read') };
  const write = { auth: AUTH.project('uptime:write') };
  const tags = ['uptime'];

  async function monitorOf(projectId: string, id: string) {
    const row = await monitorsStore.get(db, projectId, id);
    if (!row) throw new ServiceError('not_found', 'no such monitor');
    return row;
  }

  return async (app) => {
    app.get(
      '/v1/projects/:slug/uptime',
      {
        config: read,
        schema: { tags, summary: "The project's monitors and the address of its public status JSON", params: SlugParams, response: { 200: MonitorList } },
      },
      async (request) => {
        const project = projectOf(request);
        return { monitors: (await monitorsStore.list(db, project.id)).map(toMonitor), statusPage: `/v1/status/${project.slug}` };
      },
    );

    app.post(
      '/v1/projects/:slug/uptime',
      {
        config: write,
        schema: { tags, summary: 'Create a monitor', params: SlugParams, body: CreateMonitorBody, response: { 201: MonitorAnswer, ...errorAnswers(400, 409) } },
      },
      async (request, reply) => {
        const project = projectOf(request);
        const b = request.body;
        const url = await checkedUrl(platform, b.url, 'uptime', 'url');
        const count = await db.query<{ n: string }>('SELECT count(*) AS n FROM uptime_monitors WHERE project_id = $1', [project.id]);
        if (Number(count.rows[0]!.n) >= LIMITS.uptime.maxMonitorsPerProject)
          throw new ServiceError('conflict', `a project has at most ${LIMITS.uptime.maxMonitorsPerProject} monitors`);
        const now = new Date(clock.now());
        const r = await db.query(
          `INSERT INTO uptime_monitors (id, project_id, name, url, method, interval_sec, timeout_ms, expected_min, expected_max, body_contains,
             failures_to_down, public, show_url, paused, next_check_at, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $15, $15) RETURNING *`,
          [
            newId('mon_'),
            project.id,
            b.name,
            url,
            b.method,
            b.intervalSec,
            Math.min(b.timeoutMs, b.intervalSec * 1000),
            b.expectedStatus.min,
            b.expectedStatus.max,
            b.bodyContains,
            b.failuresToDown,
            b.public,
            b.showUrl,
            b.paused,
            now,
          ],
        );
        return reply.code(201).send({ monitor: toMonitor(r.rows[0] as never) });
      },
    );

    app.get(
      '/v1/projects/:slug/uptime/settings',
      { config: read, schema: { tags, summary: 'Whether the live site gets a monitor of its own', params: SlugParams, response: { 200: UptimeSettings } } },
      async (request) => {
        const r = await db.query<{ uptime_site_monitor: boolean }>('SELECT uptime_site_monitor FROM projects WHERE id = $1', [projectOf(request).id]);
        return { siteMonitor: r.rows[0]?.uptime_site_monitor ?? true };
      },
    );

    app.patch(
      '/v1/projects/:slug/uptime/settings',
      {
        config: write,
        schema: { tags, summary: 'Switch the live site monitor on or off', params: SlugParams, body: UpdateUptimeSettings, response: { 200: UptimeSettings } },
      },
      async (request) => {
        await db.query('UPDATE projects SET uptime_site_monitor = $2 WHERE id = $1', [projectOf(request).id, request.body.siteMonitor]);
        return { siteMonitor: request.body.siteMonitor };
      },
    );

    app.get(
      '/v1/projects/:slug/uptime/incidents',
      {
        config: read,
        schema: { tags, summary: "The project's incidents, open ones first, then the newest", params: SlugParams, response: { 200: IncidentList } },
      },
      async (request) => ({ incidents: (await monitorsStore.incidents(db, projectOf(request).id, { limit: 100 })).map(toIncident) }),
    );

    app.get(
      '/v1/projects/:slug/uptime/:id',
      { config: read, schema: { tags, summary: 'A monitor', params: MonitorParams, response: { 200: MonitorAnswer, ...errorAnswers(404) } } },
      async (request) => ({ monitor: toMonitor(await monitorOf(projectOf(request).id, request.params.id)) }),
    );

    app.patch(
      '/v1/projects/:slug/uptime/:id',
      {
        config: write,
        schema: {
          tags,
          summary: 'Change a monitor; `paused: true` stops its checks, `false` checks it at once',
          params: MonitorParams,
          body: UpdateMonitorBody,
          response: { 200: MonitorAnswer, ...errorAnswers(400, 404) },
        },
      },
      async (request) => {
        const project = projectOf(request);
        const was = await monitorOf(project.id, request.params.id);
        const b = request.body;
        const url = b.url === undefined ? was.url : await checkedUrl(platform, b.url, 'uptime', 'url');
        const intervalSec = b.intervalSec ?? was.interval_sec;
        const resumed = b.paused === false && was.paused;
        const r = await db.query(
          `UPDATE uptime_monitors SET name = $3, url = $4, method = $5, interval_sec = $6, timeout_ms = $7, expected_min = $8, expected_max = $9,
             body_contains = $10, failures_to_down = $11, public = $12, show_url = $13, paused = $14, updated_at = $15,
             next_check_at = CASE WHEN $16 OR $4 <> url THEN $15 ELSE next_check_at END,
             consecutive_failures = CASE WHEN $16 THEN 0 ELSE consecutive_failures END
           WHERE project_id = $1 AND id = $2 RETURNING *`,
          [
            project.id,
            was.id,
            b.name ?? was.name,
            url,
            b.method ?? was.method,
            intervalSec,
            Math.min(b.timeoutMs ?? was.timeout_ms, intervalSec * 1000),
            b.expectedStatus?.min ?? was.expected_min,
            b.expectedStatus?.max ?? was.expected_max,
            b.bodyContains === undefined ? was.body_contains : b.bodyContains,
            b.failuresToDown ?? was.failures_to_down,
            b.public ?? was.public,
            b.showUrl ?? was.show_url,
            b.paused ?? was.paused,
            new Date(clock.now()),
            resumed,
          ],
        );
        if (!r.rows[0]) throw new ServiceError('not_found', 'no such monitor');
        return { monitor: toMonitor(r.rows[0] as never) };
      },
    );

    app.delete(
      '/v1/projects/:slug/uptime/:id',
      {
        config: write,
        schema: { tags, summary: 'Delete a monitor, its incidents and rollups', params: MonitorParams, response: { 204: NoContent, ...errorAnswers(404) } },
      },
      async (request, reply) => {
        const r = await db.query('DELETE FROM uptime_monitors WHERE project_id = $1 AND id = $2 RETURNING id', [projectOf(request).id, request.params.id]);
        if (!r.rows.length) throw new ServiceError('not_found', 'no such monitor');
        return reply.code(204).send(null);
      },
    );

    app.get(
      '/v1/projects/:slug/uptime/:id/checks',
      {
        config: read,
        schema: {
          tags,
          summary: "A monitor's latest checks, newest first (kept 30 days)",
          params: MonitorParams,
          querystring: ChecksQuery,
          response: { 200: CheckList, ...errorAnswers(404) },
        },
      },
      async (request) => {
        const project = projectOf(request);
        const m = await monitorOf(project.id, request.params.id);
        const rows = await platform.analytics.query<{ at: string; ok: number; status: number | null; ms: number; error: string; detail: string }>(
          `SELECT toString(at) AS at, ok, status, ms, error, detail FROM uptime_checks
           WHERE project_id = {project:String} AND monitor_id = {monitor:String} ORDER BY at DESC LIMIT {limit:UInt32}`,
          { project: project.id, monitor: m.id, limit: request.query.limit },
        );
        return {
          checks: rows.map((c) => ({
            at: new Date(`${c.at.replace(' ', 'T')}Z`).toISOString(),
            ok: Number(c.ok) === 1,
            status: c.status === null ? null : Number(c.status),
            ms: Number(c.ms),
            error: (c.error || null) as CheckError | null,
            detail: c.detail || null,
          })),
        };
      },
    );
  };
}
