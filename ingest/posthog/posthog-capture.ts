import { LIMITS } from '../../schemas/limits.ts';
import { EDGE_PATHS } from '../../schemas/api/edge.ts';
import { stampAnalyticsBatch } from '../analytics-route.ts';
import type { BatchRoute, Parsed, ParseContext } from '../batch-route.ts';
import { refusal, type Refusal } from '../refusals.ts';
import { eventsOf, openPostHogBody, type OpenedBody } from './posthog-body.ts';
import { eventOfPostHog } from './posthog-event.ts';

/**
 * PostHog's capture endpoints (issue 28): `POST /batch/` (posthog-node), `/e/` and `/i/v0/e/` (posthog-js), `/capture/`
 * (older SDKs), each with and without the trailing slash. They are analytics ingest with PostHog's wire format, so they
 * are the analytics route (analytics-route.ts) with its cap (the monthly quota), rate limits and topic, and admission's
 * origin and paused rules, unchanged; the processor scrubs and stores their events like any other.
 *
 * Per request (batch-route.ts, `format.open`): the body is read (at most LIMITS.posthog.maxBodyBytes) and opened
 * (posthog-body.ts: gzip, the `data=` form, JSON) to find the key it names; then admission as for every batch route;
 * then each event is mapped to ours (posthog-event.ts) and checked and stamped as `POST /v1/analytics/i` does, a
 * malformed one dropped and counted. PostHog's answers: 200 `{ "status": 1 }`; refusals carry PostHog's error fields
 * (`type`, `code`, `detail`) beside ours, and the statuses PostHog's SDKs act on: 429 and 5xx are retried, 413 halves
 * posthog-node's batch, other 4xx drop it.
 */
export const POSTHOG_CAPTURE_PATHS = [EDGE_PATHS.posthogBatch, EDGE_PATHS.posthogEvents, EDGE_PATHS.posthogEventsV0, EDGE_PATHS.posthogCapture] as const;

const MAX_EVENTS = LIMITS.analyticsBatch.maxEvents;

export function parsePostHogCapture(opened: OpenedBody, ctx: Pick<ParseContext, 'projectId' | 'originHost' | 'receivedAt'>): Parsed | Refusal {
  const raw = eventsOf(opened.json);
  if (!raw.length) return refusal('invalid_request', 'the batch holds no event');
  // posthog-node halves its batch on 413 and sends again.
  if (raw.length > MAX_EVENTS) return refusal('too_large', `at most ${MAX_EVENTS} events a request`);
  return stampAnalyticsBatch(
    raw.map((e) => eventOfPostHog(e, ctx.receivedAt, opened.sentAt)),
    ctx,
  );
}

/** PostHog's error fields for a refusal (what its SDKs and users read), beside our `error` and `message`. */
export function posthogErrorFields(r: Refusal): Record<string, unknown> {
  const [type, code] =
    r.reason === 'unauthorized' || r.reason === 'forbidden_credential'
      ? ['authentication_error', 'invalid_api_key']
      : r.reason === 'too_large' || r.reason === 'too_large_decompressed'
        ? ['validation_error', 'payload_too_large']
        : r.reason === 'invalid_request' || r.reason === 'unsupported_encoding' || r.reason === 'unsupported_media_type'
          ? ['validation_error', 'invalid_payload']
          : r.reason === 'rate_limited' || r.reason === 'quota_exceeded'
            ? ['throttled', r.reason]
            : r.reason === 'origin_not_allowed'
              ? ['authentication_error', 'origin_not_allowed']
              : ['server_error', r.reason];
  return { type, code, detail: r.message, attr: null };
}

/** The capture routes, built from the analytics route (its cap, rate limits and publisher). */
export function posthogCaptureRoutes(analytics: BatchRoute): BatchRoute[] {
  return POSTHOG_CAPTURE_PATHS.map((path) => ({
    paths: { path, aliases: [path.slice(0, -1)] },
    feed: analytics.feed,
    format: {
      maxBodyBytes: LIMITS.posthog.maxBodyBytes,
      // posthog-js posts gzip as text/plain and the base64 form as a form (no preflight); posthog-node posts JSON.
      mediaType: () => true,
      open: (read, h) => {
        const opened = openPostHogBody(read.body, h);
        return 'reason' in opened ? opened : { token: opened.token, opened };
      },
      parse: (_read, ctx) => parsePostHogCapture(ctx.opened as OpenedBody, ctx),
    },
    dialect: {
      acceptedReply: () => ({ status: 200, body: '{"status":1}' }),
      refusalBody: posthogErrorFields,
      corsAllowHeaders: 'content-type, content-encoding, authorization, x-service-analytics-key',
    },
  }));
}
