import { z } from 'zod';
import { AnalyticsEventSchema } from '../analytics-event.ts';
import type { RefusalReason } from '../edge-refusals.ts';
import { ErrorBatchSchema } from '../error-event.ts';
import { FlagAnswerSchema } from '../flags.ts';
import { SessionUpdateSchema } from '../bus/client-items.ts';
import { LIMITS } from '../limits.ts';

/**
 * The routes the uWebSockets.js edge serves (ingest/), which Fastify never sees: their bodies, answers and the
 * refusals (schemas/edge-refusals.ts) each can answer with. `GET /v1/openapi.json` is written from this table
 * (api/meta/edge-openapi.ts); the edge validates with the same schemas and answers with these shapes; a test ties
 * each route's refusals to the ones its code can produce.
 */

/** `202 { ingested }`: how many events were taken. */
export const IngestedAnswer = z.object({ ingested: z.number().int() });
export type IngestedAnswer = z.infer<typeof IngestedAnswer>;

/** One malformed analytics event, dropped by its index in the batch, with what is wrong with it. */
export const RejectedEventSchema = z.object({ index: z.number().int(), fields: z.array(z.object({ path: z.string(), message: z.string() })) });
export type RejectedEvent = z.infer<typeof RejectedEventSchema>;
export const AnalyticsAcceptedAnswer = IngestedAnswer.extend({
  rejected: z.array(RejectedEventSchema).describe('dropped events, by index; the rest were taken'),
});
export type AnalyticsAcceptedAnswer = z.infer<typeof AnalyticsAcceptedAnswer>;
/** The analytics batch as a caller sends it (each event is validated on its own: a bad one is dropped, not the batch). */
export const AnalyticsBatchBody = z.object({ batch: z.array(AnalyticsEventSchema).min(LIMITS.analyticsBatch.minEvents).max(LIMITS.analyticsBatch.maxEvents) });

export const FlagsAnswer = z.object({ flags: z.record(z.string(), FlagAnswerSchema) });
export type FlagsAnswer = z.infer<typeof FlagsAnswer>;
export const FlagsQuery = z.object({
  distinctId: z.string().min(1).max(LIMITS.analyticsFields.distinctId),
  keys: z.string().optional().describe(`comma-separated flag keys (at most ${LIMITS.flagsQuery.maxKeys}); absent: every flag`),
  properties: z.string().optional().describe('a JSON object the conditions test'),
  deployId: z.string().optional().describe('without an Origin: the deploy whose environment applies (or gitSha)'),
});

/** Sentry's own answer to an envelope or a store request. */
export const SentryAnswer = z.object({ id: z.string().describe('the event id') });
export type SentryAnswer = z.infer<typeof SentryAnswer>;

/** Where the edge serves each route: the route table's edge half (route-table.ts). */
export { EDGE_PATHS } from './route-table.ts';
import type { EDGE_PATHS } from './route-table.ts';
export type EdgeRouteName = keyof typeof EDGE_PATHS;

export interface EdgeAnswer {
  description: string;
  schema?: z.ZodType;
}

export interface EdgeRoute {
  name: EdgeRouteName;
  method: 'get' | 'post';
  summary: string;
  /** An ingest key (Authorization: Bearer, or x-service-analytics-key) is the credential. */
  ingestKey: boolean;
  body?: { contentType: string; schema: z.ZodType };
  query?: z.ZodObject;
  answers: Record<number, EdgeAnswer>;
  /** Every refusal the route can answer with; the status and code of each come from the refusal table. */
  refusals: readonly RefusalReason[];
}

/** What every batch route refuses with: admission (credential, origin, media type, size, paused, disk) and publishing. */
const BATCH_ADMISSION = [
  'unauthorized',
  'forbidden_credential',
  'origin_not_allowed',
  'unsupported_media_type',
  'too_large',
  'paused',
  'rate_limited',
  'limiter_unavailable',
  'bus_unavailable',
  'disk_full',
  'internal',
] as const;
/** The same-origin routes on a site's host: the host must be a site, and its project must have an ingest key to attach. */
const SITE = ['not_a_site', 'no_site_key'] as const;
const paused: EdgeAnswer = { description: 'the project is paused: taken and dropped' };
const SITE_NOTE = " On a site's own host, with no credential: the platform attaches the project's ingest key (§7.1).";

