import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import type { DeployHealthQuery } from '../../schemas/api/release-health.ts';
import { AUTH } from '../auth/route-auth.ts';
import { projectOf } from '../auth/auth-plugin.ts';
import { declared } from '../declared-route.ts';
import { releaseHealthRepository, type HealthRange } from './release-health-repository.ts';
import { totalsOf } from './health-numbers.ts';

/**
 * Release health (issue 40): crash-free sessions and users per deploy (shapes and what each number means in
 * schemas/api/release-health.ts), for a session, a CLI token or a key with `errors:read`, the same reach as the
 * issues. Ranges are of session starts: `since` (default 24 hours before `until`, 30 days with interval=day) to
 * `until` (default now), at most 90 days (what the table keeps).
 */
const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
const MAX_RANGE_MS = 90 * DAY_MS;
const MAX_DEPLOYS = 20;

function rangeOf(projectId: string, q: DeployHealthQuery, now: number): HealthRange {
  const to = q.until ?? now;
  const from = q.since ?? to - (q.interval === 'day' ? 30 * DAY_MS : DAY_MS);
  if (from >= to) throw new ServiceError('invalid_request', '`since` must be before `until`', { fields: [{ path: 'since', message: 'must be before until' }] });
  if (to - from > MAX_RANGE_MS)
    throw new ServiceError('invalid_request', 'a range spans at most 90 days', { fields: [{ path: 'since', message: 'range too long' }] });
  return { projectId, from, to, environment: q.environment };
}

const echo = (r: HealthRange) => ({ from: new Date(r.from).toISOString(), to: new Date(r.to).toISOString() });

export function releaseHealthRoutes(platform: Pick<Platform, 'analytics' | 'clock' | 'db'>): FastifyPluginAsyncZod {
  const { analytics, clock, db } = platform;
  const read = { auth: AUTH.project('errors:read') };
  return async (app) => {
    app.route({
      ...declared('getReleaseHealth'),
      config: read,
      handler: async (request) => {
        const q = request.query;
        const projectId = projectOf(request).id;
        const r = { ...rangeOf(projectId, q, clock.now()), deploy: q.deploy };
        const [groups, liveDeployId] = await Promise.all([
          releaseHealthRepository.totalsByGroup(analytics, r, MAX_DEPLOYS),
          releaseHealthRepository.liveDeployId(db, projectId),
        ]);
        const series = await releaseHealthRepository.seriesByGroup(analytics, r, q.interval, groups);
        return {
          range: echo(r),
          interval: q.interval,
          environment: q.environment ?? null,
          liveDeployId,
          deploys: groups.map((g) => ({
            deployId: g.deployId,
            release: g.release,
            live: g.deployId !== null && g.deployId === liveDeployId,
            totals: g.totals,
            series: series.get(releaseHealthRepository.keyOf(g)) ?? [],
          })),
        };
      },
    });

    app.route({
      ...declared('getDeployHealth'),
      config: read,
      handler: async (request) => {
        const q = request.query;
        const projectId = projectOf(request).id;
        const { deployId } = request.params;
        const r = { ...rangeOf(projectId, q, clock.now()), deploy: deployId };
        const [exists, liveDeployId] = await Promise.all([
          releaseHealthRepository.deployExists(db, projectId, deployId),
          releaseHealthRepository.liveDeployId(db, projectId),
        ]);
        if (!exists) throw new ServiceError('not_found', 'no such deploy');
        const group = { deployId, release: null };
        const [totals, series] = await Promise.all([
          releaseHealthRepository.totalsByGroup(analytics, r, 2),
          releaseHealthRepository.seriesByGroup(analytics, r, q.interval, [group]),
        ]);
        const t = totals.find((x) => x.deployId === deployId)?.totals ?? totalsOf(undefined);
        return {
          deployId,
          live: deployId === liveDeployId,
          range: echo(r),
          interval: q.interval,
          environment: q.environment ?? null,
          totals: t,
          series: series.get(releaseHealthRepository.keyOf(group)) ?? [],
        };
      },
    });
  };
}
