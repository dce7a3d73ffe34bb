import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { analyticsRepository, type AnalyticsRange } from './analytics-repository.ts';
import type { RangeQuery } from '../../schemas/api/analytics.ts';
import { declared } from '../declared-route.ts';

/**
 * Reading analytics back (issue 16): the table's `analytics*` routes (shapes in schemas/api/analytics.ts), for a
 * session, a CLI token or a key with `analytics:read` (ingest keys read nothing, §5.2 rule 3). Every query takes a time range (`from`, `to`: ISO-8601
 * or epoch ms; default the last 7 days), at most 366 days, and optionally one event name and one property filter
 * (`property=plan&value=pro`: the property's text, JSON for values that are not strings).
 */
const DAY_MS = 86_400_000;
const MAX_RANGE_MS = 366 * DAY_MS;

function rangeOf(projectId: string, q: RangeQuery, now: number): AnalyticsRange {
  const to = q.to ?? now;
  const from = q.from ?? to - 7 * DAY_MS;
  if (from >= to) throw new ServiceError('invalid_request', '`from` must be before `to`', { fields: [{ path: 'from', message: 'must be before to' }] });
  if (to - from > MAX_RANGE_MS)
    throw new ServiceError('invalid_request', 'a range spans at most 366 days', { fields: [{ path: 'from', message: 'range too long' }] });
  if ((q.property === undefined) !== (q.value === undefined))
    throw new ServiceError('invalid_request', '`property` and `value` go together', {
      fields: [{ path: q.property === undefined ? 'property' : 'value', message: 'required with the other' }],
    });
  return { projectId, from, to, event: q.event, property: q.property !== undefined ? { key: q.property, value: q.value! } : undefined };
}

const echo = (r: AnalyticsRange) => ({ from: new Date(r.from).toISOString(), to: new Date(r.to).toISOString() });

export function analyticsRoutes(platform: Pick<Platform, 'analytics' | 'clock'>): FastifyPluginAsyncZod {
  const { analytics, clock } = platform;
  const auth = { auth: AUTH.project('analytics:read') };
  return async (app) => {
    app.route({
      ...declared('analyticsTrends'),
      config: auth,
      handler: async (request) => {
        const q = request.query;
        const r = rangeOf(projectOf(request).id, q, clock.now());
        if ((r.to - r.from) / (q.interval === 'hour' ? 3_600_000 : DAY_MS) > 10_000)
          throw new ServiceError('invalid_request', 'at most 10,000 buckets: use interval=day', {
            fields: [{ path: 'interval', message: 'too many buckets' }],
          });
        const { series, totals } = await analyticsRepository.trends(analytics, r, q.interval);
        return { range: echo(r), interval: q.interval, totals, series };
      },
    });

    app.route({
      ...declared('analyticsTopEvents'),
      config: auth,
      handler: async (request) => {
        const r = rangeOf(projectOf(request).id, request.query, clock.now());
        return { range: echo(r), data: await analyticsRepository.topEvents(analytics, r, request.query.limit) };
      },
    });

    app.route({
      ...declared('analyticsBreakdown'),
      config: auth,
      handler: async (request) => {
        const q = request.query;
        const r = rangeOf(projectOf(request).id, q, clock.now());
        return { range: echo(r), event: q.event, by: q.by, data: await analyticsRepository.breakdown(analytics, { ...r, event: q.event }, q.by, q.limit) };
      },
    });

    app.route({
      ...declared('analyticsEvents'),
      config: auth,
      handler: async (request) => {
        const r = rangeOf(projectOf(request).id, request.query, clock.now());
        return { range: echo(r), data: await analyticsRepository.latestEvents(analytics, r, request.query.limit) };
      },
    });
  };
}