const errors = {
  method: 'post',
  summary: `Error ingest (§7.2): ${LIMITS.errorBatch.minEvents}-${LIMITS.errorBatch.maxEvents} events, at most ${LIMITS.errorBatch.maxBodyBytes} bytes`,
  body: { contentType: 'application/json', schema: ErrorBatchSchema },
  answers: { 202: { description: 'accepted', schema: IngestedAnswer }, 204: paused },
  refusals: [...BATCH_ADMISSION, 'invalid_request', 'capped'],
} as const satisfies Omit<EdgeRoute, 'name' | 'ingestKey'>;

const sentry = {
  method: 'post',
  ingestKey: false,
  body: { contentType: 'application/x-sentry-envelope', schema: z.string() },
  answers: { 200: { description: "Sentry's answer", schema: SentryAnswer }, 204: paused },
  refusals: [...BATCH_ADMISSION, 'invalid_request', 'capped', 'project_mismatch', 'too_large_decompressed', 'unsupported_encoding'],
} as const satisfies Omit<EdgeRoute, 'name' | 'summary'>;

const analytics = {
  method: 'post',
  summary: `Analytics capture: ${LIMITS.analyticsBatch.minEvents}-${LIMITS.analyticsBatch.maxEvents} events, at most ${LIMITS.analyticsBatch.maxBodyBytes} bytes; a malformed event is dropped and named in \`rejected\`, the rest are taken`,
  body: { contentType: 'application/json', schema: AnalyticsBatchBody },
  answers: { 202: { description: 'accepted', schema: AnalyticsAcceptedAnswer }, 204: paused },
  refusals: [...BATCH_ADMISSION, 'invalid_request', 'quota_exceeded'],
} as const satisfies Omit<EdgeRoute, 'name' | 'ingestKey'>;

/** `POST /v1/sessions/i` (issue 40): session updates as the client-items topic holds them (schemas/bus/client-items.ts). */
export const SessionsBatchBody = z.object({
  sessions: z.array(SessionUpdateSchema).min(LIMITS.sessionsBatch.minSessions).max(LIMITS.sessionsBatch.maxSessions),
});
export type SessionsBatchBody = z.infer<typeof SessionsBatchBody>;

const sessions = {
  method: 'post',
  summary: `Release health (issue 40): ${LIMITS.sessionsBatch.minSessions}-${LIMITS.sessionsBatch.maxSessions} session updates (init on a session's first, then its status), at most ${LIMITS.sessionsBatch.maxBodyBytes} bytes; limited on their own (${LIMITS.sessionIngestRate.perKeyAndIpPerMinute} requests a minute per key and IP, ${LIMITS.sessionIngestRate.perKeyPerMinute} per key), never against errors`,
  body: { contentType: 'application/json', schema: SessionsBatchBody },
  answers: { 202: { description: 'accepted', schema: IngestedAnswer }, 204: paused },
  refusals: [...BATCH_ADMISSION, 'invalid_request'],
} as const satisfies Omit<EdgeRoute, 'name' | 'ingestKey'>;

/** Sentry's HTTP cron form (ingest/sentry/sentry-cron-route.ts): the check-in's fields in the query, or (POST) the body. */
export const SentryCronQuery = z.object({
  status: z.enum(['in_progress', 'ok', 'error']),
  check_in_id: z.string().max(128).optional().describe('closes the in-progress check-in of this id; without one, the newest'),
  duration: z.coerce.number().min(0).optional().describe('seconds'),
  environment: z.string().max(64).optional(),
  release: z.string().max(250).optional(),
});
export const SentryCronBody = SentryCronQuery.partial().extend({
  monitor_config: z
    .object({
      schedule: z.union([
        z.object({ type: z.literal('crontab'), value: z.string().max(128) }),
        z.object({ type: z.literal('interval'), value: z.union([z.number(), z.string()]), unit: z.enum(['minute', 'hour', 'day', 'week', 'month', 'year']) }),
      ]),
      checkin_margin: z.number().int().min(0).optional().describe('minutes'),
      max_runtime: z.number().int().min(1).optional().describe('minutes'),
      timezone: z.string().max(64).optional(),
      failure_issue_threshold: z.number().int().min(1).optional(),
      recovery_threshold: z.number().int().min(1).optional(),
    })
    .optional(),
});

const flags = {
  method: 'get',
  summary: "The caller's feature flags, evaluated on the edge; unknown keys answer unknown_flag; ETag / If-None-Match",
  query: FlagsQuery,
  answers: { 200: { description: 'the answers', schema: FlagsAnswer }, 304: { description: 'the same answer as the ETag given' } },
  refusals: ['unauthorized', 'forbidden_credential', 'origin_not_allowed', 'invalid_request', 'rate_limited', 'limiter_unavailable', 'internal'],
} as const satisfies Omit<EdgeRoute, 'name' | 'ingestKey'>;

