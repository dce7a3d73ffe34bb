import { z } from 'zod';
import { errorAnswers, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';

/**
 * Reading analytics back (spec §4.6): every query takes a time range (`from`, `to`: ISO-8601 or epoch ms), optionally
 * one event name and one property filter (`property=plan&value=pro`).
 */
const time = z.union([z.coerce.number().int().nonnegative(), z.string().max(40)]).transform((v, ctx) => {
  const ms = typeof v === 'number' ? v : /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (!Number.isFinite(ms) || ms < 0 || ms > Date.UTC(2299, 11, 31)) {
    ctx.addIssue({ code: 'custom', message: 'an ISO-8601 time or epoch milliseconds' });
    return z.NEVER;
  }
  return ms;
});

export const RangeQuery = z.object({
  from: time.optional(),
  to: time.optional(),
  event: z.string().min(1).max(200).optional(),
  property: z.string().min(1).max(200).optional(),
  value: z.string().max(1000).optional(),
});
export type RangeQuery = z.infer<typeof RangeQuery>;

export const TotalsSchema = z.object({ events: z.number().int(), uniqueUsers: z.number().int().describe('distinct distinctIds') });
export type Totals = z.infer<typeof TotalsSchema>;
const RangeEcho = z.object({ from: z.string(), to: z.string() });

export const IntervalSchema = z.enum(['hour', 'day']);
export type Interval = z.infer<typeof IntervalSchema>;
export const TrendsQuery = RangeQuery.extend({ interval: IntervalSchema.default('day') });
export const CountPointSchema = TotalsSchema.extend({ bucket: z.string() });
export type CountPoint = z.infer<typeof CountPointSchema>;
export const TrendsAnswer = z.object({ range: RangeEcho, interval: IntervalSchema, totals: TotalsSchema, series: z.array(CountPointSchema) });
export type TrendsAnswer = z.infer<typeof TrendsAnswer>;
export type Trends = z.infer<typeof TrendsAnswer>;

export const TopEventsQuery = RangeQuery.omit({ event: true }).extend({ limit: z.coerce.number().int().min(1).max(100).default(10) });
export const TopEventSchema = TotalsSchema.extend({ event: z.string() });
export type TopEvent = z.infer<typeof TopEventSchema>;
export const TopEventsAnswer = z.object({ range: RangeEcho, data: z.array(TopEventSchema) });
export type TopEventsAnswer = z.infer<typeof TopEventsAnswer>;

export const BreakdownQuery = RangeQuery.extend({
  event: z.string().min(1).max(200),
  by: z.string().min(1).max(200),
  limit: z.coerce.number().int().min(1).max(100).default(20),
});
export const BreakdownRowSchema = TotalsSchema.extend({ value: z.string().nullable() });
export type BreakdownRow = z.infer<typeof BreakdownRowSchema>;
export const BreakdownAnswer = z.object({ range: RangeEcho, event: z.string(), by: z.string(), data: z.array(BreakdownRowSchema) });
export type BreakdownAnswer = z.infer<typeof BreakdownAnswer>;

export const RawEventsQuery = RangeQuery.extend({ limit: z.coerce.number().int().min(1).max(100).default(50) });
export const RawEventSchema = z.object({
  uuid: z.string(),
  event: z.string(),
  distinctId: z.string(),
  timestamp: z.string(),
  receivedAt: z.string(),
  environment: z.string(),
  sessionId: z.string().nullable(),
  path: z.string().nullable(),
  properties: z.record(z.string(), z.string()),
});
export type RawEvent = z.infer<typeof RawEventSchema>;
export const RawEventsAnswer = z.object({ range: RangeEcho, data: z.array(RawEventSchema) });
export type RawEventsAnswer = z.infer<typeof RawEventsAnswer>;

const tags = ['analytics'];
const errors = errorAnswers(400, 404);

/**
 * The family's routes (paths in route-table.ts), for a session, a CLI token or a key with `analytics:read`. Each
 * query names only the parameters it reads: one it does not (`range=24h`) is refused, not silently ignored.
 */
export const analyticsRoutes = routeShapes({
  analyticsTrends: {
    tags,
    summary: 'Events and unique users per hour or day (UTC) over a range, with totals; empty buckets included',
    params: SlugParams,
    querystring: TrendsQuery,
    response: { 200: TrendsAnswer, ...errors },
  },
  analyticsTopEvents: {
    tags,
    summary: 'The most frequent events over a range',
    params: SlugParams,
    querystring: TopEventsQuery,
    response: { 200: TopEventsAnswer, ...errors },
  },
  analyticsBreakdown: {
    tags,
    summary: 'One event broken down by the values of one property (`by`); null for events without it',
    params: SlugParams,
    querystring: BreakdownQuery,
    response: { 200: BreakdownAnswer, ...errors },
  },
  analyticsEvents: {
    tags,
    summary: 'The newest raw events, newest first (scrubbed)',
    params: SlugParams,
    querystring: RawEventsQuery,
    response: { 200: RawEventsAnswer, ...errors },
  },
});
