import http from 'node:http';
import net from 'node:net';
import { gzipSync } from 'node:zlib';
import { Header } from 'tar';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../platform/clock.ts';
import { ConfigError, loadConfig } from '../../platform/config.ts';
import { startUptimeMonitor, type UptimeMonitor } from '../../processor/uptime/uptime-monitor.ts';
import type { Monitor } from '../../schemas/api/uptime.ts';
import { LIMITS } from '../../schemas/limits.ts';
import { bootstrapInstance } from '../../service/bootstrap.ts';
import { bearer, buildTestApi, createProject, sessionHeaders, signUpAndSignIn, type SignedInUser } from '../../test/support/accounts.ts';

/**
 * Issue 43, "Tried on one machine", through HTTP and the production outbound guard (no test stand-in):
 * - ALLOW_LOCAL_OUTBOUND (ALLOW_LOCAL_WEBHOOKS its alias) lets a monitor check a loopback http:// page, which is then
 *   up, and down when the page stops answering; without it such a monitor is refused as before;
 * - the seeded demo's first live deploy gets its site monitor, at the address `npm start` serves it on, checked up,
 *   and the demo's public status JSON (the console's "Public status JSON" link) answers with it.
 */
type Api = Awaited<ReturnType<typeof buildTestApi>>;

/** A free loopback port (the service's own, so the site URLs it makes point at it). */
async function freePort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

describe('ALLOW_LOCAL_OUTBOUND', () => {
  it('is one switch under two names, refused on a public https deployment', () => {
    expect(loadConfig({ ALLOW_LOCAL_OUTBOUND: 'true' })).toMatchObject({ ALLOW_LOCAL_OUTBOUND: true, ALLOW_LOCAL_WEBHOOKS: true });
    expect(loadConfig({ ALLOW_LOCAL_WEBHOOKS: 'true' })).toMatchObject({ ALLOW_LOCAL_OUTBOUND: true, ALLOW_LOCAL_WEBHOOKS: true });
    expect(loadConfig({})).toMatchObject({ ALLOW_LOCAL_OUTBOUND: false, ALLOW_LOCAL_WEBHOOKS: false });
    expect(() => loadConfig({ ALLOW_LOCAL_OUTBOUND: 'true', PUBLIC_BASE_URL: 'https://service.example.com' })).toThrow(
      /ALLOW_LOCAL_OUTBOUND is a development switch/,
    );
    expect(() => loadConfig({ ALLOW_LOCAL_WEBHOOKS: 'true', PUBLIC_BASE_URL: 'https://service.example.com' })).toThrow(ConfigError);
  });

  describe('monitors', () => {
    let page: http.Server;
    let pagePort: number;
    const clock = new ManualClock(Date.UTC(2026, 10, 27, 6, 0, 0));
    beforeAll(async () => {
      page = http.createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('all systems go'));
      await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
      pagePort = (page.address() as net.AddressInfo).port;
    });
    afterAll(async () => {
      page.closeAllConnections();
      await new Promise((r) => page.close(r));
    });

    /** A service with `env`, its owner and a project, made in the suite's beforeAll (slow under load). */
    function withApi(env: Record<string, string>) {
      const s = {} as { t: Api; owner: SignedInUser; slug: string; monitor: UptimeMonitor };
      beforeAll(async () => {
        s.t = await buildTestApi({ env, overrides: { clock } });
        s.owner = await signUpAndSignIn(s.t.app, s.t.platform);
        s.slug = (await createProject(s.t.app, s.owner.cookie)).slug;
        s.monitor = await startUptimeMonitor(s.t.platform, { tickMs: false });
      });
      afterAll(async () => {
        await s.monitor?.stop();
        await s.t?.close();
      });
      return s;
    }
    const createMonitor = (s: { t: Api; owner: SignedInUser; slug: string }, url: string) =>
      s.t.app.inject({
        method: 'POST',
        url: `/v1/projects/${s.slug}/uptime`,
        headers: sessionHeaders(s.owner.cookie),
        payload: { name: 'Local page', url, intervalSec: 30, failuresToDown: 1, bodyContains: 'systems go' },
      });

    describe('on', () => {
      const s = withApi({ ALLOW_LOCAL_OUTBOUND: 'true' });
      it('a loopback http:// page (by address or a localhost name) is taken and checked, up and then down when it stops answering', async () => {
        const round = async (ms: number) => {
          clock.advance(ms);
          await s.monitor.tick();
          await s.monitor.idle();
        };
        const byName = await createMonitor(s, `http://app.localhost:${pagePort}/health`);
        expect(byName.statusCode, byName.body).toBe(201);
        const created = await createMonitor(s, `http://127.0.0.1:${pagePort}/health`);
        expect(created.statusCode, created.body).toBe(201);
        const read = async () =>
          ((await s.t.app.inject({ url: `/v1/projects/${s.slug}/uptime`, headers: sessionHeaders(s.owner.cookie) })).json().monitors as Monitor[]).map(
            (m) => m.state,
          );
        await round(0);
        expect(await read()).toEqual(['up', 'up']);

        page.closeAllConnections();
        await new Promise((r) => page.close(r));
        await round(30_000);
        expect(await read()).toEqual(['down', 'down']);

        // Private ranges and metadata addresses stay refused.
        for (const url of ['http://10.0.0.7/', 'http://169.254.169.254/latest/meta-data', 'http://192.168.1.1/']) {
          const refused = await createMonitor(s, url);
          expect(refused.statusCode, url).toBe(400);
          expect(refused.json().error, url).toBe('url_private_host');
        }
      });
    });

    describe('off (the default)', () => {
      const s = withApi({});
      it('refused as before: url_not_https for http://, url_private_host for loopback', async () => {
        for (const [url, code] of [
          ['http://127.0.0.1:9/health', 'url_not_https'],
          ['https://127.0.0.1:9/health', 'url_private_host'],
          ['https://app.localhost/health', 'url_private_host'],
        ]) {
          const res = await createMonitor(s, url);
          expect(res.statusCode, url).toBe(400);
          expect(res.json().error, url).toBe(code);
        }
      });
    });
  });
});