/** PostHog's answer to a capture request. */
export const PostHogCaptureAnswer = z.object({ status: z.literal(1) });
/** PostHog's answer to `/flags/` and `/decide/`: v2's `flags`, and the older maps (domain/posthog-flags.ts). */
export const PostHogFlagsAnswer = z.object({
  flags: z.record(
    z.string(),
    z.object({
      key: z.string(),
      enabled: z.boolean(),
      variant: z.string().optional(),
      reason: z.object({ code: z.string(), description: z.string(), condition_index: z.number().nullable() }),
      metadata: z.object({
        id: z.number(),
        version: z.number(),
        payload: z.string().optional().describe('the payload as JSON text'),
        description: z.string().optional(),
      }),
    }),
  ),
  featureFlags: z.record(z.string(), z.union([z.string(), z.boolean()])),
  featureFlagPayloads: z.record(z.string(), z.string()),
  errorsWhileComputingFlags: z.boolean(),
  quotaLimited: z.array(z.string()),
  requestId: z.string(),
});

const posthogCapture = {
  method: 'post',
  ingestKey: false,
  body: { contentType: 'application/json', schema: z.unknown() },
  answers: { 200: { description: "PostHog's answer", schema: PostHogCaptureAnswer }, 204: paused },
  refusals: [...BATCH_ADMISSION, 'invalid_request', 'quota_exceeded', 'too_large_decompressed', 'unsupported_encoding'],
} as const satisfies Omit<EdgeRoute, 'name' | 'summary'>;
const POSTHOG_CAPTURE_NOTE =
  ": PostHog's SDKs unchanged. The key is the body's `api_key` or `token` (or its first event's `properties.token`); JSON, gzip (Content-Encoding, or posthog-js's gzip-js as text/plain) or the `data=` base64 form; at most 100 events, mapped onto analytics events with the same checks, quota, origin and scrubbing. Refusals carry PostHog's `type`, `code`, `detail` beside `error` and `message`.";
const posthogFlags = {
  method: 'post',
  ingestKey: false,
  body: {
    contentType: 'application/json',
    schema: z.object({ token: z.string(), distinct_id: z.string(), person_properties: z.record(z.string(), z.unknown()).optional() }),
  },
  answers: { 200: { description: "PostHog's flags answer", schema: PostHogFlagsAnswer } },
  refusals: [
    'unauthorized',
    'forbidden_credential',
    'origin_not_allowed',
    'invalid_request',
    'too_large',
    'too_large_decompressed',
    'unsupported_encoding',
    'rate_limited',
    'limiter_unavailable',
    'internal',
  ],
} as const satisfies Omit<EdgeRoute, 'name' | 'summary'>;

