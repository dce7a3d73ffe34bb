import { z } from 'zod';
import { LIMITS } from './limits.ts';
import type { Environment } from './error-event.ts';

/**
 * Analytics events (issue 16; the spec does not show the payload): PostHog-style capture. As a client sends them
 * (`POST /v1/analytics/i` with `{ batch: [...] }`), as the edge stamps them, and a stamped batch as the analytics
 * pipeline consumes it (topic TOPICS.analyticsEvents, JSON).
 *
 * A batch is checked event by event: a malformed event is dropped and reported in the answer, the rest are taken
 * (PostHog's way; a client cannot fix one bad event by resending the batch). A body that is not `{ batch: [...] }`
 * with 1 to 100 entries is refused whole.
 */
const F = LIMITS.analyticsFields;

const PropertiesSchema = z
  .record(z.string().min(1).max(F.propertyKey), z.unknown())
  .refine((p) => Object.keys(p).length <= F.propertyCount, `at most ${F.propertyCount} properties`)
  .refine((p) => Buffer.byteLength(JSON.stringify(p)) <= F.propertiesBytes, `properties at most ${F.propertiesBytes} bytes as JSON`);

export const AnalyticsEventSchema = z.object({
  event: z.string().min(1).max(F.event),
  distinctId: z.string().min(1).max(F.distinctId),
  properties: PropertiesSchema.optional(),
  /** Epoch milliseconds or ISO-8601; trusted within LIMITS.analyticsTimestampWindowMs of the receive time. */
  timestamp: z.union([z.number().finite(), z.string().max(64)]).optional(),
  /** The client's id for the event: the same uuid sent twice is stored once. */
  uuid: z.uuid().optional(),
  sessionId: z.string().max(F.sessionId).optional(),
  path: z.string().max(F.path).optional(),
  /** §7.4, for server-side events without an Origin: the deploy that sent it. */
  deployId: z.string().max(256).optional(),
  gitSha: z.string().max(64).optional(),
  /** Accepted and ignored: the server stamps the environment (§7.4). */
  environment: z.unknown().optional(),
});
export type AnalyticsEvent = z.infer<typeof AnalyticsEventSchema>;

/** The envelope only; events are checked one by one. */
export const AnalyticsBatchSchema = z.object({
  batch: z.array(z.unknown()).min(LIMITS.analyticsBatch.minEvents).max(LIMITS.analyticsBatch.maxEvents),
});

export interface StampedAnalyticsEvent {
  uuid: string;
  event: string;
  distinctId: string;
  /** Property values as the client sent them (JSON). */
  properties: Record<string, unknown>;
  /** Epoch ms: the client's time within the window, else the receive time. */
  timestamp: number;
  sessionId?: string;
  path?: string;
  deployId?: string;
  gitSha?: string;
}

export interface StampedAnalyticsBatch {
  v: 1;
  projectId: string;
  originHost: string | null;
  receivedAt: number;
  events: StampedAnalyticsEvent[];
}

/** One event as stored, after scrubbing and environment stamping. */
export interface StoredAnalyticsEvent extends StampedAnalyticsEvent {
  projectId: string;
  environment: Environment;
  receivedAt: number;
}

/**
 * The event's time: the client's when it parses and lies within the window around the receive time, else the
 * receive time (a clock far off, or an event queued for weeks, would otherwise land in the wrong month).
 */
export function clampTimestamp(t: number | string | undefined, receivedAt: number): number {
  if (t === undefined) return receivedAt;
  const ms = typeof t === 'number' ? t : Date.parse(t);
  const w = LIMITS.analyticsTimestampWindowMs;
  return Number.isFinite(ms) && ms >= receivedAt - w.past && ms <= receivedAt + w.future ? Math.round(ms) : receivedAt;
}
