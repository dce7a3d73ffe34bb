import { z } from 'zod';
import { LIMITS } from '../limits.ts';
import { CHECK_ERRORS, CHECK_IN_STATUSES, MONITOR_KINDS, MONITOR_STATES } from '../uptime.ts';
import { errorAnswers, NoContent, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';
import { INCIDENT_IMPACTS, INCIDENT_STATUSES, MAINTENANCE_STATES, StatusIncidentSchema } from './status-incidents.ts';
import { ROUTES } from './route-table.ts';

/**
 * `/v1/projects/:slug/uptime` (spec §4.1 uptime, issue 26): a project's monitors, their latest checks and incidents;
 * and `GET /v1/status/:slug` (§4.2), the public status JSON of its public monitors.
 */
const U = LIMITS.uptime;
const HB = LIMITS.uptime.heartbeat;

/** A heartbeat's schedule, as Sentry's monitor_config spells it: a crontab (five fields or an @alias) or an interval. */
export const HeartbeatScheduleSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('crontab'), value: z.string().trim().min(1).max(128).describe("e.g. `0 * * * *`, `@daily`; in the monitor's timezone") }).strict(),
  z
    .object({
      type: z.literal('interval'),
      value: z.number().int().min(1).max(1_000_000),
      unit: z.enum(['minute', 'hour', 'day', 'week', 'month', 'year']),
    })
    .strict(),
]);
export type HeartbeatSchedule = z.infer<typeof HeartbeatScheduleSchema>;

export const CheckInSchema = z.object({
  id: z.string().describe("the SDK's check-in id (`missed:<ms>` for a check-in that never came)"),
  status: z.enum(CHECK_IN_STATUSES),
  startedAt: z.string().describe('when it came (a missed one: when it was expected)'),
  finishedAt: z.string().nullable(),
  durationMs: z.number().int().nullable(),
  environment: z.string().nullable(),
  release: z.string().nullable(),
});
export type CheckIn = z.infer<typeof CheckInSchema>;

export const HeartbeatSchema = z.object({
  slug: z.string().describe("the name SDKs check in with (`monitorSlug`, the HTTP cron form's path)"),
  schedule: HeartbeatScheduleSchema,
  timezone: z.string().describe('IANA time zone of a crontab'),
  checkinMarginMin: z.number().int().describe('minutes after the expected time before a check-in counts as missed'),
  maxRuntimeMin: z.number().int().describe('minutes an in-progress check-in may run before it times out'),
  recoveriesToUp: z.number().int().describe('consecutive ok check-ins that end an incident'),
  lastCheckIn: z.object({ at: z.string(), status: z.enum(CHECK_IN_STATUSES) }).nullable(),
  nextExpectedAt: z.string().nullable().describe('when the next check-in is due (missed once the margin has passed too)'),
});
export type Heartbeat = z.infer<typeof HeartbeatSchema>;

export const MonitorSchema = z.object({
  id: z.string().describe('`mon_...`'),
  kind: z.enum(MONITOR_KINDS).describe('`url`: checked over HTTPS; `heartbeat`: a scheduled job that checks in (Sentry cron monitors)'),
  name: z.string(),
  url: z.string().describe("'' for a heartbeat; the URL fields below are a URL monitor's"),
  method: z.enum(['GET', 'HEAD']),
  intervalSec: z.number().int(),
  timeoutMs: z.number().int(),
  expectedStatus: z.object({ min: z.number().int(), max: z.number().int() }).describe('inclusive range of statuses that count as up'),
  bodyContains: z.string().nullable().describe('text the first 64 KiB of the body must contain'),
  failuresToDown: z.number().int().describe('consecutive failures before the monitor is down'),
  public: z.boolean().describe(`shown on the status page (GET ${ROUTES.publicStatus.path})`),
  showUrl: z.boolean().describe('the status page shows the URL too'),
  paused: z.boolean(),
  site: z.boolean().describe("the project's live site's monitor, made when its first production deploy went live"),
  state: z.enum(MONITOR_STATES),
  lastCheck: z
    .object({ at: z.string(), ok: z.boolean(), status: z.number().int().nullable(), ms: z.number().int(), error: z.enum(CHECK_ERRORS).nullable() })
    .nullable(),
  heartbeat: HeartbeatSchema.nullable().describe("a heartbeat's schedule and check-ins; null for a URL monitor"),
  createdAt: z.string(),
});
export type Monitor = z.infer<typeof MonitorSchema>;

