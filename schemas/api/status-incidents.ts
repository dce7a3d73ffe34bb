import { z } from 'zod';
import { LIMITS } from '../limits.ts';
import { errorAnswers, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';

/**
 * Incidents and maintenance people write (issue 43), under `/v1/projects/:slug/uptime/`: a manual incident (title,
 * impact, affected monitors) and its updates over time (investigating → identified → monitoring → resolved), or the
 * annotation of an automatic incident (`automaticIncidentId`); and maintenance windows. Both show on the project's
 * status page (`GET /v1/status/:slug` and its renderers) and go out as `uptime.incident.*` / `uptime.maintenance.*`
 * project events. Reads need `uptime:read`, changes `uptime:write`.
 */
const S = LIMITS.statusIncidents;

export const INCIDENT_IMPACTS = ['none', 'minor', 'major', 'critical'] as const;
export const INCIDENT_STATUSES = ['investigating', 'identified', 'monitoring', 'resolved'] as const;
export const MAINTENANCE_STATES = ['scheduled', 'in_progress', 'completed', 'cancelled'] as const;

const title = z.string().trim().min(1).max(S.titleChars);
const message = z.string().trim().min(1).max(S.messageChars).describe('plain text, shown as written (never markup)');
const monitorIds = z
  .array(z.string().min(1).max(64))
  .max(LIMITS.uptime.maxMonitorsPerProject)
  .describe("the affected monitors: ids of the project's monitors (only public ones show on the page)");
const instant = z.iso.datetime({ offset: true }).describe('ISO 8601 with a zone, e.g. 2026-11-27T22:00:00Z');

export const IncidentUpdateSchema = z.object({ id: z.string(), status: z.enum(INCIDENT_STATUSES), message: z.string(), at: z.string() });
export const StatusIncidentSchema = z.object({
  id: z.string(),
  kind: z.enum(['manual', 'automatic']).describe('automatic: the annotation of an incident a monitor opened'),
  automaticIncidentId: z.string().nullable(),
  title: z.string(),
  impact: z.enum(INCIDENT_IMPACTS),
  status: z.enum(INCIDENT_STATUSES).describe("the latest update's"),
  monitorIds: z.array(z.string()),
  createdAt: z.string(),
  resolvedAt: z.string().nullable(),
  updates: z.array(IncidentUpdateSchema).describe('oldest first'),
});
export type StatusIncident = z.infer<typeof StatusIncidentSchema>;

export const CreateStatusIncidentBody = z
  .object({
    title: title.optional().describe('required unless annotating an automatic incident (its monitor names it then)'),
    impact: z.enum(INCIDENT_IMPACTS).default('minor'),
    monitorIds: monitorIds.default([]),
    status: z.enum(INCIDENT_STATUSES).default('investigating').describe("the first update's"),
    message: message.describe('the first update'),
    automaticIncidentId: z.string().min(1).max(64).optional().describe("annotate this automatic incident of the project's monitors (once each)"),
  })
  .strict();
export type CreateStatusIncidentBody = z.input<typeof CreateStatusIncidentBody>;
export const UpdateStatusIncidentBody = z
  .object({ title, impact: z.enum(INCIDENT_IMPACTS), monitorIds })
  .partial()
  .strict();
export type UpdateStatusIncidentBody = z.input<typeof UpdateStatusIncidentBody>;
export const AddIncidentUpdateBody = z.object({ status: z.enum(INCIDENT_STATUSES), message }).strict();
export type AddIncidentUpdateBody = z.input<typeof AddIncidentUpdateBody>;
export const StatusIncidentAnswer = z.object({ incident: StatusIncidentSchema });
export type StatusIncidentAnswer = z.infer<typeof StatusIncidentAnswer>;
export const StatusIncidentParams = z.object({ slug: z.string(), incidentId: z.string().max(64) });

export const MaintenanceSchema = z.object({
  id: z.string(),
  title: z.string(),
  message: z.string(),
  monitorIds: z.array(z.string()),
  startsAt: z.string(),
  endsAt: z.string(),
  state: z.enum(MAINTENANCE_STATES),
  createdAt: z.string(),
  cancelledAt: z.string().nullable(),
});
export type Maintenance = z.infer<typeof MaintenanceSchema>;
export const ScheduleMaintenanceBody = z
  .object({
    title,
    message: z.string().trim().max(S.messageChars).default(''),
    monitorIds: monitorIds.min(1),
    startsAt: instant,
    endsAt: instant,
  })
  .strict();
export type ScheduleMaintenanceBody = z.input<typeof ScheduleMaintenanceBody>;
export const UpdateMaintenanceBody = z
  .object({ title, message: z.string().trim().max(S.messageChars), monitorIds: monitorIds.min(1), startsAt: instant, endsAt: instant })
  .partial()
  .strict();
export type UpdateMaintenanceBody = z.input<typeof UpdateMaintenanceBody>;
export const MaintenanceAnswer = z.object({ maintenance: MaintenanceSchema });
export type MaintenanceAnswer = z.infer<typeof MaintenanceAnswer>;
export const MaintenanceList = z.object({ maintenance: z.array(MaintenanceSchema).describe('upcoming and in progress first, then the newest') });
export type MaintenanceList = z.infer<typeof MaintenanceList>;
export const MaintenanceParams = z.object({ slug: z.string(), maintenanceId: z.string().max(64) });

const tags = ['uptime'];

/** The family's routes (paths in route-table.ts). */
export const statusIncidentRoutes = routeShapes({
  createStatusIncident: {
    tags,
    summary: 'Write an incident for the status page (title, impact, affected monitors, first update), or annotate an automatic one',
    params: SlugParams,
    body: CreateStatusIncidentBody,
    response: { 201: StatusIncidentAnswer, ...errorAnswers(400, 404, 409) },
  },
  getStatusIncident: {
    tags,
    summary: 'A written incident with its updates',
    params: StatusIncidentParams,
    response: { 200: StatusIncidentAnswer, ...errorAnswers(404) },
  },
  updateStatusIncident: {
    tags,
    summary: "Change a written incident's title, impact or affected monitors",
    params: StatusIncidentParams,
    body: UpdateStatusIncidentBody,
    response: { 200: StatusIncidentAnswer, ...errorAnswers(400, 404) },
  },
  addStatusIncidentUpdate: {
    tags,
    summary: 'Post an update (investigating, identified, monitoring, resolved); `resolved` resolves it, a later update reopens it',
    params: StatusIncidentParams,
    body: AddIncidentUpdateBody,
    response: { 201: StatusIncidentAnswer, ...errorAnswers(400, 404, 409) },
  },
  listMaintenance: { tags, summary: "The project's maintenance windows", params: SlugParams, response: { 200: MaintenanceList } },
  scheduleMaintenance: {
    tags,
    summary: 'Schedule maintenance: while it is in progress its monitors open no incident and send no alert, and the page says so',
    params: SlugParams,
    body: ScheduleMaintenanceBody,
    response: { 201: MaintenanceAnswer, ...errorAnswers(400, 409) },
  },
  updateMaintenance: {
    tags,
    summary: 'Change a maintenance window that has not ended',
    params: MaintenanceParams,
    body: UpdateMaintenanceBody,
    response: { 200: MaintenanceAnswer, ...errorAnswers(400, 404, 409) },
  },
  cancelMaintenance: {
    tags,
    summary: 'Cancel a maintenance window (one in progress ends now)',
    params: MaintenanceParams,
    response: { 200: MaintenanceAnswer, ...errorAnswers(404, 409) },
  },
});
