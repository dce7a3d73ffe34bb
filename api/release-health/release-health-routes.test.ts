import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, bearer, createKey, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { prng } from '../../test/support/prng.ts';

/**
 * The release-health routes' rules (the numbers themselves: processor/release-health/release-health-pipeline.test-scenarios.ts):
 * the same reach as the issues (`errors:read`), a range of at most 90 days with `since` before `until`, a strict
 * query string, 404 for a deploy of no such project; and under random query strings, never a 5xx.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let cookie: string;
let slug: string;
let otherSlug: string;
let deployId: string;

beforeAll(async () => {
  t = await buildTestApi();
  const user = await signUpAndSignIn(t.app, t.platform);
  cookie = user.cookie;
  const p = await createProject(t.app, cookie);
  slug = p.slug;
  otherSlug = (await createProject(t.app, cookie)).slug;
  deployId = 'dep_' + 'ab'.repeat(16);
  await t.platform.db.query(`INSERT INTO deploys (id, project_id, branch, environment, status) VALUES ($1, $2, 'main', 'production', 'ready')`, [
    deployId,
    p.id,
  ]);
});
afterAll(async () => t?.close());

const get = (url: string, headers: Record<string, string> = sessionHeaders(cookie)) => t.app.inject({ method: 'GET', url, headers });

describe('release health routes', () => {
  it('answer an empty project with no deploys and empty buckets, the default range being the last 24 hours by hour', async () => {
    const res = await get(`/v1/projects/${slug}/release-health`);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ interval: 'hour', environment: null, liveDeployId: null, deploys: [] });
    expect(Date.parse(body.range.to) - Date.parse(body.range.from)).toBe(24 * 3_600_000);
    const one = await get(`/v1/projects/${slug}/deploys/${deployId}/health?interval=day`);
    expect(one.statusCode).toBe(200);
    expect(one.json()).toMatchObject({ deployId, live: false, interval: 'day', totals: { sessions: 0, crashFreeSessions: null } });
    expect(one.json().series.length).toBeGreaterThanOrEqual(30);
    expect(one.json().series.length).toBeLessThanOrEqual(31);
  });

  it('need errors:read: a key with it reads, a key without is refused', async () => {
    const reader = await createKey(t.app, cookie, slug, { kind: 'live', scopes: ['errors:read'] });
    const other = await createKey(t.app, cookie, slug, { kind: 'live', scopes: ['analytics:read'] });
    expect((await get(`/v1/projects/${slug}/release-health`, bearer(reader.token))).statusCode).toBe(200);
    expect((await get(`/v1/projects/${slug}/deploys/${deployId}/health`, bearer(reader.token))).statusCode).toBe(200);
    const refused = await get(`/v1/projects/${slug}/release-health`, bearer(other.token));
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toBe('insufficient_scope');
    expect((await get(`/v1/projects/${slug}/release-health`, {})).statusCode).toBe(401);
  });

  it("answer 404 for a deploy that is not the project's", async () => {
    const res = await get(`/v1/projects/${otherSlug}/deploys/${deployId}/health`);
    expect(res.statusCode).toBe(404);
    expect(res.json().error).toBe('not_found');
  });

  it('refuse a bad range, an unknown parameter or value, with invalid_request naming the field', async () => {
    for (const [q, field] of [
      ['since=2026-01-02T00:00:00Z&until=2026-01-01T00:00:00Z', 'since'],
      ['since=2025-01-01T00:00:00Z&until=2026-01-01T00:00:00Z', 'since'],
      ['interval=minute', 'interval'],
      ['environment=staging', 'environment'],
      ['since=yesterday', 'since'],
      ['range=24h', ''],
      [`deploy=${'x'.repeat(251)}`, 'deploy'],
    ] as const) {
      const res = await get(`/v1/projects/${slug}/release-health?${q}`);
      expect(res.statusCode, q).toBe(400);
      expect(res.json().error).toBe('invalid_request');
      if (field) expect(JSON.stringify(res.json().fields), q).toContain(field);
    }
    expect((await get(`/v1/projects/${slug}/deploys/${deployId}/health?deploy=${deployId}`)).statusCode).toBe(400);
  });

  it('under random query strings: never 5xx, always a JSON answer', async () => {
    const rnd = prng(40);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(Math.floor(rnd() * 0x2fff))).join('');
    const keys = ['since', 'until', 'interval', 'environment', 'deploy', 'x', 'since[]', '__proto__', 'constructor'] as const;
    const values = () =>
      pick([
        String(Math.floor(rnd() * 2 ** 53)),
        '-1',
        '1e400',
        'NaN',
        new Date(Date.now() - rnd() * 2e10).toISOString(),
        'hour',
        'day',
        'production',
        deployId,
        text(Math.floor(rnd() * 300)),
        '',
        '%00',
        'a'.repeat(5000),
      ]);
    for (let i = 0; i < 300; i++) {
      const parts: string[] = [];
      const n = Math.floor(rnd() * 5);
      for (let j = 0; j < n; j++) parts.push(`${encodeURIComponent(pick(keys))}=${encodeURIComponent(values())}`);
      const path =
        rnd() < 0.5 ? `/v1/projects/${slug}/release-health` : `/v1/projects/${slug}/deploys/${pick([deployId, encodeURIComponent(text(20)), 'dep_'])}/health`;
      const res = await get(`${path}?${parts.join('&')}`);
      expect(res.statusCode, `${path}?${parts.join('&')}`).toBeLessThan(500);
      expect(() => res.json()).not.toThrow();
    }
    expect((await get(`/v1/projects/${slug}/release-health`)).statusCode).toBe(200);
  });
});
