import { describe, expect, it, vi } from 'vitest';
import { createLogger } from '../logger.ts';
import type { Platform } from '../platform.ts';
import { metricValue } from '../../test/support/metrics-text.ts';
import { bearerMatches, createOps } from './ops.ts';
import { createReadiness } from './readiness.ts';

const logger = createLogger('silent');
const TOKEN = 'metrics-token-0123456789';
type Ports = Pick<Platform, 'db' | 'analytics' | 'bus' | 'limiter'>;

/** Ports whose every question answers, each a spy; `over` replaces some. */
function ports(over: Record<string, unknown> = {}) {
  const p = {
    db: { query: vi.fn(async () => ({ rows: [], rowCount: 1 })) },
    analytics: { query: vi.fn(async () => []) },
    bus: { ping: vi.fn(async () => undefined) },
    limiter: { hitAll: vi.fn(async () => [{ allowed: true, remaining: 1, retryAfterSec: 1 }]) },
    ...over,
  };
  return p as typeof p & Ports;
}

/** A port any use of which fails the test: what a role does not use must not be asked. */
const untouchable = new Proxy(
  {},
  {
    get(_t, prop) {
      throw new Error(`asked the port for ${String(prop)}`);
    },
  },
);

const never = () => new Promise<never>(() => undefined);

describe('the metrics token', () => {
  it('is accepted only as `Bearer <token>`, whatever the scheme case, and never when no token is configured', () => {
    expect(bearerMatches(`Bearer ${TOKEN}`, TOKEN)).toBe(true);
    expect(bearerMatches(`bearer ${TOKEN}`, TOKEN)).toBe(true);
    expect(bearerMatches(`Bearer ${TOKEN}x`, TOKEN)).toBe(false);
    expect(bearerMatches(`Bearer ${TOKEN.slice(0, -1)}`, TOKEN)).toBe(false);
    expect(bearerMatches(TOKEN, TOKEN)).toBe(false);
    expect(bearerMatches(`Basic ${TOKEN}`, TOKEN)).toBe(false);
    expect(bearerMatches(`Bearer ${TOKEN} more`, TOKEN)).toBe(false);
    expect(bearerMatches(undefined, TOKEN)).toBe(false);
    expect(bearerMatches('Bearer ', undefined)).toBe(false);
    expect(bearerMatches('Bearer undefined', undefined)).toBe(false);
  });

  it('decides whether /metrics is served; /livez and /readyz are served to anyone', () => {
    const closed = createOps({ ports: ports(), uses: ['relational'], logger });
    expect(closed.serves('/metrics', `Bearer ${TOKEN}`)).toBe(false);
    const open = createOps({ ports: ports(), uses: ['relational'], logger, metricsToken: TOKEN });
    expect(open.serves('/metrics', undefined)).toBe(false);
    expect(open.serves('/metrics', 'Bearer wrong-token-0123456789')).toBe(false);
    expect(open.serves('/metrics', `Bearer ${TOKEN}`)).toBe(true);
    for (const o of [closed, open]) {
      expect(o.serves('/livez', undefined)).toBe(true);
      expect(o.serves('/readyz', undefined)).toBe(true);
      expect(o.serves('/other', `Bearer ${TOKEN}`)).toBe(false);
    }
  });
});

describe('/livez', () => {
  it('answers without asking any dependency', async () => {
    const p = ports({ db: untouchable, analytics: untouchable, bus: untouchable, limiter: untouchable });
    const a = await createOps({ ports: p, uses: ['relational', 'analytical', 'bus', 'rateLimits'], logger }).answer('/livez');
    expect([a.status, JSON.parse(a.body)]).toEqual([200, { status: 'live' }]);
  });
});

