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
/** An analytics event as a client sends it (the SDKs build these). */
export type AnalyticsEventInput = z.input<typeof AnalyticsEventSchema>;

const UUID = z.regexes.uuid();
const str = (v: unknown, min: number, max: number): v is string => typeof v === 'string' && v.length >= min && v.length <= max;

/**
 * AnalyticsEventSchema's check written out, for the edge's hot path (zod took most of a 50-event batch's time): the
 * same event when valid, else undefined, and then the caller asks zod for the reasons. A test holds the two to the
 * same answers on random input (analytics-event.test.ts).
 */
export function validAnalyticsEvent(raw: unknown): AnalyticsEvent | undefined {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return undefined;
  const r = raw as Record<string, unknown>;
  if (!str(r.event, 1, F.event) || !str(r.distinctId, 1, F.distinctId)) return undefined;
  const out: AnalyticsEvent = { event: r.event, distinctId: r.distinctId };
  if (r.properties !== undefined) {
    const p = r.properties;
    if (p === null || typeof p !== 'object' || Array.isArray(p)) return undefined;
    const keys = Object.keys(p);
    if (keys.length > F.propertyCount) return undefined;
    for (const k of keys) if (k.length < 1 || k.length > F.propertyKey) return undefined;
    if (Buffer.byteLength(JSON.stringify(p)) > F.propertiesBytes) return undefined;
    out.properties = p as Record<string, unknown>;
  }
  if (r.timestamp !== undefined) {
    if (!(typeof r.timestamp === 'number' ? Number.isFinite(r.timestamp) : str(r.timestamp, 0, 64))) return undefined;
    out.timestamp = r.timestamp as number | string;
  }
  if (r.uuid !== undefined) {
    if (typeof r.uuid !== 'string' || !UUID.test(r.uuid)) return undefined;
    out.uuid = r.uuid;
  }
  for (const [k, max] of [
    ['sessionId', F.sessionId],
    ['path', F.path],
    ['deployId', 256],
    ['gitSha', 64],
  ] as const) {
    const v = r[k];
    if (v === undefined) continue;
    if (!str(v, 0, max)) return undefined;
    out[k] = v;
  }
  if (r.environment !== undefined) out.environment = r.environment;
  return out;
}

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