const fields = {
  name: z.string().trim().min(1).max(100),
  url: z
    .string()
    .max(2048)
    .describe(
      'https only (http:// and loopback too on a developer machine with ALLOW_LOCAL_OUTBOUND); the outbound URL guard applies at save and at every check',
    ),
  method: z.enum(['GET', 'HEAD']),
  intervalSec: z.number().int().min(U.intervalSec.min).max(U.intervalSec.max),
  timeoutMs: z.number().int().min(U.timeoutMs.min).max(U.timeoutMs.max),
  expectedStatus: z
    .object({ min: z.number().int().min(100).max(599), max: z.number().int().min(100).max(599) })
    .strict()
    .refine((r) => r.min <= r.max, 'min must not be above max'),
  bodyContains: z.string().min(1).max(200).nullable(),
  failuresToDown: z.number().int().min(U.failuresToDown.min).max(U.failuresToDown.max),
  public: z.boolean(),
  showUrl: z.boolean(),
  paused: z.boolean(),
};
const heartbeatFields = {
  schedule: HeartbeatScheduleSchema,
  timezone: z.string().min(1).max(64),
  checkinMarginMin: z.number().int().min(0).max(HB.checkinMarginMin.max),
  maxRuntimeMin: z.number().int().min(HB.maxRuntimeMin.min).max(HB.maxRuntimeMin.max),
  failuresToDown: z.number().int().min(HB.failuresToDown.min).max(HB.failuresToDown.max),
  recoveriesToUp: z.number().int().min(HB.recoveriesToUp.min).max(HB.recoveriesToUp.max),
};
export const CreateMonitorBody = z
  .object({
    kind: z.literal('url').optional(),
    name: fields.name,
    url: fields.url,
    method: fields.method.default('GET'),
    intervalSec: fields.intervalSec.default(U.intervalSec.default),
    timeoutMs: fields.timeoutMs.default(U.timeoutMs.default),
    expectedStatus: fields.expectedStatus.default({ min: 200, max: 399 }),
    bodyContains: fields.bodyContains.default(null),
    failuresToDown: fields.failuresToDown.default(U.failuresToDown.default),
    public: fields.public.default(false),
    showUrl: fields.showUrl.default(false),
    paused: fields.paused.default(false),
  })
  .strict();
export type CreateMonitorBody = z.input<typeof CreateMonitorBody>;
/** A heartbeat made by hand (SDKs make theirs with a check-in's monitor_config); its name is its slug unless given. */
export const CreateHeartbeatBody = z
  .object({
    kind: z.literal('heartbeat'),
    slug: z
      .string()
      .min(1)
      .max(50)
      .regex(/^[a-z0-9_-]+$/, 'lower-case letters, digits, - and _'),
    name: fields.name.optional(),
    schedule: heartbeatFields.schedule,
    timezone: heartbeatFields.timezone.default('UTC'),
    checkinMarginMin: heartbeatFields.checkinMarginMin.default(HB.checkinMarginMin.default),
    maxRuntimeMin: heartbeatFields.maxRuntimeMin.default(HB.maxRuntimeMin.default),
    failuresToDown: heartbeatFields.failuresToDown.default(HB.failuresToDown.default),
    recoveriesToUp: heartbeatFields.recoveriesToUp.default(HB.recoveriesToUp.default),
    public: fields.public.default(false),
    paused: fields.paused.default(false),
  })
  .strict();
export type CreateHeartbeatBody = z.input<typeof CreateHeartbeatBody>;
export const CreateAnyMonitorBody = z.union([CreateHeartbeatBody, CreateMonitorBody]);
/** A change; the URL fields apply to URL monitors, `schedule` to `recoveriesToUp` to heartbeats (400 otherwise). */
export const UpdateMonitorBody = z
  .object({
    ...fields,
    schedule: heartbeatFields.schedule,
    timezone: heartbeatFields.timezone,
    checkinMarginMin: heartbeatFields.checkinMarginMin,
    maxRuntimeMin: heartbeatFields.maxRuntimeMin,
    recoveriesToUp: heartbeatFields.recoveriesToUp,
  })
  .partial()
  .strict();
export type UpdateMonitorBody = z.input<typeof UpdateMonitorBody>;
export const MonitorAnswer = z.object({ monitor: MonitorSchema });
export type MonitorAnswer = z.infer<typeof MonitorAnswer>;
export const MonitorList = z.object({ monitors: z.array(MonitorSchema), statusPage: z.string().describe('the public status JSON of this project') });
export type MonitorList = z.infer<typeof MonitorList>;
export const MonitorParams = z.object({ slug: z.string(), id: z.string().max(64) });