describe('/readyz', () => {
  it('is 200 when every dependency of the role answers, asking only those', async () => {
    const p = ports({ analytics: untouchable });
    const a = await createOps({ ports: p, uses: ['relational', 'bus', 'rateLimits', 'mail'], logger }).answer('/readyz');
    expect(a.status).toBe(200);
    expect(JSON.parse(a.body)).toEqual({ status: 'ready', checks: { relational: 'ok', bus: 'ok', rateLimits: 'ok' } });
    expect(p.db.query).toHaveBeenCalledWith('SELECT 1');
    expect(p.bus.ping).toHaveBeenCalledTimes(1);
    expect(p.limiter.hitAll).toHaveBeenCalledTimes(1);
  });

  it('is 503 JSON naming the dependency that failed, without its error, with Retry-After', async () => {
    const p = ports({
      analytics: {
        query: async () => {
          throw new Error('connect ECONNREFUSED 10.1.2.3:8123');
        },
      },
    });
    const a = await createOps({ ports: p, uses: ['relational', 'analytical', 'bus'], logger }).answer('/readyz');
    expect(a.status).toBe(503);
    const body = JSON.parse(a.body);
    expect(body).toMatchObject({ error: 'unavailable', checks: { relational: 'ok', analytical: 'failed', bus: 'ok' } });
    expect(body.message).toContain('analytical');
    expect(a.body).not.toContain('10.1.2.3');
    expect(a.headers).toContainEqual(['Retry-After', '5']);
  });

  it('counts a dependency that does not answer in time as failed', async () => {
    const p = ports({ bus: { ping: never } });
    const ops = createOps({ ports: p, uses: ['relational', 'bus'], logger, readiness: { timeoutMs: 20 } });
    const a = await ops.answer('/readyz');
    expect(a.status).toBe(503);
    expect(JSON.parse(a.body)).toMatchObject({ error: 'unavailable', checks: { relational: 'ok', bus: 'timeout' } });
    expect(JSON.parse(a.body).message).toContain('bus did not answer within 20 ms');
  });

  it('a port that throws as it is asked is a failed check, not a failed probe', async () => {
    const p = ports({ limiter: untouchable });
    const a = await createOps({ ports: p, uses: ['rateLimits'], logger }).answer('/readyz');
    expect([a.status, JSON.parse(a.body).checks]).toEqual([503, { rateLimits: 'failed' }]);
  });

  it('asks once for concurrent probes and keeps the answer for a second', async () => {
    let now = 1_000_000;
    const p = ports();
    const readiness = createReadiness(p, ['relational'], logger, { now: () => now });
    const [a, b] = await Promise.all([readiness.check(), readiness.check()]);
    expect(a).toEqual(b);
    expect(p.db.query).toHaveBeenCalledTimes(1);
    now += 999;
    await readiness.check();
    expect(p.db.query).toHaveBeenCalledTimes(1);
    now += 1;
    await readiness.check();
    expect(p.db.query).toHaveBeenCalledTimes(2);
  });
});

