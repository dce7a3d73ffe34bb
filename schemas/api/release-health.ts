import { z } from 'zod';
import { ENVIRONMENTS } from '../error-event.ts';
import { errorAnswers, SlugParams } from './common.ts';
import { routeShapes } from './route-shape.ts';

/**
 * Release health (issue 40): Sentry session updates and aggregates counted per deploy (processor/release-health/),
 * read back as Sentry's numbers. A session counts once, in the bucket it started in:
 *   sessions           sessions started (an individual session at its init update; an aggregate's every session)
 *   crashed, abnormal  sessions that ended so; crashed includes `unhandled`: sessions that ended in an unhandled error
 *                      that did not end the app (what @sentry/browser 10+ sends for an uncaught error; Sentry's
 *                      frontend release health counts them as crashes)
 *   errored            sessions that saw an error but neither crashed nor ended abnormally
 *   healthy            the rest
 *   crashFreeSessions  1 − crashed / sessions (null without sessions)
 *   users              distinct users (Sentry's `did`) of the sessions; crashedUsers those with a crashed session;
 *   crashFreeUsers     1 − crashedUsers / users (null without users; sessions without a user are not counted)
 */
const time = z.union([z.coerce.number().int().nonnegative(), z.string().max(40)]).transform((v, ctx) => {
  const ms = typeof v === 'number' ? v : /^\d+$/.test(v) ? Number(v) : Date.parse(v);
  if (!Number.isFinite(ms) || ms < 0 || ms > Date.UTC(2299, 11, 31)) {
    ctx.addIssue({ code: 'custom', message: 'an ISO-8601 time or epoch milliseconds' });
    return z.NEVER;
  }
  return ms;
});

export const HealthIntervalSchema = z.enum(['hour', 'day']);
export type HealthInterval = z.infer<typeof HealthIntervalSchema>;

export const DeployHealthQuery = z.object({
  since: time.optional().describe('start of the range (ISO-8601 or epoch ms); default: 24 hours (interval=hour) or 30 days (interval=day) before `until`'),
  until: time.optional().describe('end of the range, exclusive; default now. A range spans at most 90 days (what is kept)'),
  interval: HealthIntervalSchema.default('hour').describe('series bucket, UTC'),
  environment: z.enum(ENVIRONMENTS).optional().describe('only sessions stamped with this environment (§7.4)'),
});
export type DeployHealthQuery = z.infer<typeof DeployHealthQuery>;
export const ReleaseHealthQuery = DeployHealthQuery.extend({
  deploy: z.string().min(1).max(250).optional().describe('one deploy id, or a release string no deploy was named for'),
});
export type ReleaseHealthQuery = z.infer<typeof ReleaseHealthQuery>;

export const HealthTotalsSchema = z.object({
  sessions: z.number().int(),
  crashed: z.number().int(),
  unhandled: z.number().int(),
  errored: z.number().int(),
  abnormal: z.number().int(),
  healthy: z.number().int(),
  crashFreeSessions: z.number().nullable(),
  users: z.number().int(),
  crashedUsers: z.number().int(),
  crashFreeUsers: z.number().nullable(),
});
export type HealthTotals = z.infer<typeof HealthTotalsSchema>;
export const HealthPointSchema = HealthTotalsSchema.extend({ bucket: z.string() });
export type HealthPoint = z.infer<typeof HealthPointSchema>;

const RangeEcho = z.object({ from: z.string(), to: z.string() });

export const ReleaseHealthEntrySchema = z.object({
  deployId: z.string().nullable().describe('the deploy the sessions were counted for; null when none was named'),
  release: z.string().nullable().describe('without a deploy: the release string the SDK sent (empty when none)'),
  live: z.boolean().describe("the project's live deploy"),
  totals: HealthTotalsSchema,
  series: z.array(HealthPointSchema),
});
export type ReleaseHealthEntry = z.infer<typeof ReleaseHealthEntrySchema>;
export const ReleaseHealthAnswer = z.object({
  range: RangeEcho,
  interval: HealthIntervalSchema,
  environment: z.enum(ENVIRONMENTS).nullable(),
  liveDeployId: z.string().nullable(),
  deploys: z.array(ReleaseHealthEntrySchema).describe('most sessions first, at most 20'),
});
export type ReleaseHealthAnswer = z.infer<typeof ReleaseHealthAnswer>;

export const DeployHealthParams = z.object({ slug: z.string(), deployId: z.string().max(64) });
export const DeployHealthAnswer = z.object({
  deployId: z.string(),
  live: z.boolean(),
  range: RangeEcho,
  interval: HealthIntervalSchema,
  environment: z.enum(ENVIRONMENTS).nullable(),
  totals: HealthTotalsSchema,
  series: z.array(HealthPointSchema),
});
export type DeployHealthAnswer = z.infer<typeof DeployHealthAnswer>;

const tags = ['release health'];

/** The family's routes (paths in route-table.ts), for a session, a CLI token or a key with `errors:read`. */
export const releaseHealthRoutes = routeShapes({
  getReleaseHealth: {
    tags,
    summary: 'Crash-free sessions and users per deploy over a range, with totals and an hourly or daily series',
    params: SlugParams,
    querystring: ReleaseHealthQuery,
    response: { 200: ReleaseHealthAnswer, ...errorAnswers(400, 404) },
  },
  getDeployHealth: {
    tags,
    summary: "One deploy's crash-free sessions and users over a range, with totals and an hourly or daily series",
    params: DeployHealthParams,
    querystring: DeployHealthQuery,
    response: { 200: DeployHealthAnswer, ...errorAnswers(400, 404) },
  },
});