export const CheckSchema = z.object({
  at: z.string(),
  ok: z.boolean(),
  status: z.number().int().nullable(),
  ms: z.number().int(),
  error: z.enum(CHECK_ERRORS).nullable(),
  detail: z.string().nullable(),
});
export type Check = z.infer<typeof CheckSchema>;
export const CheckList = z.object({ checks: z.array(CheckSchema) });
export type CheckList = z.infer<typeof CheckList>;
export const ChecksQuery = z.object({ limit: z.coerce.number().int().min(1).max(500).default(50) });
export const CheckInList = z.object({ checkIns: z.array(CheckInSchema) });
export type CheckInList = z.infer<typeof CheckInList>;
export const CheckInsQuery = z.object({ limit: z.coerce.number().int().min(1).max(HB.checkInsKept).default(50) });

export const IncidentSchema = z.object({
  id: z.string(),
  monitorId: z.string(),
  monitor: z.string().describe("the monitor's name"),
  startedAt: z.string(),
  endedAt: z.string().nullable().describe('null while it lasts'),
  cause: z.object({ error: z.enum(CHECK_ERRORS), status: z.number().int().nullable(), detail: z.string().nullable() }),
});
export type Incident = z.infer<typeof IncidentSchema>;
export const IncidentList = z.object({
  incidents: z.array(IncidentSchema).describe('the incidents monitors opened'),
  written: z.array(StatusIncidentSchema).describe('the incidents people wrote and their annotations of automatic ones (issue 43), open ones first'),
});
export type IncidentList = z.infer<typeof IncidentList>;

export const UptimeSettings = z.object({ siteMonitor: z.boolean().describe('give the live site a monitor when its first production deploy goes live') });
export type UptimeSettings = z.infer<typeof UptimeSettings>;
export const UpdateUptimeSettings = UptimeSettings.strict();

/** `GET /v1/status/:slug`: the project's public monitors and nothing else about the project. */
export const StatusPage = z.object({
  status: z
    .enum(['up', 'down', 'partial', 'pending', 'maintenance'])
    .describe('down: every public monitor is down; partial: some are; maintenance: every one not paused is under maintenance'),
  monitors: z.array(
    z.object({
      id: z.string(),
      name: z.string(),
      url: z.string().optional().describe('only when the owner shows it'),
      state: z.enum([...MONITOR_STATES, 'maintenance']).describe('maintenance: a maintenance window covering it is in progress'),
      uptime: z
        .object({ '24h': z.number().nullable(), '7d': z.number().nullable(), '90d': z.number().nullable() })
        .describe('percent of checks up; null without checks'),
      daily: z.array(z.object({ date: z.string(), uptime: z.number().nullable(), checks: z.number().int() })).describe('the last 90 UTC days, oldest first'),
      responseTimes24h: z
        .array(z.object({ at: z.string(), ms: z.number().int() }))
        .optional()
        .describe('the average response time of successful checks per hour over the last 24 hours, oldest first; hours without one are left out'),
    }),
  ),
  incidents: z.array(
    z.object({
      monitorId: z.string().describe("a written incident: its first affected public monitor's, or '' when it names none"),
      monitor: z.string().describe("a written incident: its affected public monitors' names, comma-separated"),
      startedAt: z.string(),
      endedAt: z.string().nullable(),
      cause: z.enum(CHECK_ERRORS).optional().describe('automatic incidents only'),
      // Issue 43: what people wrote. A manual incident carries all of these; an annotated automatic one too.
      id: z.string().optional(),
      kind: z.enum(['automatic', 'manual']).optional(),
      title: z.string().optional(),
      impact: z.enum(INCIDENT_IMPACTS).optional(),
      status: z.enum(INCIDENT_STATUSES).optional(),
      monitorIds: z.array(z.string()).optional().describe('the affected public monitors'),
      updates: z
        .array(z.object({ status: z.enum(INCIDENT_STATUSES), message: z.string(), at: z.string() }))
        .optional()
        .describe('the newest 10, oldest first'),
    }),
  ),
  maintenance: z
    .array(
      z.object({
        id: z.string(),
        title: z.string(),
        message: z.string(),
        monitorIds: z.array(z.string()).describe('the covered public monitors'),
        startsAt: z.string(),
        endsAt: z.string(),
        state: z.enum(MAINTENANCE_STATES.filter((s) => s !== 'cancelled') as ['scheduled', 'in_progress', 'completed']),
      }),
    )
    .optional()
    .describe('maintenance windows upcoming, in progress and ended in the last 14 days (not cancelled ones)'),
  updatedAt: z.string(),
});
export type StatusPage = z.infer<typeof StatusPage>;
export const StatusParams = z.object({ slug: z.string().max(100) });
/** A badge: the overall state, or (`monitor`) one public monitor's uptime over `window`. */
export const StatusBadgeQuery = z.object({
  monitor: z.string().max(64).optional(),
  window: z.enum(['24h', '7d', '90d']).default('24h'),
  /** A cache-buster a README or widget may add; not read. */
  _: z.string().max(64).optional(),
});

