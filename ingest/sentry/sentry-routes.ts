import { parseBoundedJson } from '../../platform/bounded-json.ts';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import { ingestTokenOfSentryKey } from '../../platform/sentry-dsn.ts';
import { LIMITS } from '../../schemas/limits.ts';
import type { ErrorEvent } from '../../schemas/error-event.ts';
import { ingestCredential, type BatchRequestHeaders } from '../admission.ts';
import type { BatchDialect, BatchFormat, BatchRoute, Parsed, ParseContext } from '../batch-route.ts';
import { parseErrorBatch } from '../error-batch.ts';
import type { Headers } from '../http/uws-reply.ts';
import { refusal, type Refusal } from '../refusals.ts';
import { parseEnvelope } from './sentry-envelope.ts';
import { errorEventOfSentry } from './sentry-event.ts';
import { EDGE_PATHS } from '../../schemas/api/edge.ts';

/**
 * Sentry's SDKs as they are (issue 15): `POST /api/:projectId/envelope/` and `POST /api/:projectId/store/`, the
 * endpoints a DSN (platform/sentry-dsn.ts) points them at. They are error ingest with a different wire format, so
 * they are the error route (errors-route.ts) with Sentry's ways: the key from `X-Sentry-Auth` or `?sentry_key=`
 * (or ours), any Content-Type (browser SDKs send text/plain to skip the preflight), gzip/deflate/br bodies up to a
 * decompressed limit, Sentry's `{ id }` answer, and rate limits told in `X-Sentry-Rate-Limits`, which the SDKs obey.
 *
 * Per request, as for every batch route: admission (key, the DSN's project number, origin, paused, cap), body and
 * rate limits, then the pure parse below: decompress → envelope items → each event item as our error event → the
 * same validation and stamped bus message as `POST /v1/errors/i`. Other item types (transactions, sessions, client
 * reports, attachments, replays, ...) are taken and dropped, counted as `dropped_item_<type>`.
 */
export const SENTRY_ENVELOPE_PATH = EDGE_PATHS.sentryEnvelope;
export const SENTRY_STORE_PATH = EDGE_PATHS.sentryStore;
export const SENTRY_HEALTH_PATH = '/api/health';

const S = LIMITS.sentryIngest;
/** Item types counted by name when dropped; any other is `dropped_item_other` (client input never names a counter). */
const KNOWN_ITEM_TYPES = new Set([
  'transaction',
  'session',
  'sessions',
  'attachment',
  'client_report',
  'replay_event',
  'replay_recording',
  'replay_video',
  'profile',
  'profile_chunk',
  'check_in',
  'feedback',
  'user_report',
  'span',
  'log',
  'otel_log',
  'statsd',
  'metric_meta',
  'raw_security',
  'security',
]);

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

function decompress(body: Buffer, encoding: string): Buffer | Refusal {
  const enc = encoding.trim().toLowerCase();
  const opts = { maxOutputLength: S.maxDecompressedBytes };
  try {
    if (enc === '' || enc === 'identity') return body;
    if (enc === 'gzip' || enc === 'x-gzip') return gunzipSync(body, opts);
    if (enc === 'deflate') return inflateSync(body, opts);
    if (enc === 'br') return brotliDecompressSync(body, opts);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      return refusal('too_large_decompressed', `the body decompresses past ${S.maxDecompressedBytes} bytes`);
    return refusal('invalid_request', `the body is not valid ${enc}`);
  }
  return refusal('unsupported_encoding', `Content-Encoding ${enc} is not supported (gzip, deflate, br or none)`);
}

const itemReason = (type: string) => `item_${KNOWN_ITEM_TYPES.has(type) ? type : 'other'}`;

/** Our batch of the Sentry events, validated and stamped exactly as `POST /v1/errors/i` would. */
function toBatch(events: ErrorEvent[], sentryIds: string[], dropped: Record<string, number>, ctx: ParseContext): Parsed | Refusal {
  if (!events.length) return { ok: true, events: 0, value: Buffer.alloc(0), ids: sentryIds, dropped };
  const outcome = parseErrorBatch(Buffer.from(JSON.stringify({ batch: events })), {
    projectId: ctx.projectId,
    originHost: ctx.originHost,
    receivedAt: ctx.receivedAt,
    defaultRuntime: ctx.hasOrigin ? 'browser' : 'node',
  });
  if (!outcome.ok) return refusal('invalid_request', outcome.message, { fields: outcome.fields });
  return { ...outcome, ids: sentryIds, dropped };
}

