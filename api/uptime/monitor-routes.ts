import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { routePath } from '../../schemas/api/client.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { AUTH } from '../auth/route-auth.ts';
import { declared } from '../declared-route.ts';
import { checkedUrl } from '../outbound-url.ts';
import { writtenStatusRepository } from '../status/written-status-repository.ts';
import { toIncident, toMonitor, uptimeRepository } from './uptime-repository.ts';
import { changedHeartbeatValues, changedMonitorValues, misplacedFields, newHeartbeatValues, newMonitorValues } from './uptime-rules.ts';

/**
 * `/v1/projects/:slug/uptime` (spec §4.1 uptime, issue 26): a project's monitors (create, list, read, change, pause,
 * delete), each one's latest checks (from the analytical store) and the incidents; and whether the live site gets a
 * monitor of its own. Heartbeats (issue 40) are monitors too: made by hand here or by an SDK's check-in, changed,
 * paused and deleted the same way, with their check-ins listed. Reads need `uptime:read`, changes `uptime:write` (or a session or CLI token of a member). A
 * monitor's URL passes the outbound URL guard when saved, as webhook URLs do, and again at every check.
 */
const noMonitor = () => new ServiceError('not_found', 'no such monitor');
const badSchedule = (problem: string) => new ServiceError('invalid_request', `schedule: ${problem}`, { fields: [{ path: 'schedule', message: problem }] });

export function monitorRoutes(platform: Pick<Platform, 'db' | 'analytics' | 'clock' | 'outbound'>): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  const read = { auth: AUTH.project('uptime:read') };
  const write = { auth: AUTH.project('uptime:write') };

  async function monitorOf(projectId: string, id: string) {
    const row = await uptimeRepository.get(db, projectId, id);
    if (!row) throw noMonitor();
    return row;
  }

  return async (app) => {
    app.route({
      ...declared('listMonitors'),
      config: read,
      handler: async (request) => {
        const project = projectOf(request);
        return { monitors: await uptimeRepository.list(db, project.id), statusPage: routePath('publicStatus', { slug: project.slug }) };
      },
    });

    app.route({
      ...declared('createMonitor'),
      config: write,
      handler: async (request, reply) => {
        const project = projectOf(request);
        const body = request.body;
        const url = body.kind === 'heartbeat' ? '' : await checkedUrl(platform, body.url, 'uptime', 'url');
        if ((await uptimeRepository.count(db, project.id)) >= LIMITS.uptime.maxMonitorsPerProject)
          throw new ServiceError('conflict', `a project has at most ${LIMITS.uptime.maxMonitorsPerProject} monitors`);
        if (body.kind === 'heartbeat') {
          const values = newHeartbeatValues(body, clock.now());
          if ('problem' in values) throw badSchedule(values.problem);
          const monitor = await uptimeRepository.createHeartbeat(db, project.id, values, clock.now());
          if (!monitor) throw new ServiceError('conflict', `the project has a heartbeat named ${body.slug} already`);
          return reply.code(201).send({ monitor });
        }
        const monitor = await uptimeRepository.create(db, project.id, newMonitorValues(body, url), clock.now());
        return reply.code(201).send({ monitor });
      },
    });

    app.route({
      ...declared('getUptimeSettings'),
      config: read,
      handler: async (request) => ({ siteMonitor: await uptimeRepository.siteMonitor(db, projectOf(request).id) }),
    });

    app.route({
      ...declared('updateUptimeSettings'),
      config: write,
      handler: async (request) => {
        await uptimeRepository.setSiteMonitor(db, projectOf(request).id, request.body.siteMonitor);
        return { siteMonitor: request.body.siteMonitor };
      },
    });

    app.route({
      ...declared('listIncidents'),
      config: read,
      handler: async (request) => {
        const projectId = projectOf(request).id;
        return {
          incidents: (await uptimeRepository.incidents(db, projectId, { limit: 100 })).map(toIncident),
          written: await writtenStatusRepository.incidents(db, projectId, { limit: 100, updates: LIMITS.statusIncidents.updatesPerIncident }),
        };
      },
    });

    app.route({
      ...declared('getMonitor'),
      config: read,
      handler: async (request) => ({ monitor: toMonitor(await monitorOf(projectOf(request).id, request.params.id)) }),
    });

    app.route({
      ...declared('updateMonitor'),
      config: write,
      handler: async (request) => {
        const project = projectOf(request);
        const was = await monitorOf(project.id, request.params.id);
        const misplaced = misplacedFields(was.kind, request.body);
        if (misplaced.length)
          throw new ServiceError('invalid_request', `${misplaced.join(', ')}: not a field of a ${was.kind} monitor`, {
            fields: misplaced.map((path) => ({ path, message: `not a field of a ${was.kind} monitor` })),
          });
        if (was.kind === 'heartbeat') {
          const values = changedHeartbeatValues(was, request.body, clock.now());
          if ('problem' in values) throw badSchedule(values.problem);
          const monitor = await uptimeRepository.updateHeartbeat(db, project.id, was.id, values, clock.now());
          if (!monitor) throw noMonitor();
          return { monitor };
        }
        const url = request.body.url === undefined ? was.url : await checkedUrl(platform, request.body.url, 'uptime', 'url');
        const { values, checkNow } = changedMonitorValues(was, request.body, url);
        const monitor = await uptimeRepository.update(db, project.id, was.id, values, { checkNow }, clock.now());
        if (!monitor) throw noMonitor();
        return { monitor };
      },
    });

    app.route({
      ...declared('deleteMonitor'),
      config: write,
      handler: async (request, reply) => {
        if (!(await uptimeRepository.delete(db, projectOf(request).id, request.params.id))) throw noMonitor();
        return reply.code(204).send(null);
      },
    });

    app.route({
      ...declared('listMonitorChecks'),
      config: read,
      handler: async (request) => {
        const project = projectOf(request);
        const monitor = await monitorOf(project.id, request.params.id);
        return { checks: await uptimeRepository.checks(platform.analytics, project.id, monitor.id, request.query.limit) };
      },
    });

    app.route({
      ...declared('listMonitorCheckIns'),
      config: read,
      handler: async (request) => {
        const monitor = await monitorOf(projectOf(request).id, request.params.id);
        return { checkIns: monitor.kind === 'heartbeat' ? await uptimeRepository.checkIns(db, monitor.id, request.query.limit) : [] };
      },
    });
  };
}