describe("the demo's live site", () => {
  let t: Api;
  let port: number;
  let monitor: UptimeMonitor;
  const clock = new ManualClock(Date.UTC(2026, 10, 27, 6, 0, 0));
  beforeAll(async () => {
    port = await freePort();
    t = await buildTestApi({ env: { ALLOW_LOCAL_OUTBOUND: 'true', PUBLIC_BASE_URL: `http://localhost:${port}` }, overrides: { clock } });
    await t.app.listen({ port, host: '127.0.0.1' });
    monitor = await startUptimeMonitor(t.platform, { tickMs: false });
  });
  afterAll(async () => {
    await monitor?.stop();
    await t?.close();
  });

  it('gets its monitor when its first production deploy goes live (as the uptime page says), is checked up, and its public status answers', async () => {
    const first = (await bootstrapInstance(t.platform))!;
    expect(first.projectSlug).toBe('demo');
    const key = bearer(first.apiKey);
    expect((await t.app.inject({ url: '/v1/status/demo' })).statusCode).toBe(404);

    const h = new Header({ path: 'index.html', type: 'File', size: 15, mode: 0o644, mtime: new Date(0) });
    h.encode();
    const body = Buffer.from('<h1>demo</h1>\n\n');
    const tgz = gzipSync(Buffer.concat([h.block!, body, Buffer.alloc(512 - body.length), Buffer.alloc(1024)]));
    const deploy = await t.app.inject({
      method: 'POST',
      url: '/v1/projects/demo/deploys/prebuilt',
      headers: { ...key, 'content-type': 'application/gzip' },
      payload: tgz,
    });
    expect(deploy.statusCode, deploy.body).toBe(201);
    const site = `http://demo.localhost:${port}/`;

    const list = (await t.app.inject({ url: '/v1/projects/demo/uptime', headers: key })).json().monitors as Monitor[];
    expect(list).toEqual([expect.objectContaining({ name: 'Live site', url: site, site: true, public: true, showUrl: false })]);
    // The check must read the demo's page, not whatever else answers on the port.
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/v1/projects/demo/uptime/${list[0]!.id}`,
      headers: key,
      payload: { bodyContains: '<h1>demo</h1>' },
    });
    expect(patched.statusCode, patched.body).toBe(200);
    await monitor.tick();
    await monitor.idle();
    expect((await t.app.inject({ url: `/v1/projects/demo/uptime/${list[0]!.id}`, headers: key })).json().monitor).toMatchObject({
      state: 'up',
      lastCheck: { ok: true, status: 200 },
    });

    clock.advance(LIMITS.uptime.statusCacheMs); // the 404 asked above is cached that long
    const status = await t.app.inject({ url: '/v1/status/demo' });
    expect(status.statusCode, status.body).toBe(200);
    expect(status.json().monitors).toEqual([expect.objectContaining({ name: 'Live site', state: 'up' })]);
    expect(status.body).not.toContain('localhost');
  });
});
