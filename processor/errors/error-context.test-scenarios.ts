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
}
