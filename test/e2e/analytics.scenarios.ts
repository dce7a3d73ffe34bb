import { randomUUID } from 'node:crypto';
import { expect, it } from 'vitest';
import type { Platform } from '../../platform/platform.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { usageMonth } from '../../schemas/usage-month.ts';
import { edgeKnows } from './error-tracking.scenarios.ts';
import { eventually, http, newProject, signedInUser, type E2eProject, type ServiceUrls } from './support/http-client.ts';

/**
 * Analytics through the whole path: `POST /v1/analytics/i` on the edge, the bus, processor/analytics/, ClickHouse,
 * and the API's queries. Run twice by analytics.e2e.test.ts: embedded (one process) and on Postgres + Kafka +
 * ClickHouse + Redis (roles started separately). Every test makes its own project.
 */
export interface AnalyticsService extends ServiceUrls {
  platform: Platform;
}

const HOUR = 3_600_000;
/** A fixed recent hour, so buckets are known (events are trusted within 7 days of their receipt). */
const T0 = Math.floor((Date.now() - 30 * HOUR) / HOUR) * HOUR;

export function defineAnalyticsScenarios(service: () => AnalyticsService): void {
  let cookie: string | undefined;
  const fresh = async (): Promise<E2eProject> => {
    const s = service();
    cookie ??= (await signedInUser(s.platform, s)).cookie;
    const p = await newProject(s, cookie, { production: ['shop.example.com'] });
    await edgeKnows(s, p.ingestKey);
    return p;
  };
  const capture = (p: E2eProject, batch: unknown[], headers: Record<string, string> = {}) =>
    http(`${service().ingestUrl}/v1/analytics/i`, { method: 'POST', headers: { authorization: `Bearer ${p.ingestKey}`, ...headers }, body: { batch } });
  const api = (p: E2eProject, path: string) => http(`${service().apiUrl}/v1/projects/${p.slug}/analytics${path}`, { headers: { authorization: `Bearer ${p.apiKey}` } });
  const range = `from=${T0 - 2 * HOUR}&to=${T0 + 3 * HOUR}`;
  const stored = (p: E2eProject, n: number) =>
    eventually(`${n} analytics events of ${p.slug}`, async () => {
      const r = await api(p, `/events?${range}&limit=100`);
      return r.status === 200 && r.json.data.length >= n ? r.json.data : undefined;
    });

  it('stores a batch, drops only its malformed events, and answers trends, top events, breakdowns and raw events', async () => {
    const p = await fresh();
    const ev = (event: string, distinctId: string, at: number, properties: Record<string, unknown> = {}) => ({ event, distinctId, timestamp: at, properties, uuid: randomUUID() });
    const batch = [
      ev('pageview', 'u1', T0 + 1_000, { plan: 'pro', path: '/' }),
      ev('pageview', 'u1', T0 + 2_000, { plan: 'pro' }),
      ev('pageview', 'u2', T0 + HOUR + 5, { plan: 'free' }),
      ev('signup', 'u2', T0 + HOUR + 10, { plan: 'free', seats: 3 }),
      ev('pageview', 'u3', T0 + 2 * HOUR, {}),
      { event: '', distinctId: 'bad' },
      { event: 'no-user' },
      'not an object',
    ];
    const res = await capture(p, batch);
    expect(res.status).toBe(202);
    expect(res.json.ingested).toBe(5);
    expect(res.json.rejected.map((r: { index: number }) => r.index)).toEqual([5, 6, 7]);
    expect(res.json.rejected[1].fields[0].path).toBe('distinctId');
    await stored(p, 5);

    const trends = await api(p, `/trends?${range}&interval=hour&event=pageview`);
    expect(trends.status).toBe(200);
    expect(trends.json.totals).toEqual({ events: 4, uniqueUsers: 3 });
    const byBucket = Object.fromEntries(trends.json.series.map((b: { bucket: string; events: number; uniqueUsers: number }) => [b.bucket, [b.events, b.uniqueUsers]]));
    expect(trends.json.series).toHaveLength(5);
    expect(byBucket[new Date(T0).toISOString()]).toEqual([2, 1]);
    expect(byBucket[new Date(T0 + HOUR).toISOString()]).toEqual([1, 1]);
    expect(byBucket[new Date(T0 + 2 * HOUR).toISOString()]).toEqual([1, 1]);
    expect(byBucket[new Date(T0 - HOUR).toISOString()]).toEqual([0, 0]);

    const filtered = await api(p, `/trends?${range}&interval=day&event=pageview&property=plan&value=pro`);
    expect(filtered.json.totals).toEqual({ events: 2, uniqueUsers: 1 });
    const numeric = await api(p, `/trends?${range}&property=seats&value=3`);
    expect(numeric.json.totals).toEqual({ events: 1, uniqueUsers: 1 });

    const top = await api(p, `/top-events?${range}`);
    expect(top.json.data).toEqual([
      { event: 'pageview', events: 4, uniqueUsers: 3 },
      { event: 'signup', events: 1, uniqueUsers: 1 },
    ]);
    const breakdown = await api(p, `/breakdown?${range}&event=pageview&by=plan`);
    expect(breakdown.json.data).toEqual([
      { value: 'pro', events: 2, uniqueUsers: 1 },
      { value: 'free', events: 1, uniqueUsers: 1 },
      { value: null, events: 1, uniqueUsers: 1 },
    ]);
    const latest = (await api(p, `/events?${range}&limit=2`)).json.data;
    expect(latest.map((e: { event: string }) => e.event)).toEqual(['pageview', 'signup']);
    expect(latest[1]).toMatchObject({ distinctId: 'u2', timestamp: new Date(T0 + HOUR + 10).toISOString(), properties: { plan: 'free', seats: '3' }, environment: 'unknown' });

    expect((await api(p, `/trends?from=${T0}&to=${T0 - 1}`)).json.error).toBe('invalid_request');
    expect((await api(p, `/trends?${range}&property=plan`)).json.error).toBe('invalid_request');
  });

  it('stores an event sent twice (same uuid and time) once; scrubs secrets; clamps untrusted times; stamps the environment', async () => {
    const p = await fresh();
    const once = { event: 'checkout', distinctId: 'u9', uuid: randomUUID(), timestamp: T0 + 123, properties: { token: 'sk_live_abcdefghijklmnopqrstuvwx', note: 'db at postgres://admin:hunter2secret@db.internal/app' } };
    expect((await capture(p, [once])).status).toBe(202);
    expect((await capture(p, [once])).status).toBe(202);
    const far = { event: 'ancient', distinctId: 'u9', timestamp: '2001-01-01T00:00:00Z', uuid: randomUUID() };
    const before = Date.now();
    expect((await capture(p, [far], { origin: 'https://shop.example.com' })).status).toBe(202);
    const all = await eventually('both events', async () => {
      const r = await api(p, `/events?from=${T0 - HOUR}&to=${Date.now() + HOUR}&limit=100`);
      const names = (r.json.data ?? []).map((e: { event: string }) => e.event);
      return names.includes('ancient') && names.includes('checkout') ? r.json.data : undefined;
    });
    await new Promise((r) => setTimeout(r, 500));
    const again = (await api(p, `/events?from=${T0 - HOUR}&to=${Date.now() + HOUR}&limit=100`)).json.data;
    expect(again.filter((e: { event: string }) => e.event === 'checkout')).toHaveLength(1);
    const checkout = all.find((e: { event: string }) => e.event === 'checkout');
    expect(JSON.stringify(checkout)).not.toContain('hunter2secret');
    expect(JSON.stringify(checkout)).not.toContain('sk_live_abcdefghijklmnopqrstuvwx');
    const ancient = all.find((e: { event: string }) => e.event === 'ancient');
    expect(new Date(ancient.timestamp).getTime()).toBeGreaterThanOrEqual(before - 1000);
    expect(ancient.environment).toBe('production');
  });

  it('keeps the edge rules: key, media type, size, batch bounds, origin, quota (429 with Retry-After); ingest keys read nothing', async () => {
    const p = await fresh();
    const one = [{ event: 'e', distinctId: 'u' }];
    expect((await http(`${service().ingestUrl}/v1/analytics/i`, { method: 'POST', body: { batch: one } })).status).toBe(401);
    const textPlain = await fetch(`${service().ingestUrl}/v1/analytics/i`, { method: 'POST', headers: { authorization: `Bearer ${p.ingestKey}`, 'content-type': 'text/plain' }, body: JSON.stringify({ batch: one }) });
    expect(textPlain.status).toBe(415);
    expect((await capture(p, Array.from({ length: LIMITS.analyticsBatch.maxEvents + 1 }, () => one[0]))).json.error).toBe('invalid_request');
    expect((await capture(p, [])).status).toBe(400);
    const huge = await capture(p, [{ event: 'e', distinctId: 'u', properties: { blob: 'x'.repeat(LIMITS.analyticsBatch.maxBodyBytes) } }]);
    expect(huge.status).toBe(413);
    const tooMany = await capture(p, [{ event: 'e', distinctId: 'u', properties: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`k${i}`, i])) }]);
    expect(tooMany.status).toBe(400);
    expect((await http(`${service().apiUrl}/v1/projects/${p.slug}/analytics/events`, { headers: { authorization: `Bearer ${p.ingestKey}` } })).status).toBe(403);

    const s = service();
    await s.platform.db.query(`UPDATE error_settings SET ingest_origins = '{allowed.example.org}' WHERE project_id = $1`, [p.id]);
    await s.platform.db.query(
      `INSERT INTO analytics_monthly_usage (project_id, month, accepted) VALUES ($1, $2, $3) ON CONFLICT (project_id, month) DO UPDATE SET accepted = EXCLUDED.accepted`,
      [p.id, usageMonth(Date.now()), LIMITS.analyticsMonthlyQuota],
    );
    const refused = await eventually('the edge sees the quota', async () => {
      const r = await capture(p, one);
      return r.status === 429 ? r : undefined;
    }, 20_000, 200);
    expect(refused.json.error).toBe('analytics_quota_exceeded');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await capture(p, one, { origin: 'https://evil.example.net' })).json.error).toBe('origin_not_allowed');
  });
}
