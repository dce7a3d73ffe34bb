import { parseBoundedJson } from '../platform/bounded-json.ts';
import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { AnalyticsBatchSchema, AnalyticsEventSchema, clampTimestamp, validAnalyticsEvent, type StampedAnalyticsEvent } from '../schemas/analytics-event.ts';
import { LIMITS } from '../schemas/limits.ts';
import { secondsToMonthEnd } from '../domain/usage-month.ts';
import type { BatchFeed, BatchRoute, ParseContext, Parsed } from './batch-route.ts';
import { refusal, type Refusal } from './refusals.ts';
import { EDGE_PATHS } from '../schemas/api/edge.ts';
import { EDGE_SUPPORT_PATHS } from '../schemas/api/route-table.ts';
import type { AnalyticsAcceptedAnswer } from '../schemas/api/edge.ts';
import * as analyticsEvents from '../schemas/bus/analytics-events.ts';

/**
 * `POST /v1/analytics/i` (spec §4.2; payload ours, issue 16): PostHog-style capture batches onto the analytics
 * topic. Same key, media type, streaming size limit, origin and paused rules as error ingest (batch-route.ts); its
 * own monthly quota and rate limits. Each event is checked on its own: a malformed one is dropped and named in the
 * answer (`rejected`), the rest are stamped (uuid, clamped timestamp) and published as one message.
 */
export const ANALYTICS_INGEST_PATH = EDGE_PATHS.analytics;
export const ANALYTICS_INGEST_HEALTH_PATH = EDGE_SUPPORT_PATHS.analyticsHealth;
/** The same on a site's own host, for cx.js: the edge attaches the project's ingest key. */
export const SITE_ANALYTICS_PATH = EDGE_PATHS.siteAnalytics;
const MINUTE_MS = 60_000;

/** Pure: the body as one stamped batch, or why it is refused whole. */
export function parseAnalyticsBatch(body: Buffer, ctx: Pick<ParseContext, 'projectId' | 'originHost' | 'receivedAt'>): Parsed | Refusal {
  if (!isUtf8(body)) return refusal('invalid_request', 'body is not valid UTF-8');
  const bounded = parseBoundedJson(body.toString('utf8'));
  if (!bounded.ok) return refusal('invalid_request', bounded.reason === 'too_deep' ? `body is ${bounded.message}` : 'body is not valid JSON');
  const json = bounded.value;
  const envelope = AnalyticsBatchSchema.safeParse(json);
  if (!envelope.success) {
    const fields = envelope.error.issues.slice(0, 20).map((i) => ({ path: i.path.map(String).join('.') || '(body)', message: i.message }));
    return refusal('invalid_request', `invalid analytics batch: ${fields.map((f) => f.path).join(', ')}`, { fields });
  }
  return stampAnalyticsBatch(envelope.data.batch, ctx);
}

/**
 * Pure: events as a client sent them (our shape), checked one by one and stamped (uuid, clamped timestamp) into one
 * bus message; the malformed ones are named in `rejected`. Refused whole when none is valid. Every way events reach
 * the analytics topic ends here (our batch route, PostHog's capture routes in ingest/posthog/).
 */
export function stampAnalyticsBatch(batch: unknown[], ctx: Pick<ParseContext, 'projectId' | 'originHost' | 'receivedAt'>): Parsed | Refusal {
  const events: StampedAnalyticsEvent[] = [];
  const rejected: NonNullable<Parsed['rejected']> = [];
  batch.forEach((raw, index) => {
    // The written-out check first; zod only to say why an event is refused.
    let e = validAnalyticsEvent(raw);
    if (!e) {
      const one = AnalyticsEventSchema.safeParse(raw);
      if (!one.success) {
        rejected.push({ index, fields: one.error.issues.slice(0, 10).map((i) => ({ path: i.path.map(String).join('.') || '(event)', message: i.message })) });
        return;
      }
      e = one.data;
    }
    const stamped: StampedAnalyticsEvent = {
      uuid: e.uuid?.toLowerCase() ?? randomUUID(),
      event: e.event,
      distinctId: e.distinctId,
      properties: e.properties ?? {},
      timestamp: clampTimestamp(e.timestamp, ctx.receivedAt),
    };
    if (e.sessionId) stamped.sessionId = e.sessionId;
    if (e.path) stamped.path = e.path;
    if (e.deployId) stamped.deployId = e.deployId;
    if (e.gitSha) stamped.gitSha = e.gitSha;
    events.push(stamped);
  });
  if (!events.length)
    return refusal('invalid_request', 'no event in the batch is valid', {
      fields: rejected.flatMap((r) => r.fields.map((f) => ({ path: `batch.${r.index}.${f.path}`, message: f.message }))).slice(0, 20),
    });
  const value = analyticsEvents.encode({
    v: 1,
    batchId: randomUUID(),
    projectId: ctx.projectId,
    originHost: ctx.originHost,
    receivedAt: ctx.receivedAt,
    events,
  });
  return { ok: true, events: events.length, value, rejected, dropped: rejected.length ? { invalid_event: rejected.length } : undefined };
}

export function analyticsRoute(deps: { now: () => number; publish: BatchFeed['publish'] }): BatchRoute {
  const rate = LIMITS.analyticsIngestRate;
  return {
    paths: { path: ANALYTICS_INGEST_PATH, healthPath: ANALYTICS_INGEST_HEALTH_PATH },
    feed: {
      cap: (project) =>
        project.analyticsQuotaReached
          ? refusal('quota_exceeded', `this project stored its ${LIMITS.analyticsMonthlyQuota} analytics events for the month`, {
              retryAfterSec: secondsToMonthEnd(deps.now()),
            })
          : undefined,
      rateLimits: (keyId, ip) => [
        { key: `analytics:ki:${keyId}:${ip}`, limit: rate.perKeyAndIpPerMinute, windowMs: MINUTE_MS },
        { key: `analytics:k:${keyId}`, limit: rate.perKeyPerMinute, windowMs: MINUTE_MS },
      ],
      rateLimitedMessage: 'too many analytics requests for this ingest key',
      publish: deps.publish,
    },
    format: { maxBodyBytes: LIMITS.analyticsBatch.maxBodyBytes, parse: (read, ctx) => parseAnalyticsBatch(read.body, ctx) },
    dialect: {
      acceptedReply: (parsed) => ({
        status: 202,
        body: JSON.stringify({ ingested: parsed.events, rejected: parsed.rejected ?? [] } satisfies AnalyticsAcceptedAnswer),
      }),
    },
  };
}
