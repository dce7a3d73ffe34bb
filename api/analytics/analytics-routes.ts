import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { ErrorBodySchema } from '../http-errors.ts';
import { breakdown, latestEvents, topEvents, totals, trends, type AnalyticsRange } from './analytics-repository.ts';

/**
 * Reading analytics back (issue 16): `/v1/projects/:slug/analytics/...`, for a session, a CLI token or a key with
 * `analytics:read` (ingest keys read nothing, §5.2 rule 3). Every query takes a time range (`from`, `to`: ISO-8601
 * or epoch ms; default the last 7 days), at most 366 days, and optionally one event name and one property filter
 * (`property=plan&value=pro`: the property's text, JSON for values that are not strings).
 */
const Params = z.object({ slug: z.string() });
const DAY_MS = 86_400_000;
const MAX_RANGE_MS = 366 * DAY_MS;

const time = z.union([z.coerce.number().int().nonnegative(), z.string().max(40)]).transform((v, ctx) => {
  const ms = typeof v === 'number' ? v : /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (!Number.isFinite(ms) || ms < 0 || ms > Date.UTC(2299, 11, 31)) {
    ctx.addIssue({ code: 'custom', message: 'an ISO-8601 time or epoch milliseconds' });
    return z.NEVER;
  }
  return ms;
});

const RangeQuery = z.object({
  from: time.optional(),
  to: time.optional(),
  event: z.string().min(1).max(200).optional(),
  property: z.string().min(1).max(200).optional(),
  value: z.string().max(1000).optional(),
});

function rangeOf(projectId: string, q: z.infer<typeof RangeQuery>, now: number): AnalyticsRange {
  const to = q.to ?? now;
  const from = q.from ?? to - 7 * DAY_MS;
  if (from >= to) throw new ServiceError('invalid_request', '`from` must be before `to`', { fields: [{ path: 'from', message: 'must be before to' }] });
  if (to - from > MAX_RANGE_MS) throw new ServiceError('invalid_request', 'a range spans at most 366 days', { fields: [{ path: 'from', message: 'range too long' }] });
  if ((q.property === undefined) !== (q.value === undefined)) throw new ServiceError('invalid_request', '`property` and `value` go together', { fields: [{ path: q.property === undefined ? 'property' : 'value', message: 'required with the other' }] });
  return { projectId, from, to, event: q.event, property: q.property !== undefined ? { key: q.property, value: q.value! } : undefined };
}

const TotalsSchema = z.object({ events: z.number().int(), uniqueUsers: z.number().int().describe('distinct distinctIds') });
const RangeEcho = z.object({ from: z.string(), to: z.string() });
const Errors = { 400: ErrorBodySchema, 404: ErrorBodySchema };
const echo = (r: AnalyticsRange) => ({ from: new Date(r.from).toISOString(), to: new Date(r.to).toISOString() });

export function analyticsRoutes(platform: Platform): FastifyPluginAsyncZod {
  const { analytics, clock } = platform;
  const auth = { auth: AUTH.project('analytics:read') };
  return async (app) => {
    app.get(
      '/v1/projects/:slug/analytics/trends',
      {
        config: auth,
        schema: {
          tags: ['analytics'],
          summary: 'Events and unique users per hour or day (UTC) over a range, with totals; empty buckets included',
          params: Params,
          querystring: RangeQuery.extend({ interval: z.enum(['hour', 'day']).default('day') }),
          response: { 200: z.object({ range: RangeEcho, interval: z.enum(['hour', 'day']), totals: TotalsSchema, series: z.array(TotalsSchema.extend({ bucket: z.string() })) }), ...Errors },
        },
      },
      async (request) => {
        const q = request.query;
        const r = rangeOf(projectOf(request).id, q, clock.now());
        if ((r.to - r.from) / (q.interval === 'hour' ? 3_600_000 : DAY_MS) > 10_000) throw new ServiceError('invalid_request', 'at most 10,000 buckets: use interval=day', { fields: [{ path: 'interval', message: 'too many buckets' }] });
        const [series, sum] = await Promise.all([trends(analytics, r, q.interval), totals(analytics, r)]);
        return { range: echo(r), interval: q.interval, totals: sum, series };
      },
    );

    app.get(
      '/v1/projects/:slug/analytics/top-events',
      {
        config: auth,
        schema: {
          tags: ['analytics'],
          summary: 'The most frequent events over a range',
          params: Params,
          querystring: RangeQuery.omit({ event: true }).extend({ limit: z.coerce.number().int().min(1).max(100).default(10) }),
          response: { 200: z.object({ range: RangeEcho, data: z.array(TotalsSchema.extend({ event: z.string() })) }), ...Errors },
        },
      },
      async (request) => {
        const r = rangeOf(projectOf(request).id, request.query, clock.now());
        return { range: echo(r), data: await topEvents(analytics, r, request.query.limit) };
      },
    );

    app.get(
      '/v1/projects/:slug/analytics/breakdown',
      {
        config: auth,
        schema: {
          tags: ['analytics'],
          summary: 'One event broken down by the values of one property (`by`); null for events without it',
          params: Params,
          querystring: RangeQuery.extend({ event: z.string().min(1).max(200), by: z.string().min(1).max(200), limit: z.coerce.number().int().min(1).max(100).default(20) }),
          response: { 200: z.object({ range: RangeEcho, event: z.string(), by: z.string(), data: z.array(TotalsSchema.extend({ value: z.string().nullable() })) }), ...Errors },
        },
      },
      async (request) => {
        const q = request.query;
        const r = rangeOf(projectOf(request).id, q, clock.now());
        return { range: echo(r), event: q.event, by: q.by, data: await breakdown(analytics, { ...r, event: q.event }, q.by, q.limit) };
      },
    );

    app.get(
      '/v1/projects/:slug/analytics/events',
      {
        config: auth,
        schema: {
          tags: ['analytics'],
          summary: 'The newest raw events, newest first (scrubbed)',
          params: Params,
          querystring: RangeQuery.extend({ limit: z.coerce.number().int().min(1).max(100).default(50) }),
          response: {
            200: z.object({
              range: RangeEcho,
              data: z.array(
                z.object({ uuid: z.string(), event: z.string(), distinctId: z.string(), timestamp: z.string(), receivedAt: z.string(), environment: z.string(), sessionId: z.string().nullable(), path: z.string().nullable(), properties: z.record(z.string(), z.string()) }),
              ),
            }),
            ...Errors,
          },
        },
      },
      async (request) => {
        const r = rangeOf(projectOf(request).id, request.query, clock.now());
        return { range: echo(r), data: await latestEvents(analytics, r, request.query.limit) };
      },
    );
  };
}
