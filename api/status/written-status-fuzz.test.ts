import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { steerableGuard } from '../../test/support/outbound-guard.ts';
import { prng } from '../../test/support/prng.ts';

/**
 * The incident and maintenance routes (issue 43) under random input over real HTTP: bodies of any shape (wrong types,
 * huge strings, odd dates, unknown monitors, stray fields), ids of any characters, each method. Never a 5xx, always
 * a JSON answer, and what was stored is still read back whole. Seeded.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let base: string;
let slug: string;
let cookie: string;
let monitorId: string;

beforeAll(async () => {
  const outbound = steerableGuard({ unknownNames: 'fail' });
  outbound.table['fuzz-target.example'] = ['93.184.215.14']; // paused: checked at save, never dialled
  t = await buildTestApi({ overrides: { outbound: outbound.guard } });
  // The per-project budget of changes (tested in written-status.test.ts) would refuse most of these; input is the point here.
  const limiter = t.platform.limiter;
  const hit = limiter.hit.bind(limiter);
  limiter.hit = (key, limit, windowMs) =>
    key.startsWith('status-writes:') ? Promise.resolve({ allowed: true, remaining: limit, retryAfterSec: 0 }) : hit(key, limit, windowMs);
  const owner = await signUpAndSignIn(t.app, t.platform);
  cookie = owner.cookie;
  slug = (await createProject(t.app, owner.cookie)).slug;
  const res = await t.app.inject({
    method: 'POST',
    url: `/v1/projects/${slug}/uptime`,
    headers: sessionHeaders(cookie),
    payload: { name: 'Public', url: 'https://fuzz-target.example/', public: true, paused: true },
  });
  expect(res.statusCode).toBe(201);
  monitorId = res.json().monitor.id;
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
});
afterAll(async () => {
  await t?.close();
});

describe('the incident and maintenance routes under random input', () => {
  it('never answer 5xx, always JSON, and keep serving', async () => {
    const rnd = prng(43);
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(1 + Math.floor(rnd() * 0x2fff))).join('');
    const incidents: string[] = ['inc_nope'];
    const windows: string[] = ['mnt_nope'];
    const now = Date.now();
    const value = (): unknown =>
      pick([
        () => text(Math.floor(rnd() * 50)),
        () => 'x'.repeat(pick([0, 1, 200, 201, 5000, 5001, 20_000])),
        () => Math.floor(rnd() * 1e6) - 5e5,
        () => null,
        () => true,
        () => [monitorId, text(5)].slice(0, Math.floor(rnd() * 3)),
        () => Array.from({ length: pick([0, 1, 101, 300]) }, () => monitorId),
        () => new Date(now + (rnd() - 0.3) * 400 * 86_400_000).toISOString(),
        () => pick(['investigating', 'identified', 'monitoring', 'resolved', 'none', 'minor', 'major', 'critical', 'bogus']),
        () => ({ nested: text(3) }),
      ])();
    const body = () => {
      // Mostly a valid body of one of the routes, with a few fields replaced by anything (and now and then a stray one).
      const out: Record<string, unknown> = pick([
        { title: 'Outage', message: 'Looking', monitorIds: [monitorId] },
        { status: 'monitoring', message: 'A fix is out' },
        { impact: 'major' },
        { title: 'Upgrade', monitorIds: [monitorId], startsAt: new Date(now + 60_000).toISOString(), endsAt: new Date(now + 3_600_000).toISOString() },
      ]);
      const keys = ['title', 'message', 'impact', 'status', 'monitorIds', 'automaticIncidentId', 'startsAt', 'endsAt'];
      for (const k of keys) if (rnd() < 0.12) out[k] = value();
      if (rnd() < 0.05) out[text(4)] = value();
      return out;
    };
    const seen = new Map<number, number>();
    for (let i = 0; i < 300; i++) {
      const id = rnd() < 0.2 ? encodeURIComponent(text(Math.floor(rnd() * 80))) : pick(rnd() < 0.5 ? incidents : windows);
      const [method, path] = pick([
        ['POST', `/v1/projects/${slug}/uptime/incidents`],
        ['GET', `/v1/projects/${slug}/uptime/incidents/${id}`],
        ['PATCH', `/v1/projects/${slug}/uptime/incidents/${id}`],
        ['POST', `/v1/projects/${slug}/uptime/incidents/${id}/updates`],
        ['GET', `/v1/projects/${slug}/uptime/maintenance`],
        ['POST', `/v1/projects/${slug}/uptime/maintenance`],
        ['PATCH', `/v1/projects/${slug}/uptime/maintenance/${id}`],
        ['DELETE', `/v1/projects/${slug}/uptime/maintenance/${id}`],
      ] as const);
      const payload =
        method === 'GET' || method === 'DELETE' ? undefined : rnd() < 0.05 ? pick(['not json', '[]', 'null', '{"title":']) : JSON.stringify(body());
      const res = await fetch(`${base}${path}`, {
        method,
        headers: { cookie, ...(payload === undefined ? {} : { 'content-type': 'application/json' }) },
        body: payload,
        signal: AbortSignal.timeout(5000),
      });
      const text_ = await res.text();
      seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
      expect(res.status, `${method} ${path.slice(0, 100)} ${text_.slice(0, 200)}`).toBeLessThan(500);
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      if (res.status === 201 && path.endsWith('/incidents')) incidents.push(JSON.parse(text_).incident.id);
      if (res.status === 201 && path.endsWith('/maintenance')) windows.push(JSON.parse(text_).maintenance.id);
    }
    expect(seen.get(201)).toBeGreaterThan(2);
    expect(seen.get(400)).toBeGreaterThan(10);
    // What was stored reads back whole, on the routes and on the public status JSON.
    const list = await fetch(`${base}/v1/projects/${slug}/uptime/incidents`, { headers: { cookie } });
    expect(list.status).toBe(200);
    expect((await list.json()).written.length).toBe(incidents.length - 1);
    const status = await fetch(`${base}/v1/status/${slug}`);
    expect(status.status).toBe(200);
    expect((await status.json()).monitors).toHaveLength(1);
  });
});
