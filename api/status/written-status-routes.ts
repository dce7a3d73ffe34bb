import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  incidentItem,
  maintenanceItem,
  type MaintenanceRow,
  publicMonitorNames,
  publishStatusEvent,
  toMaintenance,
} from '../../domain/uptime/written-status.ts';
import type { Platform } from '../../platform/platform.ts';
import type { StatusIncident } from '../../schemas/api/status-incidents.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import type { ProjectRef } from '../auth/route-auth.ts';
import { AUTH } from '../auth/route-auth.ts';
import { declared } from '../declared-route.ts';
import { writtenStatusRepository as repo } from './written-status-repository.ts';

/**
 * `/v1/projects/:slug/uptime/incidents` and `/uptime/maintenance` (issue 43): what people write for the status page.
 *   incidents    a manual incident (title, impact, affected monitors, a first update) or the annotation of an automatic
 *                one (`automaticIncidentId`, once each, named after its monitor unless titled); updates move its status
 *                (investigating → identified → monitoring → resolved; an update after `resolved` reopens it)
 *   maintenance  a window (start, end, covered monitors, message); changed until it ends, cancelled until it ends
 * Every change publishes its `uptime.incident.*` / `uptime.maintenance.*` event (domain/uptime/written-status.ts);
 * `uptime.maintenance.started` / `.completed` come from the uptime monitor's sweep (processor/uptime/maintenance-sweep.ts).
 * Bounds (LIMITS.statusIncidents): sizes, open incidents and upcoming windows per project, updates per incident,
 * how long and how far ahead a window may be, changes a minute per project (429 rate_limited past it). Reads need `uptime:read`, changes `uptime:write`.
 */
const S = LIMITS.statusIncidents;
const DAY_MS = 86_400_000;
const noIncident = () => new ServiceError('not_found', 'no such incident');
const noMaintenance = () => new ServiceError('not_found', 'no such maintenance window');
const invalid = (path: string, problem: string) => new ServiceError('invalid_request', `${path}: ${problem}`, { fields: [{ path, message: problem }] });

/** A window's times, or why not: it ends after it starts and after now, lasts at most maintenanceMaxDays, starts within maintenanceAheadDays. */
function windowProblem(startsAt: number, endsAt: number, now: number): { path: string; problem: string } | undefined {
  if (!(endsAt > startsAt)) return { path: 'endsAt', problem: 'must be after startsAt' };
  if (endsAt <= now) return { path: 'endsAt', problem: 'must be in the future' };
  if (endsAt - startsAt > S.maintenanceMaxDays * DAY_MS) return { path: 'endsAt', problem: `a window lasts at most ${S.maintenanceMaxDays} days` };
  if (startsAt > now + S.maintenanceAheadDays * DAY_MS) return { path: 'startsAt', problem: `at most ${S.maintenanceAheadDays} days ahead` };
  return undefined;
}