export const EDGE_ROUTES: readonly EdgeRoute[] = [
  { name: 'errors', ingestKey: true, ...errors },
  { name: 'siteErrors', ingestKey: false, ...errors, summary: errors.summary + SITE_NOTE, refusals: [...errors.refusals, ...SITE] },
  {
    name: 'sentryEnvelope',
    ...sentry,
    refusals: [...sentry.refusals, 'edge_busy'],
    summary:
      "Sentry SDKs' envelope endpoint: the key from X-Sentry-Auth or ?sentry_key= (an ingest key's DSN); gzip, deflate or br, up to 20 MB; each item held to its own size. Event items become error events (the errors cap and rate limits); session, sessions, check_in, feedback and user_report items are kept, each kind limited on its own; client reports are counted; the types never kept (attachments, transactions, spans, replays, profiles, logs, metrics) are dropped. X-Sentry-Rate-Limits names the limited kinds' categories, and a day's limit on the never-kept ones, on every answer; 429 only when every kind the envelope held was limited. Large bodies held at once are bounded: past that, 503 edge_busy with a Retry-After",
  },
  {
    name: 'sentryStore',
    ...sentry,
    body: { contentType: 'application/json', schema: z.record(z.string(), z.unknown()) },
    summary: "Sentry SDKs' older store endpoint: one event as JSON, the key as for envelopes",
  },
  ...(['get', 'post'] as const).map(
    (method): EdgeRoute => ({
      name: 'sentryCron',
      method,
      ingestKey: false,
      summary: `Sentry's HTTP cron check-in (issue 40): \`?status=in_progress|ok|error\` with \`check_in_id\`, \`duration\` (seconds), \`environment\`, \`release\`${method === 'post' ? '; or the same as JSON, with a `monitor_config` that creates or updates the heartbeat monitor (schedule, checkin_margin, max_runtime, timezone, failure_issue_threshold, recovery_threshold)' : ''}. The path's key is the DSN's public key, its project the DSN's; a check-in for a monitor that does not exist and carries no monitor_config is taken and dropped. ${LIMITS.uptime.heartbeat.httpPerKeyPerMinute} a minute per key, ${LIMITS.uptime.heartbeat.httpPerMonitorPerMinute} per key and monitor`,
      query: SentryCronQuery,
      ...(method === 'post' ? { body: { contentType: 'application/json', schema: SentryCronBody } } : {}),
      answers: { 202: { description: 'taken (no body)' }, 204: paused },
      refusals: [...BATCH_ADMISSION, 'invalid_request', 'project_mismatch', 'internal'],
    }),
  ),
  { name: 'analytics', ingestKey: true, ...analytics },
  { name: 'siteAnalytics', ingestKey: false, ...analytics, summary: analytics.summary + SITE_NOTE, refusals: [...analytics.refusals, ...SITE] },
  { name: 'sessions', ingestKey: true, ...sessions },
  { name: 'siteSessions', ingestKey: false, ...sessions, summary: sessions.summary + SITE_NOTE, refusals: [...sessions.refusals, ...SITE] },
  { name: 'flags', ingestKey: true, ...flags },
  { name: 'siteFlags', ingestKey: false, ...flags, summary: flags.summary + SITE_NOTE, refusals: [...flags.refusals, ...SITE] },
  {
    name: 'widget',
    method: 'get',
    summary: 'The browser client (also at the versioned, immutable URL that manifest.json, beside it, names)',
    ingestKey: false,
    answers: { 200: { description: 'JavaScript' }, 304: { description: 'not modified' } },
    refusals: [],
  },
  {
    name: 'widgetSessions',
    method: 'get',
    summary:
      "cx.js's sessions add-on (issue 40): loaded after cx.js, one session per page load for release health (also at the versioned URL manifest.json names)",
    ingestKey: false,
    answers: { 200: { description: 'JavaScript' }, 304: { description: 'not modified' } },
    refusals: [],
  },
  { name: 'posthogBatch', ...posthogCapture, summary: `posthog-node's batch endpoint${POSTHOG_CAPTURE_NOTE}` },
  { name: 'posthogEvents', ...posthogCapture, summary: `posthog-js's capture endpoint${POSTHOG_CAPTURE_NOTE}` },
  { name: 'posthogEventsV0', ...posthogCapture, summary: `posthog-js's capture endpoint (newer)${POSTHOG_CAPTURE_NOTE}` },
  { name: 'posthogCapture', ...posthogCapture, summary: `older PostHog SDKs' capture endpoint${POSTHOG_CAPTURE_NOTE}` },
  {
    name: 'posthogFlags',
    ...posthogFlags,
    summary:
      "PostHog's flags endpoint (`?v=2`): every flag of the project (or `flag_keys`), evaluated on the edge for `distinct_id` and `person_properties`; the key is the body's `token`",
  },
  { name: 'posthogDecide', ...posthogFlags, summary: "PostHog's older decide endpoint: the same answer as /flags/" },
  {
    name: 'posthogConfig',
    method: 'get',
    summary: "posthog-js's remote config for a project key: what the service does not serve (recordings, surveys, heatmaps) is off",
    ingestKey: false,
    answers: { 200: { description: 'the config' }, 404: { description: 'no project has this key' } },
    refusals: [],
  },
  {
    name: 'posthogConfigScript',
    method: 'get',
    summary: 'The same config as a script setting `window._POSTHOG_REMOTE_CONFIG[<key>]`, which posthog-js loads first',
    ingestKey: false,
    answers: { 200: { description: 'JavaScript' }, 404: { description: 'no project has this key' } },
    refusals: [],
  },
  {
    name: 'posthogStatic',
    method: 'get',
    summary:
      "posthog-js's own files, from the package the service installs: the snippet's `array.js` and the extensions posthog-js loads (surveys.js, lazy-recorder.js, web-vitals.js, ...) and their source maps; ETag, gzip, any origin. Another name, or a site's host: the site's own file",
    ingestKey: false,
    answers: { 200: { description: 'JavaScript' }, 304: { description: 'not modified' } },
    refusals: [],
  },
  {
    name: 'posthogStaticVersioned',
    method: 'get',
    summary: "The same at posthog-js's versioned path (`strict_script_versioning`): immutable at the installed version",
    ingestKey: false,
    answers: { 200: { description: 'JavaScript' }, 304: { description: 'not modified' } },
    refusals: [],
  },
];