const tags = ['uptime'];

/** The family's routes (paths in route-table.ts). */
export const uptimeRoutes = routeShapes({
  listMonitors: { tags, summary: "The project's monitors and the address of its public status JSON", params: SlugParams, response: { 200: MonitorList } },
  createMonitor: {
    tags,
    summary: 'Create a monitor: a URL to check, or (`kind: heartbeat`) a scheduled job that checks in',
    params: SlugParams,
    body: CreateAnyMonitorBody,
    response: { 201: MonitorAnswer, ...errorAnswers(400, 409) },
  },
  getUptimeSettings: { tags, summary: 'Whether the live site gets a monitor of its own', params: SlugParams, response: { 200: UptimeSettings } },
  updateUptimeSettings: {
    tags,
    summary: 'Switch the live site monitor on or off',
    params: SlugParams,
    body: UpdateUptimeSettings,
    response: { 200: UptimeSettings },
  },
  listIncidents: { tags, summary: "The project's incidents, open ones first, then the newest", params: SlugParams, response: { 200: IncidentList } },
  getMonitor: { tags, summary: 'A monitor', params: MonitorParams, response: { 200: MonitorAnswer, ...errorAnswers(404) } },
  updateMonitor: {
    tags,
    summary: 'Change a monitor; `paused: true` stops its checks, `false` checks it at once',
    params: MonitorParams,
    body: UpdateMonitorBody,
    response: { 200: MonitorAnswer, ...errorAnswers(400, 404) },
  },
  deleteMonitor: { tags, summary: 'Delete a monitor, its incidents and rollups', params: MonitorParams, response: { 204: NoContent, ...errorAnswers(404) } },
  listMonitorChecks: {
    tags,
    summary: "A monitor's latest checks, newest first (kept 30 days)",
    params: MonitorParams,
    querystring: ChecksQuery,
    response: { 200: CheckList, ...errorAnswers(404) },
  },
  listMonitorCheckIns: {
    tags,
    summary: "A heartbeat's latest check-ins, newest first (the last 200 kept)",
    params: MonitorParams,
    querystring: CheckInsQuery,
    response: { 200: CheckInList, ...errorAnswers(404) },
  },
  publicStatus: {
    tags,
    summary: "A project's public status JSON: its public monitors, their uptime and incidents (no credential; CORS open; cached 5 s)",
    params: StatusParams,
    // Public, read by widgets and pages on other sites: a cache-buster (`?_=1700000000`, jQuery's cache: false) is
    // passed through unread, not refused.
    querystring: z.object({}).passthrough(),
    response: { 200: StatusPage, 304: NoContent.describe('the ETag of If-None-Match still holds'), ...errorAnswers(404, 429) },
  },
  statusPage: {
    tags,
    summary: "A project's status page (HTML, no script): overall state, public monitors, incidents, maintenance, a subscribe form",
    description:
      'Rendered from the status JSON, cached as it is (5 s) with an ETag of its own. A verified custom domain marked `serves: status` answers the same page at `/`.',
    params: StatusParams,
    querystring: z.object({}).passthrough(),
    response: { 200: z.string().describe('text/html'), 304: NoContent.describe('the ETag of If-None-Match still holds'), ...errorAnswers(404, 429) },
  },
  statusBadge: {
    tags,
    summary: "A badge (SVG) of the overall state, or of one public monitor's uptime over a window (`?monitor=<id>&window=24h|7d|90d`)",
    params: StatusParams,
    querystring: StatusBadgeQuery,
    response: {
      200: z.string().describe('image/svg+xml'),
      304: NoContent.describe('the ETag of If-None-Match still holds'),
      ...errorAnswers(400, 404, 429),
    },
  },
  statusFeed: {
    tags,
    summary: "An Atom feed of the status page's incidents (with their updates) and maintenance",
    params: StatusParams,
    querystring: z.object({}).passthrough(),
    response: { 200: z.string().describe('application/atom+xml'), 304: NoContent.describe('the ETag of If-None-Match still holds'), ...errorAnswers(404, 429) },
  },
});