function eventOf(payload: Buffer, dropped: Record<string, number>): { event?: ErrorEvent; id?: string } | Refusal {
  const bounded = parseBoundedJson(payload.toString('utf8'));
  if (!bounded.ok) return refusal('invalid_request', bounded.reason === 'too_deep' ? `an event item is ${bounded.message}` : 'an event item is not valid JSON');
  const json = bounded.value;
  const event = errorEventOfSentry(json);
  const id = (json as { event_id?: unknown } | null)?.event_id;
  if (!event) dropped.event_without_error = (dropped.event_without_error ?? 0) + 1;
  return { event, id: typeof id === 'string' ? id : undefined };
}

function parseEnvelopeBody(read: { body: Buffer }, ctx: ParseContext): Parsed | Refusal {
  const body = decompress(read.body, ctx.contentEncoding);
  if (!Buffer.isBuffer(body)) return body;
  const envelope = parseEnvelope(body);
  if (!envelope.ok) return refusal('invalid_request', envelope.message);
  const events: ErrorEvent[] = [];
  const ids: string[] = [];
  const dropped: Record<string, number> = {};
  if (typeof envelope.header.event_id === 'string') ids.push(envelope.header.event_id);
  for (const item of envelope.items) {
    if (item.type !== 'event' || events.length >= S.maxEventsPerEnvelope) {
      const reason = item.type === 'event' ? 'events_past_limit' : itemReason(item.type);
      dropped[reason] = (dropped[reason] ?? 0) + 1;
      continue;
    }
    const one = eventOf(item.payload, dropped);
    if ('reason' in one) return one;
    if (one.event) events.push(one.event);
    if (one.id && !ids.includes(one.id)) ids.push(one.id);
  }
  return toBatch(events, ids, dropped, ctx);
}

function parseStoreBody(read: { body: Buffer }, ctx: ParseContext): Parsed | Refusal {
  const body = decompress(read.body, ctx.contentEncoding);
  if (!Buffer.isBuffer(body)) return body;
  const dropped: Record<string, number> = {};
  const one = eventOf(body, dropped);
  if ('reason' in one) return one;
  return toBatch(one.event ? [one.event] : [], one.id ? [one.id] : [], dropped, ctx);
}

/** What Sentry SDKs read on a 429: `retry_after:categories:scope:reason` (no categories: every kind of item). */
function sentryRateLimitHeaders(r: Refusal): Headers {
  if (r.reason === 'rate_limited') return [['X-Sentry-Rate-Limits', `${r.retryAfterSec ?? 60}::key:rate_limited`]];
  if (r.reason === 'capped') return [['X-Sentry-Rate-Limits', `${r.retryAfterSec ?? 60}::project:errors_capped`]];
  return [];
}

/** The envelope and store routes, built from the error route (its cap, rate limits and bus). */
export function sentryRoutes(errors: BatchRoute): BatchRoute[] {
  const format: Omit<BatchFormat, 'parse'> = {
    maxBodyBytes: S.maxBodyBytes,
    credential: sentryCredential,
    mediaType: () => true,
    check: (key, h) =>
      h.param === key.project.number ? undefined : refusal('project_mismatch', `this key belongs to project ${key.project.number}, not ${h.param}`),
  };
  const dialect: BatchDialect = {
    acceptedReply: (parsed) => ({ status: 200, body: JSON.stringify({ id: parsed.ids?.[0] ?? null }) }),
    refusalHeaders: sentryRateLimitHeaders,
    corsAllowHeaders: 'content-type, content-encoding, authorization, x-sentry-auth, x-service-analytics-key',
  };
  return [
    {
      paths: { path: SENTRY_ENVELOPE_PATH, aliases: [SENTRY_ENVELOPE_PATH.slice(0, -1)], hasParam: true, healthPath: SENTRY_HEALTH_PATH },
      feed: errors.feed,
      format: { ...format, parse: parseEnvelopeBody },
      dialect,
    },
    {
      paths: { path: SENTRY_STORE_PATH, aliases: [SENTRY_STORE_PATH.slice(0, -1)], hasParam: true },
      feed: errors.feed,
      format: { ...format, parse: parseStoreBody },
      dialect,
    },
  ];
}
