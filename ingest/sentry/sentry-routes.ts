import { ingestTokenOfSentryKey } from '../../platform/sentry-dsn.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { ingestCredential, type BatchRequestHeaders } from '../admission.ts';
import type { BatchDialect, BatchFeed, BatchFormat, BatchRoute, Parsed, ParseContext } from '../batch-route.ts';
import type { Headers } from '../http/uws-reply.ts';
import { refusal, type Refusal } from '../refusals.ts';
import { envelopeItems } from './envelope-take.ts';
import { UNKEPT_HEADER } from './envelope-limits.ts';
import { eventOf, toBatch } from './sentry-batch.ts';
import { decompressSync } from './sentry-body.ts';
import { EDGE_PATHS } from '../../schemas/api/edge.ts';

/**
 * Sentry's SDKs as they are (issues 15, 40): `POST /api/:projectId/envelope/` and `POST /api/:projectId/store/`, the
 * endpoints a DSN (platform/sentry-dsn.ts) points them at, with Sentry's ways: the key from `X-Sentry-Auth` or
 * `?sentry_key=` (or ours), any Content-Type (browser SDKs send text/plain to skip the preflight), gzip/deflate/br
 * bodies up to a decompressed limit, Sentry's `{ id }` answer, and rate limits told in `X-Sentry-Rate-Limits`, which
 * the SDKs obey, by category.
 *
 * The envelope route is a route of items (batch-route.ts `items`; its steps in envelope-take.ts): admitted without
 * the errors cap, read whole, each kind of item it holds (errors, sessions, check-ins, feedback) limited on its own,
 * events onto the errors topic as `POST /v1/errors/i` would, the rest onto the client-items topic. The store route
 * is the error route with one event a body (its cap and rate limits at admission).
 */
export const SENTRY_ENVELOPE_PATH = EDGE_PATHS.sentryEnvelope;
export const SENTRY_STORE_PATH = EDGE_PATHS.sentryStore;
export const SENTRY_HEALTH_PATH = '/api/health';

const S = LIMITS.sentryIngest;

/** `sentry_key` of an `X-Sentry-Auth` header or a query string. */
function sentryKeyIn(text: string, separator: RegExp): string {
  for (const part of text.split(separator)) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === 'sentry_key') {
      try {
        return decodeURIComponent(part.slice(eq + 1).trim());
      } catch {
        return '';
      }
    }
  }
  return '';
}

export function sentryCredential(h: BatchRequestHeaders): string {
  const key = (h.sentryAuth && sentryKeyIn(h.sentryAuth.replace(/^\s*sentry\s+/i, ''), /,/)) || (h.query && sentryKeyIn(h.query, /&/));
  return key ? ingestTokenOfSentryKey(key) : ingestCredential(h);
}

/** The store route: one event, inflated inline (it is held to one event item's size). */
function parseStoreBody(read: { body: Buffer }, ctx: ParseContext): Parsed | Refusal {
  const body = decompressSync(read.body, ctx.contentEncoding, S.itemBytes.event);
  if (!Buffer.isBuffer(body)) return body;
  const dropped: Record<string, number> = {};
  const one = eventOf(body, dropped);
  if ('reason' in one) return one;
  return toBatch(one.event ? [one.event] : [], one.id ? [one.id] : [], dropped, ctx);
}

/**
 * What Sentry SDKs read on a store route's 429 (`retry_after:categories:scope:reason`), naming the event categories:
 * an empty list would stop the SDK sending everything.
 */
function storeRateLimitHeaders(r: Refusal): Headers {
  if (r.reason === 'rate_limited') return [['X-Sentry-Rate-Limits', `${r.retryAfterSec ?? 60}:error;default:key:rate_limited`]];
  if (r.reason === 'capped') return [['X-Sentry-Rate-Limits', `${r.retryAfterSec ?? 60}:error;default:project:usage_exceeded`]];
  return [];
}

/**
 * The envelope and store routes, built from the error route (its cap, rate limits and bus) and the client-items
 * topic's publisher.
 */
export function sentryRoutes(errors: BatchRoute, deps: { publishItems: BatchFeed['publish'] }): BatchRoute[] {
  const format: Omit<BatchFormat, 'parse' | 'maxBodyBytes'> = {
    credential: sentryCredential,
    mediaType: () => true,
    check: (key, h) =>
      h.param === key.project.number ? undefined : refusal('project_mismatch', `this key belongs to project ${key.project.number}, not ${h.param}`),
  };
  const dialect: Omit<BatchDialect, 'refusalHeaders'> = {
    acceptedReply: (parsed) => ({ status: 200, body: JSON.stringify({ id: parsed.ids?.[0] ?? null }) }),
    corsAllowHeaders: 'content-type, content-encoding, authorization, x-sentry-auth, x-service-analytics-key',
  };
  return [
    {
      paths: { path: SENTRY_ENVELOPE_PATH, aliases: [SENTRY_ENVELOPE_PATH.slice(0, -1)], hasParam: true, healthPath: SENTRY_HEALTH_PATH },
      feed: errors.feed,
      format: { ...format, maxBodyBytes: S.maxBodyBytes },
      items: envelopeItems({ errors: errors.feed, publishItems: deps.publishItems }),
      // Every answer teaches a fresh SDK (each page load) to stop sending what is never kept; a 429 names its own limits too.
      dialect: { ...dialect, refusalHeaders: () => [['X-Sentry-Rate-Limits', UNKEPT_HEADER]] },
    },
    {
      paths: { path: SENTRY_STORE_PATH, aliases: [SENTRY_STORE_PATH.slice(0, -1)], hasParam: true },
      feed: errors.feed,
      format: { ...format, maxBodyBytes: S.itemBytes.event, parse: parseStoreBody },
      dialect: { ...dialect, refusalHeaders: storeRateLimitHeaders },
    },
  ];
}
