import { createHash } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Platform } from '../../platform/platform.ts';
import type { StatusPage } from '../../schemas/api/uptime.ts';
import { ServiceError } from '../../schemas/error-codes.ts';
import { LIMITS } from '../../schemas/limits.ts';
import type { CheckError } from '../../schemas/uptime.ts';
import { AUTH } from '../auth/route-auth.ts';
import { declared } from '../declared-route.ts';
import { withWrittenStatus } from '../status/written-status-page.ts';
import { statusPageRoutes } from './status-page-routes.ts';
import { type HourRow, type IncidentRow, type PublicMonitorRow, uptimeRepository } from './uptime-repository.ts';

/**
 * `GET /v1/status/:slug` (spec §4.2): the public status JSON of a project's public monitors, for any status page, top
 * to bottom:
 *   1. rate limit  per caller IP, like every §4.2 route                                  429 rate_limited
 *   2. cache       the answer of the last few seconds (LIMITS.uptime.statusCacheMs), per slug, bytes and ETag kept
 *   3. compute     the public monitors (none, or no such project: 404, the same answer), uptime over 24 h, 7 d and
 *                  90 d and a daily series from the hourly rollups (never from raw checks), open and recent incidents;
 *                  once per slug at a time (the caller who starts it waits; meanwhile others get the previous answer)
 *   4. answer      `If-None-Match` with the same ETag: 304; CORS open (`*`); `Cache-Control: public, max-age=5`
 * Nothing else about the project is shown: no project name, no URL unless the owner shows it, no ids but the monitors'.
 */
const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;
const MAX_CACHED = 1000;

/** A slug's computed status: the object every renderer reads (JSON, page, badge, feed), its JSON bytes and ETag. */
export interface StatusAnswer {
  status: StatusPage;
  body: string;
  etag: string;
}

/** A slug's answer until `until`, or none (404). */
interface Cached {
  until: number;
  page: StatusAnswer | undefined;
}