describe('/metrics', () => {
  async function scrape(ops: ReturnType<typeof createOps>): Promise<string> {
    const a = await ops.answer('/metrics');
    expect(a.status).toBe(200);
    expect(a.headers.find(([k]) => k === 'Content-Type')?.[1]).toMatch(/^text\/plain; version=0\.0\.4/);
    return a.body;
  }

  it("shows the roles' own counts as they are at the scrape", async () => {
    const ops = createOps({ ports: ports(), uses: ['relational'], logger, metricsToken: TOKEN });
    const edge: Record<string, number> = { accepted_batches: 1, accepted_events: 3, unauthorized: 0, dropped_item_session: 2 };
    ops.metrics.addEdgeCounts('sentry', edge);
    const pipeline = { accepted: 5, duplicates: 1, dropped: { invalid_event: 2 } as Record<string, number>, counted: { resolved: 9, unresolved_no_map: 1 } };
    ops.metrics.addPipeline('errors', () => pipeline);
    ops.metrics.addWebhookAttempts(() => ({ succeeded: 4, dead: 1 }));
    ops.metrics.addGithubReports(() => ({ status_set: 3, github_failed: 2 }));
    ops.metrics.addBuilds(() => ({ ready: 2, canceled: 0, failed: { timeout: 1 } }));
    ops.metrics.addBusLag(async () => [{ topic: 'errors.events.v1', group: 'error-pipeline', messages: 7 }]);
    ops.metrics.addDbPool(() => ({ total: 4, idle: 3, waiting: 0 }));

    let text = await scrape(ops);
    expect(metricValue(text, 'service_ingest_refusals_total', { family: 'sentry', reason: 'unauthorized' })).toBe(0);
    expect(metricValue(text, 'service_ingest_accepted_total', { family: 'sentry', unit: 'events' })).toBe(3);
    expect(metricValue(text, 'service_ingest_dropped_total', { family: 'sentry', reason: 'item_session' })).toBe(2);
    expect(metricValue(text, 'service_pipeline_events_total', { pipeline: 'errors', outcome: 'accepted' })).toBe(5);
    expect(metricValue(text, 'service_pipeline_events_total', { pipeline: 'errors', outcome: 'dropped' })).toBe(2);
    expect(metricValue(text, 'service_pipeline_dropped_total', { pipeline: 'errors', reason: 'invalid_event' })).toBe(2);
    expect(metricValue(text, 'service_pipeline_counted_total', { pipeline: 'errors', name: 'resolved' })).toBe(9);
    expect(metricValue(text, 'service_pipeline_counted_total', { pipeline: 'errors', name: 'unresolved_no_map' })).toBe(1);
    expect(metricValue(text, 'service_webhook_attempts_total', { outcome: 'dead' })).toBe(1);
    expect(metricValue(text, 'service_github_reports_total', { outcome: 'github_failed' })).toBe(2);
    expect(metricValue(text, 'service_builds_total', { outcome: 'failed', reason: 'timeout' })).toBe(1);
    expect(metricValue(text, 'service_bus_lag_messages', { topic: 'errors.events.v1', group: 'error-pipeline' })).toBe(7);
    expect(metricValue(text, 'service_db_pool_idle_connections')).toBe(3);
    expect(metricValue(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);

    edge.unauthorized++;
    pipeline.accepted += 10;
    text = await scrape(ops);
    expect(metricValue(text, 'service_ingest_refusals_total', { family: 'sentry', reason: 'unauthorized' })).toBe(1);
    expect(metricValue(text, 'service_pipeline_events_total', { pipeline: 'errors', outcome: 'accepted' })).toBe(15);
  });

  it('shows prebuilt uploads refused by reason (issue 42), as counted at the scrape', async () => {
    const ops = createOps({ ports: ports(), uses: ['relational'], logger, metricsToken: TOKEN });
    const counts: Record<string, number> = { link: 2 };
    ops.metrics.addPrebuiltRefusals(() => counts);
    expect(metricValue(await scrape(ops), 'service_prebuilt_refusals_total', { reason: 'link' })).toBe(2);
    counts.artifact_too_large = 1;
    expect(metricValue(await scrape(ops), 'service_prebuilt_refusals_total', { reason: 'artifact_too_large' })).toBe(1);
  });

  it('shows status page sign-ups by outcome (issue 43), as counted at the scrape', async () => {
    const ops = createOps({ ports: ports(), uses: ['relational'], logger, metricsToken: TOKEN });
    const counts: Record<string, number> = { mailed: 3, address_limited: 1 };
    ops.metrics.addStatusSignups(() => counts);
    expect(metricValue(await scrape(ops), 'service_status_signups_total', { outcome: 'mailed' })).toBe(3);
    counts.ip_limited = 2;
    expect(metricValue(await scrape(ops), 'service_status_signups_total', { outcome: 'ip_limited' })).toBe(2);
  });

  it('shows a role only the metrics it has sources for, and answer times by route', async () => {
    const ops = createOps({ ports: ports(), uses: ['relational'], logger, metricsToken: TOKEN });
    let text = await scrape(ops);
    expect(text).not.toContain('service_ingest_');
    expect(text).not.toContain('service_builds_total');
    ops.metrics.observeApiAnswer('GET', '/v1/projects/:slug', 200, 0.02);
    ops.metrics.observeApiAnswer('GET', '/v1/projects/:slug', 200, 0.2);
    text = await scrape(ops);
    expect(metricValue(text, 'service_api_request_seconds_count', { method: 'GET', route: '/v1/projects/:slug', code: '200' })).toBe(2);
    expect(metricValue(text, 'service_api_request_seconds_bucket', { route: '/v1/projects/:slug', le: '0.025' })).toBe(1);
  });

  it('a bus that cannot tell its lag leaves the series out and the scrape still answers', async () => {
    const ops = createOps({ ports: ports(), uses: ['bus'], logger, metricsToken: TOKEN });
    ops.metrics.addBusLag(async () => {
      throw new Error('kafka away');
    });
    const text = await scrape(ops);
    expect(text).toContain('# TYPE service_bus_lag_messages gauge');
    expect(metricValue(text, 'service_bus_lag_messages')).toBeUndefined();
  });
});
