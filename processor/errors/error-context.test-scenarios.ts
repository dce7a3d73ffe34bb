import { afterAll, beforeAll, expect, it } from 'vitest';
import type { TestPlatformOptions } from '../../test/support/platform.ts';
import { batch, createHarness, event, groupsOf, type Harness } from './error-pipeline.test-scenarios.ts';

/**
 * The context people triage by (issue 40) through the pipeline, run embedded (error-context.test.ts: PGlite, chDB)
 * and against the real backends (error-context.int.test.ts: Postgres, Kafka, ClickHouse): scrubbed, filled from the
 * User-Agent, kept on the sample and on the occurrence row with its facet tags.
 */
export const CHROME_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
export const IPHONE_UA =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.1 Mobile/15E148 Safari/604.1';

export function defineErrorContextScenarios(real?: TestPlatformOptions['real']): void {
  let h: Harness;
  beforeAll(async () => {
    h = await createHarness({ real });
  });
  afterAll(async () => {
    await h?.close();
  });

  async function occurrence(eventId: string) {
    const rows = await h.platform.analytics.query<{
      level: string;
      release: string;
      tags: Record<string, string>;
      breadcrumbs: string;
      context: string;
      user_id: string;
    }>('SELECT level, release, tags, breadcrumbs, context, user_id FROM error_occurrences FINAL WHERE event_id = {id:String}', { id: eventId });
    return rows[0]!;
  }

  it("scrubs every context field, fills browser/os/device from the batch's User-Agent, keeps it on the sample and the occurrence", async () => {
    const p = await h.newProject();
    const e = event({
      name: 'ContextError',
      context: {
        breadcrumbs: [
          {
            timestamp: Date.UTC(2026, 10, 21, 11, 58),
            category: 'fetch',
            message: 'GET /api?token=abc123secret',
            data: { url: '/api', password: 'hunter2', status_code: 500 },
          },
          { timestamp: Date.UTC(2026, 10, 21, 11, 59), category: 'ui.click', message: 'button#buy' },
        ],
        level: 'warning',
        tags: { plan: 'pro', api_key: 'k-123456', browser: 'spoofed' },
        request: {
          url: 'https://app.example.com/checkout?session_id=s3cr3tvalue',
          method: 'POST',
          headers: { referer: 'https://app.example.com/?token=zzz999' },
        },
        user: { id: 'usr_1', email: 'ann@example.com', ipAddress: '203.0.113.9' },
        release: 'shop@1.4.0',
        contexts: { app: { secret: 'x', name: 'shop' } },
        clientEnvironment: 'staging',
        sdk: { name: 'cx.js', version: '1.0.0' },
      },
    });
    await h.publish(batch(p.id, [e], { userAgent: CHROME_UA }));
    const [g] = await groupsOf(h.platform, p.id);
    const c = g!.samples[0]!.context as Record<string, any>;
    expect(c.breadcrumbs[0]).toEqual({
      timestamp: Date.UTC(2026, 10, 21, 11, 58),
      category: 'fetch',
      message: 'GET /api?token=[Filtered]',
      data: { url: '/api', password: '[Filtered]', status_code: 500 },
    });
    expect(c.tags).toEqual({ plan: 'pro', api_key: '[Filtered]', browser: 'spoofed' });
    expect(c.request).toEqual({
      url: 'https://app.example.com/checkout?session_id=[Filtered]',
      method: 'POST',
      headers: { referer: 'https://app.example.com/?token=[Filtered]' },
    });
    expect(c.user).toEqual({ id: 'usr_1', email: 'ann@example.com', ipAddress: '203.0.113.9' });
    expect(c.contexts).toEqual({
      app: { secret: '[Filtered]', name: 'shop' },
      browser: { name: 'Chrome', version: '131.0.0.0' },
      os: { name: 'Linux' },
      device: { family: 'desktop' },
    });
    expect(c).toMatchObject({ level: 'warning', release: 'shop@1.4.0', clientEnvironment: 'staging', sdk: { name: 'cx.js', version: '1.0.0' } });
    expect(JSON.stringify(g!.samples)).not.toMatch(/hunter2|abc123secret|s3cr3tvalue|zzz999|k-123456/);

    const row = await occurrence(e.eventId);
    expect(row.level).toBe('warning');
    expect(row.release).toBe('shop@1.4.0');
    expect(row.user_id).toBe('usr_1');
    // The derived tags win over the event's own of the same name; the environment is the server's.
    expect(row.tags).toEqual({
      plan: 'pro',
      api_key: '[Filtered]',
      browser: 'Chrome',
      os: 'Linux',
      device: 'desktop',
      release: 'shop@1.4.0',
      environment: 'production',
      url: 'https://app.example.com/checkout',
      level: 'warning',
      runtime: 'browser',
    });
    expect(JSON.parse(row.breadcrumbs)).toEqual(c.breadcrumbs);
    expect(JSON.parse(row.context)).toMatchObject({ user: { id: 'usr_1' }, contexts: { browser: { name: 'Chrome' } }, clientEnvironment: 'staging' });
    expect(JSON.stringify(row)).not.toMatch(/hunter2|abc123secret|s3cr3tvalue|zzz999|k-123456/);
  });

  it("prefers the event's own User-Agent header and contexts; a server event takes none from its request; no context stores empty", async () => {
    const p = await h.newProject();
    const own = event({ name: 'OwnUA', context: { request: { headers: { 'user-agent': IPHONE_UA } }, contexts: { os: { name: 'CustomOS' } } } });
    const server = event({ name: 'ServerErr', runtime: 'node' });
    const plain = event({ name: 'Plain' });
    await h.publish(batch(p.id, [own, server], { userAgent: CHROME_UA }));
    await h.publish(batch(p.id, [plain]));
    const ownRow = await occurrence(own.eventId);
    expect(ownRow.tags).toMatchObject({ browser: 'Mobile Safari', os: 'CustomOS', device: 'mobile' });
    expect(JSON.parse(ownRow.context).contexts.device).toEqual({ family: 'mobile', model: 'iPhone', brand: 'Apple' });
    const serverRow = await occurrence(server.eventId);
    expect(serverRow.tags).toEqual({ environment: 'production', url: '/account', level: 'error', runtime: 'node' });
    expect(serverRow.context).toBe('');
    const plainRow = await occurrence(plain.eventId);
    expect(plainRow).toMatchObject({ level: '', release: '', breadcrumbs: '', context: '' });
    const groups = await groupsOf(h.platform, p.id);
    expect(groups.find((g) => g.name === 'Plain')!.samples[0]!.context).toBeUndefined();
  });

  it('the API: tag facets with counts and shares per issue; the issue list filters by tag (browser:Chrome release:abc), strictly', async () => {
    const p = await h.newProject();
    const get = (url: string) => h.app.inject({ method: 'GET', url, headers: { cookie: h.cookie } });
    const crash = (release: string, plan?: string) => event({ name: 'Facet', message: 'facet', context: { release, ...(plan ? { tags: { plan } } : {}) } });
    await h.publish(batch(p.id, [crash('abc1234', 'pro'), crash('abc1234', 'pro'), crash('abc1234')], { userAgent: CHROME_UA }));
    await h.publish(batch(p.id, [crash('def5678', 'free')], { userAgent: IPHONE_UA }));
    await h.publish(batch(p.id, [event({ name: 'Other', message: 'other', context: { release: 'def5678' } })], { userAgent: IPHONE_UA }));
    const groups = await groupsOf(h.platform, p.id);
    const facet = groups.find((g) => g.name === 'Facet')!;

    const res = await get(`/v1/projects/${p.slug}/errors/${facet.id}/tags?values=2`);
    expect(res.statusCode).toBe(200);
    const body = res.json() as { total: number; tags: Array<{ key: string; count: number; values: Array<{ value: string; count: number; share: number }> }> };
    expect(body.total).toBe(4);
    expect(body.tags.map((t) => t.key)).toEqual(['browser', 'os', 'device', 'release', 'environment', 'url', 'level', 'runtime', 'plan']);
    const tag = (k: string) => body.tags.find((t) => t.key === k)!;
    expect(tag('browser').values).toEqual([
      { value: 'Chrome', count: 3, share: 0.75 },
      { value: 'Mobile Safari', count: 1, share: 0.25 },
    ]);
    expect(tag('release').values).toEqual([
      { value: 'abc1234', count: 3, share: 0.75 },
      { value: 'def5678', count: 1, share: 0.25 },
    ]);
    expect(tag('environment').values).toEqual([{ value: 'production', count: 4, share: 1 }]);
    expect(tag('plan')).toEqual({
      key: 'plan',
      count: 3,
      values: [
        { value: 'pro', count: 2, share: 0.5 },
        { value: 'free', count: 1, share: 0.25 },
      ],
    });
    expect((await get(`/v1/projects/${p.slug}/errors/grp_${'0'.repeat(24)}/tags`)).statusCode).toBe(404);
    expect((await get(`/v1/projects/${p.slug}/errors/${facet.id}/tags?values=99`)).statusCode).toBe(400);

    const list = async (query: string) => {
      const r = await get(`/v1/projects/${p.slug}/errors?query=${encodeURIComponent(query)}`);
      expect(r.statusCode).toBe(200);
      return (r.json() as { data: Array<{ name: string }> }).data.map((i) => i.name).sort();
    };
    expect(await list('browser:Chrome')).toEqual(['Facet']);
    expect(await list('release:def5678')).toEqual(['Facet', 'Other']);
    expect(await list('release:def5678 browser:"Mobile Safari" other')).toEqual(['Other']);
    expect(await list('release:def5678 plan:free')).toEqual(['Facet']);
    expect(await list('browser:Firefox')).toEqual([]);
    expect(await list('"facet"')).toEqual(['Facet']);
    for (const bad of ['browser:', 'a:1 b:2 c:3 d:4 e:5 f:6', `url:${'x'.repeat(201)}`]) {
      const r = await get(`/v1/projects/${p.slug}/errors?query=${encodeURIComponent(bad)}`);
      expect(r.statusCode, bad).toBe(400);
      expect(r.json()).toMatchObject({ error: 'invalid_request' });
    }
  });
}
