import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ensureSiteMonitor } from '../../domain/uptime/site-monitor.ts';
import { ManualClock } from '../../platform/clock.ts';
import type { Platform } from '../../platform/platform.ts';
import type { MailMessage, Mailer } from '../../platform/ports/mailer.ts';
import { startUptimeMonitor, type UptimeMonitor } from '../../processor/uptime/uptime-monitor.ts';
import type { Monitor } from '../../schemas/api/uptime.ts';
import * as projectEvents from '../../schemas/bus/project-events.ts';
import { bearer, buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../../test/support/https-receiver.ts';
import { steerableGuard, type SteerableGuard } from '../../test/support/outbound-guard.ts';
import type { TestPlatformOptions } from '../../test/support/platform.ts';

/**
 * Uptime monitors and the public status JSON (issue 26), through HTTP, against loopback targets the tests' guard lets
 * through: a target that answers 200, 500, hangs, resets, sends the wrong body, resolves to a private address, or
 * shows a certificate nobody trusts. Time is a manual clock: a check runs when `tick()` finds it due.
 */
export function defineUptimeScenarios(name: string, opts: TestPlatformOptions = {}) {
  describe(name, () => {
    let receiver: HttpsReceiver;
    let untrusted: HttpsReceiver;
    let t: Awaited<ReturnType<typeof buildTestApi>>;
    let app: FastifyInstance;
    let platform: Platform;
    let owner: SignedInUser;
    let monitor: UptimeMonitor;
    let outbound: SteerableGuard;
    const clock = new ManualClock(Date.UTC(2026, 10, 25, 12, 0, 0));
    const mail: MailMessage[] = [];
    const events: projectEvents.ProjectEvent[] = [];
    const suffix = randomUUID().slice(0, 8);
    const recorder: Mailer = { adapter: 'file', send: async (m) => void mail.push(m), close: async () => undefined };

    beforeAll(async () => {
      receiver = await startHttpsReceiver();
      untrusted = await startHttpsReceiver();
      outbound = steerableGuard({ ca: receiver.cert, unknownNames: 'fail' });
      outbound.table['private.test'] = ['10.20.30.40'];
      t = await buildTestApi({ ...opts, overrides: { ...opts.overrides, clock, outbound: outbound.guard, mailer: recorder } });
      app = t.app;
      platform = t.platform;
      owner = await signUpAndSignIn(app, platform);
      monitor = await startUptimeMonitor(platform, { tickMs: false });
      await platform.bus.subscribe(projectEvents.TOPIC, `uptime-test-${suffix}`, async (ms) => {
        for (const m of ms) {
          const e = projectEvents.decode(m.value);
          if (e?.event.startsWith('uptime.')) events.push(e);
        }
      });
    });
    afterAll(async () => {
      await monitor?.stop();
      await t?.close();
      await receiver?.close();
      await untrusted?.close();
    });
    beforeEach(() => {
      receiver.respond = () => ({ status: 200, body: 'all systems go' });
    });

    const session = () => sessionHeaders(owner.cookie);
    const target = (p: string) => receiver.url.replace(/\/hook$/, p);
    const hits = (p: string) => receiver.requests.filter((r) => r.path === p).length;
    const create = async (slug: string, body: Record<string, unknown>) => {
      const res = await app.inject({ method: 'POST', url: `/v1/projects/${slug}/uptime`, headers: session(), payload: body });
      expect(res.statusCode, res.body).toBe(201);
      return res.json().monitor as Monitor;
    };
    const read = async (slug: string, id: string) =>
      (await app.inject({ url: `/v1/projects/${slug}/uptime/${id}`, headers: session() })).json().monitor as Monitor;
    /** Move time on and run one round of due checks to the end. */
    const round = async (advanceMs = 0) => {
      clock.advance(advanceMs);
      await monitor.tick();
      await monitor.idle();
    };

    it('manages monitors: https and public addresses only, bounded intervals, scopes; a key with uptime:read cannot change them', async () => {
      const p = await createProject(app, owner.cookie);
      const post = (payload: Record<string, unknown>, headers = session()) =>
        app.inject({ method: 'POST', url: `/v1/projects/${p.slug}/uptime`, headers, payload });
      expect((await post({ name: 'plain', url: 'http://example.test/' })).json().error).toBe('url_not_https');
      expect((await post({ name: 'metadata', url: 'https://169.254.169.254/latest' })).json().error).toBe('url_private_host');
      expect((await post({ name: 'rebinds', url: 'https://private.test/' })).json().error).toBe('url_private_host');
      expect((await post({ name: 'fast', url: target('/ok'), intervalSec: 5 })).json().error).toBe('invalid_request');
      const m = await create(p.slug, { name: 'API', url: target('/ok') });
      expect(m).toMatchObject({
        name: 'API',
        method: 'GET',
        intervalSec: 60,
        expectedStatus: { min: 200, max: 399 },
        public: false,
        state: 'pending',
        lastCheck: null,
      });
      const patched = await app.inject({
        method: 'PATCH',
        url: `/v1/projects/${p.slug}/uptime/${m.id}`,
        headers: session(),
        payload: { name: 'API v2', public: true },
      });
      expect(patched.json().monitor).toMatchObject({ name: 'API v2', public: true });
      const list = await app.inject({ url: `/v1/projects/${p.slug}/uptime`, headers: session() });
      expect(list.json()).toMatchObject({ monitors: [{ id: m.id }], statusPage: `/v1/status/${p.slug}` });

      const key = await app.inject({
        method: 'POST',
        url: `/v1/projects/${p.slug}/keys`,
        headers: session(),
        payload: { kind: 'live', scopes: ['uptime:read'] },
      });
      const token = key.json().key.token as string;
      expect((await app.inject({ url: `/v1/projects/${p.slug}/uptime`, headers: bearer(token) })).statusCode).toBe(200);
      expect((await post({ name: 'x', url: target('/ok') }, bearer(token))).json().error).toBe('insufficient_scope');
      // Another project's member sees nothing of it.
      const stranger = await signUpAndSignIn(app, platform);
      expect((await app.inject({ url: `/v1/projects/${p.slug}/uptime/${m.id}`, headers: sessionHeaders(stranger.cookie) })).statusCode).toBe(404);
      expect((await app.inject({ method: 'DELETE', url: `/v1/projects/${p.slug}/uptime/${m.id}`, headers: session() })).statusCode).toBe(204);
      expect((await app.inject({ url: `/v1/projects/${p.slug}/uptime/${m.id}`, headers: session() })).statusCode).toBe(404);
    });

    it('checks on schedule; down after two failures with one incident, one mail and uptime.down; up after one success with uptime.up and a recovery mail', async () => {
      const p = await createProject(app, owner.cookie);
      const path = `/${p.slug}/health`;
      const m = await create(p.slug, { name: 'Shop', url: target(path), intervalSec: 30 });
      await round();
      expect(hits(path)).toBe(1);
      expect(await read(p.slug, m.id)).toMatchObject({ state: 'up', lastCheck: { ok: true, status: 200, error: null } });
      await round(10_000); // not due yet
      expect(hits(path)).toBe(1);

      receiver.respond = (r) => (r.path === path ? { status: 500, body: 'oops' } : { status: 200 });
      await round(20_000);
      expect(await read(p.slug, m.id)).toMatchObject({ state: 'up', lastCheck: { ok: false, status: 500, error: 'status' } });
      await round(30_000);
      expect((await read(p.slug, m.id)).state).toBe('down');
      await round(30_000); // still down: no second incident, no second mail
      const downMail = mail.filter((x) => x.subject.includes('[down] Shop'));
      expect(downMail).toHaveLength(1);
      expect(downMail[0]!.to).toEqual([owner.email]);
      expect(downMail[0]!.text).toMatch(/HTTP 500/);
      const incidents = async () => (await app.inject({ url: `/v1/projects/${p.slug}/uptime/incidents`, headers: session() })).json().incidents;
      expect(await incidents()).toEqual([
        expect.objectContaining({ monitorId: m.id, monitor: 'Shop', endedAt: null, cause: { error: 'status', status: 500, detail: expect.any(String) } }),
      ]);

      receiver.respond = () => ({ status: 200 });
      await round(30_000);
      expect((await read(p.slug, m.id)).state).toBe('up');
      const [incident] = await incidents();
      expect(incident.endedAt).not.toBeNull();
      expect(mail.filter((x) => x.subject.includes('[up] Shop'))).toHaveLength(1);
      // The family is a subscription like any other (§6.1 rule 2).
      const hook = await app.inject({
        method: 'POST',
        url: `/v1/projects/${p.slug}/webhooks`,
        headers: session(),
        payload: { url: target(`/${p.slug}/hook`), events: ['uptime.*'] },
      });
      expect(hook.statusCode, hook.body).toBe(201);
      const mine = () => events.filter((e) => (e.data as { monitor?: { id: string } }).monitor?.id === m.id);
      await expect.poll(() => mine().map((e) => e.event)).toEqual(['uptime.down', 'uptime.up']);
      expect(mine()[1]!.data).toMatchObject({ incident: { id: incident.id, durationSec: 60, cause: { error: 'status', status: 500 } } });

      // The latest checks, newest first, from the analytical store.
      const checks = (await app.inject({ url: `/v1/projects/${p.slug}/uptime/${m.id}/checks`, headers: session() })).json().checks;
      expect(checks.map((c: { ok: boolean }) => c.ok)).toEqual([true, false, false, false, true]);
    });

    it('an alert lost to a failing bus is sent by the sweep a minute after the change, once: mail and uptime.down, then uptime.up as usual', async () => {
      const p = await createProject(app, owner.cookie);
      const path = `/${p.slug}/health`;
      const m = await create(p.slug, { name: 'Lost', url: target(path), intervalSec: 30, failuresToDown: 1 });
      const mine = () => events.filter((e) => (e.data as { monitor?: { id: string } }).monitor?.id === m.id).map((e) => e.event);
      const mails = (kind: string) => mail.filter((x) => x.subject.startsWith(`[${kind}] Lost`)).length;
      receiver.respond = (r) => (r.path === path ? { status: 503, body: 'down' } : { status: 200 });
      const publish = platform.bus.publish;
      platform.bus.publish = async (topic, ms) => {
        if (topic === projectEvents.TOPIC) throw new Error('bus unavailable');
        return publish.call(platform.bus, topic, ms);
      };
      try {
        await round();
      } finally {
        platform.bus.publish = publish;
      }
      expect((await read(p.slug, m.id)).state).toBe('down');
      expect(mails('down')).toBe(0);
      await round(30_000); // still inside the minute its own check had: not taken over yet
      expect(mails('down')).toBe(0);
      await round(31_000);
      expect(mails('down')).toBe(1);
      await round(30_000);
      expect(mails('down')).toBe(1);
      receiver.respond = () => ({ status: 200 });
      await round(30_000);
      expect((await read(p.slug, m.id)).state).toBe('up');
      expect(mails('up')).toBe(1);
      await expect.poll(mine).toEqual(['uptime.down', 'uptime.up']);
    });

    it('names why a check failed: timeout, reset, wrong body, a private address, an unknown name, an untrusted certificate; a paused monitor is not checked', async () => {
      const p = await createProject(app, owner.cookie);
      receiver.respond = (r) =>
        r.path.endsWith('/hang')
          ? { status: 200, hang: true }
          : r.path.endsWith('/reset')
            ? { status: 200, reset: true }
            : { status: 200, body: 'maintenance' };
      const base = { failuresToDown: 1, intervalSec: 30 };
      const hang = await create(p.slug, { ...base, name: 'hang', url: target(`/${p.slug}/hang`), timeoutMs: 1000 });
      const reset = await create(p.slug, { ...base, name: 'reset', url: target(`/${p.slug}/reset`) });
      const body = await create(p.slug, { ...base, name: 'body', url: target(`/${p.slug}/body`), bodyContains: 'all systems go' });
      const tlsBad = await create(p.slug, { ...base, name: 'tls', url: untrusted.url });
      // Names that resolved at save time but not at check time (DNS changed): refused, or gone.
      outbound.table[`moved-${p.slug}.test`] = ['127.0.0.1'];
      outbound.table[`gone-${p.slug}.test`] = ['127.0.0.1'];
      const moved = await create(p.slug, { ...base, name: 'moved', url: `https://moved-${p.slug}.test:${receiver.port}/` });
      const gone = await create(p.slug, { ...base, name: 'gone', url: `https://gone-${p.slug}.test:${receiver.port}/` });
      outbound.table[`moved-${p.slug}.test`] = ['10.0.0.7'];
      delete outbound.table[`gone-${p.slug}.test`];
      const paused = await create(p.slug, { ...base, name: 'paused', url: target(`/${p.slug}/paused`), paused: true });
      await round();
      const errorOf = async (m: Monitor) => (await read(p.slug, m.id)).lastCheck?.error;
      expect(await errorOf(hang)).toBe('timeout');
      expect(await errorOf(reset)).toBe('connect');
      expect(await errorOf(body)).toBe('body');
      expect(await errorOf(tlsBad)).toBe('tls');
      expect(await errorOf(moved)).toBe('dns');
      expect(await errorOf(gone)).toBe('dns');
      expect(hits(`/${p.slug}/paused`)).toBe(0);
      expect(await read(p.slug, paused.id)).toMatchObject({ state: 'paused', lastCheck: null });
      expect(untrusted.requests).toHaveLength(0);
      for (const m of [hang, reset, body, tlsBad, moved, gone]) expect((await read(p.slug, m.id)).state).toBe('down');
    });

    it('two monitor processes never check one monitor twice in an interval', async () => {
      const p = await createProject(app, owner.cookie);
      const ids = [];
      for (let i = 0; i < 12; i++) ids.push((await create(p.slug, { name: `m${i}`, url: target(`/${p.slug}/m${i}`), intervalSec: 30 })).id);
      // Two processes of five check slots each: both must take a share, and together they check each one once.
      const first = await startUptimeMonitor(platform, { tickMs: false, concurrency: 5 });
      const second = await startUptimeMonitor(platform, { tickMs: false, concurrency: 5 });
      try {
        const both = async (advanceMs: number) => {
          clock.advance(advanceMs);
          for (let k = 0; k < 4; k++) {
            await Promise.all([first.tick(), second.tick()]);
            await Promise.all([first.idle(), second.idle()]);
          }
        };
        await both(0);
        expect(Array.from({ length: 12 }, (_, i) => hits(`/${p.slug}/m${i}`))).toEqual(Array(12).fill(1));
        await both(29_000);
        expect(Array.from({ length: 12 }, (_, i) => hits(`/${p.slug}/m${i}`))).toEqual(Array(12).fill(1));
        await both(1_000);
        expect(Array.from({ length: 12 }, (_, i) => hits(`/${p.slug}/m${i}`))).toEqual(Array(12).fill(2));
        // (the counts also hold other tests' monitors that came due: the hits above are this test's own)
        expect([first.stats().checks > 0, second.stats().checks > 0]).toEqual([true, true]);
      } finally {
        await first.stop();
        await second.stop();
      }
    });

    it('publishes the public monitors as status JSON: no URL unless shown, uptime from rollups, incidents, ETag and 304, open CORS, cached', async () => {
      const p = await createProject(app, owner.cookie);
      const status = (headers: Record<string, string> = {}) => app.inject({ url: `/v1/status/${p.slug}`, headers });
      const unknown = await app.inject({ url: `/v1/status/no-such-${p.slug}` });
      const none = await status();
      expect(none.statusCode).toBe(404);
      expect(none.body.replace(p.slug, 'X')).toBe(unknown.body.replace(`no-such-${p.slug}`, 'X'));
      await create(p.slug, { name: 'private one', url: target(`/${p.slug}/private`) });
      expect((await status()).statusCode).toBe(404);

      const path = `/${p.slug}/public`;
      const pub = await create(p.slug, { name: 'Website', url: target(path), intervalSec: 30, public: true, failuresToDown: 1 });
      const shown = await create(p.slug, { name: 'API', url: target(`/${p.slug}/api`), intervalSec: 30, public: true, showUrl: true });
      clock.advance(10_000); // past the cached 404
      await round();
      receiver.respond = (r) => (r.path === path ? { status: 503 } : { status: 200 });
      await round(30_000);
      receiver.respond = () => ({ status: 200 });
      await round(30_000);
      await round(30_000);
      const res = await status();
      expect(res.statusCode).toBe(200);
      expect(res.headers['access-control-allow-origin']).toBe('*');
      expect(res.headers['cache-control']).toBe('public, max-age=5');
      const page = res.json();
      expect(page.status).toBe('up');
      const byId = (id: string) => page.monitors.find((x: { id: string }) => x.id === id);
      const [website, api] = [byId(pub.id), byId(shown.id)];
      expect(website).toMatchObject({ id: pub.id, name: 'Website', state: 'up', uptime: { '24h': 75, '7d': 75, '90d': 75 } });
      expect(website).not.toHaveProperty('url');
      expect(api).toMatchObject({ id: shown.id, url: target(`/${p.slug}/api`), uptime: { '24h': 100 } });
      expect(website.daily).toHaveLength(90);
      expect(website.daily.at(-1)).toEqual({ date: '2026-11-25', uptime: 75, checks: 4 });
      expect(website.daily[0]).toEqual({ date: '2026-08-28', uptime: null, checks: 0 });
      expect(page.incidents).toEqual([{ monitorId: pub.id, monitor: 'Website', startedAt: expect.any(String), endedAt: expect.any(String), cause: 'status' }]);
      expect(res.body).not.toContain(path); // the Website's URL is not shown
      expect(res.body).not.toContain('private one');

      const again = await status({ 'if-none-match': String(res.headers.etag) });
      expect(again.statusCode).toBe(304);
      expect(again.body).toBe('');
      // Cached for 5 s: a change shows after that.
      receiver.respond = (r) => (r.path === path ? { status: 503 } : { status: 200 });
      await round(30_000);
      clock.advance(-30_000 + 1000);
      expect((await status()).body).toBe(res.body);
      clock.advance(30_000);
      const later = (await status()).json();
      expect(later.status).toBe('partial');
      expect(later.monitors.find((x: { id: string }) => x.id === pub.id).state).toBe('down');
      expect(later.incidents[0]).toMatchObject({ endedAt: null, cause: 'status' });
    });

    it('gives the live site a monitor when the first production deploy goes live, unless switched off; a deleted one stays deleted', async () => {
      const p = await createProject(app, owner.cookie);
      const projectId = (await platform.db.query<{ id: string }>('SELECT id FROM projects WHERE slug = $1', [p.slug])).rows[0]!.id;
      const live = async () => {
        await platform.db.query(`INSERT INTO deploys (id, project_id, branch, environment, status) VALUES ($1, $2, 'main', 'production', 'ready')`, [
          `dpl_${randomUUID().replace(/-/g, '')}`,
          projectId,
        ]);
        return ensureSiteMonitor({ ...platform, config: { ...platform.config, SITES_DOMAIN: 'sites.example.com' } }, projectId);
      };
      expect(await ensureSiteMonitor({ ...platform, config: { ...platform.config, SITES_DOMAIN: 'localhost' } }, projectId)).toBe('not_first');
      expect(await live()).toBe('created');
      const list = (await app.inject({ url: `/v1/projects/${p.slug}/uptime`, headers: session() })).json().monitors as Monitor[];
      expect(list).toEqual([
        expect.objectContaining({ name: 'Live site', url: `https://${p.slug}.sites.example.com/`, site: true, public: true, showUrl: false }),
      ]);
      await app.inject({ method: 'DELETE', url: `/v1/projects/${p.slug}/uptime/${list[0]!.id}`, headers: session() });
      expect(await live()).toBe('not_first');

      const q = await createProject(app, owner.cookie);
      const qid = (await platform.db.query<{ id: string }>('SELECT id FROM projects WHERE slug = $1', [q.slug])).rows[0]!.id;
      const off = await app.inject({ method: 'PATCH', url: `/v1/projects/${q.slug}/uptime/settings`, headers: session(), payload: { siteMonitor: false } });
      expect(off.json()).toEqual({ siteMonitor: false });
      await platform.db.query(`INSERT INTO deploys (id, project_id, branch, environment, status) VALUES ($1, $2, 'main', 'production', 'ready')`, [
        `dpl_${randomUUID().replace(/-/g, '')}`,
        qid,
      ]);
      expect(await ensureSiteMonitor({ ...platform, config: { ...platform.config, SITES_DOMAIN: 'sites.example.com' } }, qid)).toBe('switched_off');
    });
  });
}