export function writtenStatusRoutes(platform: Pick<Platform, 'db' | 'bus' | 'clock' | 'limiter'>): FastifyPluginAsyncZod {
  const { db, clock } = platform;
  const read = { auth: AUTH.project('uptime:read') };
  const write = { auth: AUTH.project('uptime:write') };

  /** Step 1 of every change: its project, after one hit of the project's budget of changes a minute (each one is an event to every subscriber). */
  async function changing(request: FastifyRequest): Promise<ProjectRef> {
    const project = projectOf(request);
    const rate = await platform.limiter.hit(`status-writes:${project.id}`, S.writesPerProjectPerMinute, 60_000);
    if (!rate.allowed)
      throw new ServiceError('rate_limited', `at most ${S.writesPerProjectPerMinute} incident and maintenance changes a minute per project`, {
        retryAfterSec: rate.retryAfterSec,
      });
    return project;
  }

  /** Every id names a monitor of the project (400 naming the first that does not), without repeats. */
  async function ownMonitors(project: ProjectRef, ids: string[]): Promise<string[]> {
    const unique = [...new Set(ids)];
    const mine = await repo.monitorsOf(db, project.id, unique);
    const stranger = unique.findIndex((id) => !mine.has(id));
    if (stranger >= 0) throw invalid(`monitorIds.${stranger}`, 'no such monitor in this project');
    return unique;
  }

  /** A window of the project that has not ended nor been cancelled (404, 409 otherwise): it may still change. */
  async function openWindowOf(project: ProjectRef, id: string, now: number): Promise<MaintenanceRow> {
    const was = await repo.maintenanceById(db, project.id, id);
    if (!was) throw noMaintenance();
    const state = toMaintenance(was, now).state;
    if (state === 'completed' || state === 'cancelled') throw new ServiceError('conflict', `the window is ${state}: schedule a new one`);
    return was;
  }

  async function incidentOf(project: ProjectRef, id: string): Promise<StatusIncident> {
    const incident = await repo.incident(db, project.id, id);
    if (!incident) throw noIncident();
    return incident;
  }

  /** Its event; `withUpdate`: the update just posted rides along as `update`. */
  async function announceIncident(project: ProjectRef, event: 'created' | 'updated' | 'resolved', i: StatusIncident, key: string, withUpdate: boolean) {
    const update = withUpdate ? i.updates.at(-1) : undefined;
    await publishStatusEvent(platform, {
      projectId: project.id,
      projectSlug: project.slug,
      event: `uptime.incident.${event}`,
      key,
      data: {
        incident: incidentItem(i, await publicMonitorNames(db, project.id)),
        ...(update ? { update: { status: update.status, message: update.message, at: update.at } } : {}),
      },
    });
  }

  async function announceMaintenance(project: ProjectRef, event: 'scheduled' | 'cancelled', row: MaintenanceRow) {
    await publishStatusEvent(platform, {
      projectId: project.id,
      projectSlug: project.slug,
      event: `uptime.maintenance.${event}`,
      key: row.id,
      data: { maintenance: maintenanceItem(toMaintenance(row, clock.now()), await publicMonitorNames(db, project.id)) },
    });
  }

  return async (app) => {
    app.route({
      ...declared('createStatusIncident'),
      config: write,
      handler: async (request, reply) => {
        const project = await changing(request);
        const body = request.body;
        // 1. what it annotates, if anything
        const automatic = body.automaticIncidentId === undefined ? undefined : await repo.automaticIncident(db, project.id, body.automaticIncidentId);
        if (body.automaticIncidentId !== undefined && !automatic) throw new ServiceError('not_found', 'no such automatic incident');
        const title = body.title ?? (automatic ? `${automatic.name} is down` : undefined);
        if (!title) throw invalid('title', 'required unless annotating an automatic incident');
        // 2. bounds
        const monitorIds = await ownMonitors(project, automatic && !body.monitorIds.length ? [automatic.monitor_id] : body.monitorIds);
        if ((await repo.countOpen(db, project.id)) >= S.openPerProject)
          throw new ServiceError('conflict', `a project has at most ${S.openPerProject} open incidents: resolve one first`);
        // 3. store
        const id = await repo.createIncident(
          db,
          project.id,
          { title, impact: body.impact, monitorIds, status: body.status, message: body.message, automaticIncidentId: body.automaticIncidentId ?? null },
          clock.now(),
        );
        if (!id) throw new ServiceError('conflict', 'that automatic incident is annotated already: post an update to its annotation');
        // 4. announce
        const incident = await incidentOf(project, id);
        await announceIncident(project, 'created', incident, id, true);
        return reply.code(201).send({ incident });
      },
    });

    app.route({
      ...declared('getStatusIncident'),
      config: read,
      handler: async (request) => ({ incident: await incidentOf(projectOf(request), request.params.incidentId) }),
    });

    app.route({
      ...declared('updateStatusIncident'),
      config: write,
      handler: async (request) => {
        const project = await changing(request);
        const was = await incidentOf(project, request.params.incidentId);
        const monitorIds = request.body.monitorIds === undefined ? undefined : await ownMonitors(project, request.body.monitorIds);
        if (!(await repo.changeIncident(db, project.id, was.id, { ...request.body, monitorIds }))) throw noIncident();
        const incident = await incidentOf(project, was.id);
        await announceIncident(project, 'updated', incident, `${was.id}:${clock.now()}`, false);
        return { incident };
      },
    });

    app.route({
      ...declared('addStatusIncidentUpdate'),
      config: write,
      handler: async (request, reply) => {
        const project = await changing(request);
        const was = await incidentOf(project, request.params.incidentId);
        if ((await repo.countUpdates(db, was.id)) >= S.updatesPerIncident)
          throw new ServiceError('conflict', `an incident has at most ${S.updatesPerIncident} updates`);
        if (was.status === 'resolved' && request.body.status !== 'resolved' && (await repo.countOpen(db, project.id)) >= S.openPerProject)
          throw new ServiceError('conflict', `a project has at most ${S.openPerProject} open incidents: resolve one first`);
        await repo.addUpdate(db, was.id, request.body.status, request.body.message, clock.now());
        const incident = await incidentOf(project, was.id);
        const update = incident.updates.at(-1)!;
        await announceIncident(project, request.body.status === 'resolved' ? 'resolved' : 'updated', incident, update.id, true);
        return reply.code(201).send({ incident });
      },
    });

    app.route({
      ...declared('listMaintenance'),
      config: read,
      handler: async (request) => {
        const now = clock.now();
        const rows = await repo.maintenance(db, projectOf(request).id, { withCancelled: true, limit: 200 });
        const order = { in_progress: 0, scheduled: 1, completed: 2, cancelled: 3 } as const;
        const all = rows.map((r) => toMaintenance(r, now));
        return { maintenance: all.sort((a, b) => order[a.state] - order[b.state]) };
      },
    });

    app.route({
      ...declared('scheduleMaintenance'),
      config: write,
      handler: async (request, reply) => {
        const project = await changing(request);
        const body = request.body;
        const now = clock.now();
        const [startsAt, endsAt] = [Date.parse(body.startsAt), Date.parse(body.endsAt)];
        const problem = windowProblem(startsAt, endsAt, now);
        if (problem) throw invalid(problem.path, problem.problem);
        const monitorIds = await ownMonitors(project, body.monitorIds);
        if ((await repo.countUpcomingMaintenance(db, project.id, now)) >= S.upcomingMaintenancePerProject)
          throw new ServiceError('conflict', `a project has at most ${S.upcomingMaintenancePerProject} maintenance windows that have not ended`);
        const row = await repo.createMaintenance(db, project.id, { title: body.title, message: body.message, monitorIds, startsAt, endsAt }, now);
        await announceMaintenance(project, 'scheduled', row);
        return reply.code(201).send({ maintenance: toMaintenance(row, now) });
      },
    });

    app.route({
      ...declared('updateMaintenance'),
      config: write,
      handler: async (request) => {
        const project = await changing(request);
        const now = clock.now();
        const was = await openWindowOf(project, request.params.maintenanceId, now);
        const b = request.body;
        const startsAt = b.startsAt === undefined ? new Date(was.starts_at).getTime() : Date.parse(b.startsAt);
        const endsAt = b.endsAt === undefined ? new Date(was.ends_at).getTime() : Date.parse(b.endsAt);
        const problem = windowProblem(startsAt, endsAt, now);
        if (problem) throw invalid(problem.path, problem.problem);
        const monitorIds = b.monitorIds === undefined ? was.monitor_ids : await ownMonitors(project, b.monitorIds);
        const row = await repo.changeMaintenance(
          db,
          was.id,
          { title: b.title ?? was.title, message: b.message ?? was.message, monitorIds, startsAt, endsAt },
          now,
        );
        if (!row) throw noMaintenance();
        return { maintenance: toMaintenance(row, now) };
      },
    });

    app.route({
      ...declared('cancelMaintenance'),
      config: write,
      handler: async (request) => {
        const project = await changing(request);
        const now = clock.now();
        const was = await openWindowOf(project, request.params.maintenanceId, now);
        const row = await repo.cancelMaintenance(db, was.id, now);
        if (!row) throw new ServiceError('conflict', 'the window is cancelled already');
        await announceMaintenance(project, 'cancelled', row);
        return { maintenance: toMaintenance(row, now) };
      },
    });
  };
}