/** A strong ETag of some bytes. */
export const etagOf = (body: string) => `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;

/** The first UTC day the status JSON covers. */
const firstDay = (now: number) => Math.floor(now / DAY_MS) * DAY_MS - (LIMITS.uptime.statusDays - 1) * DAY_MS;

/** The status JSON of these public monitors at `now`: uptime over 24 h, 7 d and 90 d and a daily series from their hourly rollups. */
function statusPageOf(monitors: PublicMonitorRow[], hourly: HourRow[], incidents: IncidentRow[], now: number): StatusPage {
  const days = LIMITS.uptime.statusDays;
  const from = firstDay(now);
  const pct = (checks: number, failures: number) => (checks ? Math.round(((checks - failures) / checks) * 100_000) / 1000 : null);
  const sum = (hours: Array<{ checks: number; failures: number }>) => ({
    checks: hours.reduce((a, h) => a + h.checks, 0),
    failures: hours.reduce((a, h) => a + h.failures, 0),
  });
  const page: StatusPage = {
    status: 'pending',
    monitors: monitors.map((m) => {
      const mine = hourly
        .filter((h) => h.monitor_id === m.id)
        .map((h) => ({
          at: new Date(h.hour).getTime(),
          checks: Number(h.checks),
          failures: Number(h.failures),
          msSum: Number(h.ms_sum ?? 0),
          msChecks: Number(h.ms_checks ?? 0),
        }));
      const over = (sinceMs: number) => {
        const s = sum(mine.filter((h) => h.at >= now - sinceMs));
        return pct(s.checks, s.failures);
      };
      const daily = Array.from({ length: days }, (_, i) => {
        const start = from + i * DAY_MS;
        const s = sum(mine.filter((h) => h.at >= start && h.at < start + DAY_MS));
        return { date: new Date(start).toISOString().slice(0, 10), uptime: pct(s.checks, s.failures), checks: s.checks };
      });
      return {
        id: m.id,
        name: m.name,
        ...(m.show_url ? { url: m.url } : {}),
        state: m.paused ? ('paused' as const) : m.state,
        uptime: { '24h': over(DAY_MS), '7d': over(7 * DAY_MS), '90d': over(days * DAY_MS) },
        daily,
        // The last 24 hours (this one and the 23 before), from the rollups' response times (migration 0047).
        responseTimes24h: mine
          .filter((h) => h.at >= Math.floor(now / HOUR_MS) * HOUR_MS - 23 * HOUR_MS && h.msChecks > 0)
          .sort((a, b) => a.at - b.at)
          .map((h) => ({ at: new Date(h.at).toISOString(), ms: Math.round(h.msSum / h.msChecks) })),
      };
    }),
    incidents: incidents.map((i) => ({
      monitorId: i.monitor_id,
      monitor: i.name,
      startedAt: new Date(i.started_at).toISOString(),
      endedAt: i.ended_at === null ? null : new Date(i.ended_at).toISOString(),
      cause: i.cause_error as CheckError,
    })),
    updatedAt: new Date(now).toISOString(),
  };
  const active = page.monitors.filter((m) => m.state !== 'paused');
  const down = active.filter((m) => m.state === 'down').length;
  page.status = !active.length || active.every((m) => m.state === 'pending') ? 'pending' : down === 0 ? 'up' : down === active.length ? 'down' : 'partial';
  return page;
}

export interface StatusSource {
  /** A slug's status (computed at most once per LIMITS.uptime.statusCacheMs), or undefined: no such page. */
  get(slug: string): Promise<StatusAnswer | undefined>;
  /** Step 1 of every status route: one hit of the caller IP's budget; 429 rate_limited past it. */
  limit(ip: string): Promise<void>;
}

type SourcePlatform = Pick<Platform, 'db' | 'clock' | 'limiter'>;
const perPlatform = new WeakMap<object, StatusSource>();

/**
 * The status of a platform's slugs, one per platform: the JSON route, the page, the badge, the feed and a custom
 * domain's page all read the same computed object from the same cache.
 */
export function statusSourceOf(platform: SourcePlatform): StatusSource {
  let source = perPlatform.get(platform);
  if (!source) {
    source = createStatusSource(platform);
    perPlatform.set(platform, source);
  }
  return source;
}

function createStatusSource(platform: SourcePlatform): StatusSource {
  const { db, clock, limiter } = platform;
  const cache = new Map<string, Cached>();
  const inflight = new Map<string, Promise<Cached>>();

  async function compute(slug: string, now: number): Promise<StatusPage | undefined> {
    const monitors = await uptimeRepository.publicMonitors(db, slug);
    if (!monitors.length) return undefined;
    const ids = monitors.map((m) => m.id);
    const hourly = await uptimeRepository.hours(db, ids, new Date(firstDay(now)));
    const since = new Date(now - LIMITS.uptime.statusDays * DAY_MS);
    const incidents = await uptimeRepository.incidents(db, monitors[0]!.project_id, { publicOnly: true, since, limit: 20 });
    // What people wrote: maintenance states and windows, annotations, manual incidents (issue 43).
    return withWrittenStatus(
      db,
      monitors[0]!.project_id,
      statusPageOf(monitors, hourly, incidents, now),
      incidents.map((i) => i.id),
      now,
    );
  }

  /** Bounded: when full, expired answers go first, then the oldest (a Map keeps insertion order). */
  function remember(slug: string, entry: Cached, now: number) {
    cache.delete(slug);
    if (cache.size >= MAX_CACHED) for (const [k, c] of cache) if (c.until <= now) cache.delete(k);
    if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
    cache.set(slug, entry);
  }

  return {
    async limit(ip) {
      const rate = await limiter.hit(`status:ip:${ip}`, LIMITS.uptime.statusPerIpPerMinute, 60_000);
      if (!rate.allowed) throw new ServiceError('rate_limited', 'too many status requests from this address', { retryAfterSec: rate.retryAfterSec });
    },
    async get(rawSlug) {
      const slug = rawSlug.toLowerCase();
      const now = clock.now();
      const hit = cache.get(slug);
      if (hit && hit.until > now) return hit.page;
      // One computation per slug at a time (no stampede): whoever starts it waits for it; while it runs, others get
      // the answer it replaces (at most one computation older), or wait for it when there is none.
      let pending = inflight.get(slug);
      if (pending && hit) return hit.page;
      if (!pending) {
        pending = compute(slug, now)
          .then((status) => {
            const body = status && JSON.stringify(status);
            const entry = { until: now + LIMITS.uptime.statusCacheMs, page: status && body !== undefined ? { status, body, etag: etagOf(body) } : undefined };
            remember(slug, entry, now);
            return entry;
          })
          .finally(() => inflight.delete(slug));
        inflight.set(slug, pending);
      }
      return (await pending).page;
    },
  };
}

export function statusRoute(platform: SourcePlatform & Pick<Platform, 'config'>): FastifyPluginAsyncZod {
  const source = statusSourceOf(platform);
  return async (app) => {
    app.route({
      ...declared('publicStatus'),
      config: { auth: AUTH.public },
      handler: async (request, reply) => {
        // 1. rate limit
        await source.limit(request.ip);
        reply.header('access-control-allow-origin', '*');
        // 2. cache, 3. compute
        const page = await source.get(request.params.slug);
        if (!page) throw new ServiceError('not_found', 'no such status page');
        // 4. answer
        reply.header('cache-control', `public, max-age=${LIMITS.uptime.statusCacheMs / 1000}`).header('etag', page.etag);
        if (request.headers['if-none-match'] === page.etag) return reply.code(304).send(null);
        return reply.type('application/json; charset=utf-8').send(page.body as never);
      },
    });
    // The page, the badge and the feed: the same object, rendered (status-page-routes.ts).
    await app.register(statusPageRoutes(platform, source));
  };
}
