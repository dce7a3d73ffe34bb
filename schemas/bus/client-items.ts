import { z } from 'zod';
import { TOPICS } from '../topics.ts';
import { jsonCodec } from './json-codec.ts';

/**
 * What an SDK sends beside its errors (issue 40), on the bus (key projectId): the session updates and aggregates of
 * release health, user feedback, and cron check-ins of one request, stamped by the edge. One message per request
 * that held any of them (an envelope of only a client report publishes nothing). The edge has already cut every
 * field to the bounds below; the schema holds them again for other producers.
 *
 *   sessions            Sentry `session` items: one update of one session (init, then ok/errored ..., then a terminal)
 *   sessionAggregates   Sentry `sessions` items: counts of sessions per started-minute (server-mode SDKs)
 *   feedback            Sentry `feedback` (the widget, captureFeedback) and `user_report` items
 *   checkIns            Sentry `check_in` items and the HTTP cron form (`/api/:project/cron/:monitor/:key/`)
 *
 * `environment` and `release` are what the SDK said: the processor stamps the environment itself (§7.4) and names the
 * deploy from `release` (a git sha or a deploy id) or from the origin.
 */
export const TOPIC = TOPICS.clientItems;

const text = (max: number) => z.string().max(max);
const epochMs = z.number().finite();

/**
 * `unhandled`: an unhandled error that did not end the session (a browser page goes on after one): what
 * @sentry/browser 10+ sends where older SDKs sent `crashed` (Sentry's sessions protocol, since server 25.9).
 */
export const SESSION_STATUSES = ['ok', 'exited', 'crashed', 'unhandled', 'errored', 'abnormal'] as const;
export type SessionStatus = (typeof SESSION_STATUSES)[number];

export const SessionUpdateSchema = z.object({
  /** The session's id (Sentry `sid`). */
  sid: text(128),
  /** The user (Sentry `did`), when the SDK knows one. */
  did: text(256).optional(),
  /** True on the session's first update: counts it as started. */
  init: z.boolean(),
  status: z.enum(SESSION_STATUSES),
  /** Errors seen in the session so far. */
  errors: z.number().int().min(0).max(1_000_000),
  /** When the session started, epoch ms. */
  started: epochMs,
  /** When this update was made, epoch ms. */
  timestamp: epochMs,
  /** Seconds, on a terminal update. */
  duration: z.number().finite().min(0).optional(),
  release: text(250).optional(),
  environment: text(64).optional(),
});
export type SessionUpdate = z.infer<typeof SessionUpdateSchema>;

export const SessionAggregateSchema = z.object({
  /** The minute the sessions started, epoch ms. */
  started: epochMs,
  did: text(256).optional(),
  exited: z.number().int().min(0).max(1_000_000),
  errored: z.number().int().min(0).max(1_000_000),
  abnormal: z.number().int().min(0).max(1_000_000),
  crashed: z.number().int().min(0).max(1_000_000),
  unhandled: z.number().int().min(0).max(1_000_000).optional(),
  release: text(250).optional(),
  environment: text(64).optional(),
});
export type SessionAggregate = z.infer<typeof SessionAggregateSchema>;

export const FeedbackItemSchema = z.object({
  /** The feedback's own id (its event id). */
  id: text(128),
  /** The error event it is about, when the SDK linked one (feedback `associated_event_id`, user_report `event_id`). */
  eventId: text(128).optional(),
  source: z.enum(['feedback', 'user_report']),
  name: text(256).optional(),
  email: text(256).optional(),
  message: text(4096),
  /** The page it was sent from. */
  url: text(2048).optional(),
  timestamp: epochMs,
  release: text(250).optional(),
  environment: text(64).optional(),
});
export type FeedbackItem = z.infer<typeof FeedbackItemSchema>;

export const MonitorScheduleSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('crontab'), value: text(128) }),
  z.object({ type: z.literal('interval'), value: z.number().int().min(1).max(1_000_000), unit: z.enum(['minute', 'hour', 'day', 'week', 'month', 'year']) }),
]);
export type MonitorSchedule = z.infer<typeof MonitorScheduleSchema>;

export const MonitorConfigSchema = z.object({
  schedule: MonitorScheduleSchema,
  /** Minutes after the expected time before a missing check-in counts as missed. */
  checkinMargin: z.number().int().min(0).max(40_320).optional(),
  /** Minutes an in-progress check-in may run before it counts as failed (timed out). */
  maxRuntime: z.number().int().min(1).max(40_320).optional(),
  /** IANA time zone of a crontab schedule. */
  timezone: text(64).optional(),
  failureIssueThreshold: z.number().int().min(1).max(720).optional(),
  recoveryThreshold: z.number().int().min(1).max(720).optional(),
});
export type MonitorConfig = z.infer<typeof MonitorConfigSchema>;

export const CheckInItemSchema = z.object({
  /** The SDK's check-in id: an `in_progress` and its closing `ok`/`error` share it. */
  checkInId: text(128),
  /** The monitor's slug, as the SDK names it. */
  monitorSlug: text(128),
  status: z.enum(['in_progress', 'ok', 'error']),
  /** Seconds, on a closing check-in. */
  duration: z.number().finite().min(0).optional(),
  /** Creates or updates the monitor (Sentry's `monitor_config`, upsert). */
  monitorConfig: MonitorConfigSchema.optional(),
  timestamp: epochMs,
  release: text(250).optional(),
  environment: text(64).optional(),
});
export type CheckInItem = z.infer<typeof CheckInItemSchema>;

/** Bounds per message (what one request may carry after the edge's per-item caps). */
export const CLIENT_ITEMS_MAX = { sessions: 100, sessionAggregates: 100, feedback: 20, checkIns: 100 } as const;

export const ClientItemsMessageSchema = z.object({
  v: z.literal(1),
  /** Unique per request: the processor claims it, so a re-delivered message counts once. */
  batchId: text(128),
  projectId: text(128),
  /** Host of the request's Origin (ingest/origin-policy.ts), null for server-to-server posts. */
  originHost: z.string().max(300).nullable(),
  /** Epoch ms at the edge. */
  receivedAt: epochMs,
  /** The request's User-Agent, cut to 512 characters. */
  userAgent: text(512).optional(),
  sessions: z.array(SessionUpdateSchema).max(CLIENT_ITEMS_MAX.sessions).optional(),
  sessionAggregates: z.array(SessionAggregateSchema).max(CLIENT_ITEMS_MAX.sessionAggregates).optional(),
  feedback: z.array(FeedbackItemSchema).max(CLIENT_ITEMS_MAX.feedback).optional(),
  checkIns: z.array(CheckInItemSchema).max(CLIENT_ITEMS_MAX.checkIns).optional(),
});
export type ClientItemsMessage = z.infer<typeof ClientItemsMessageSchema>;

export const { encode, decode } = jsonCodec(ClientItemsMessageSchema);
