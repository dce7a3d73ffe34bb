import { rm } from 'node:fs/promises';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysRepository } from '../../api/keys/keys-repository.ts';
import { newId } from '../../platform/tokens.ts';
import { createIngestProject, type IngestProject } from '../support/ingest-fixtures.ts';
import { launchChromium, startConsoleService, type ConsoleService } from './support/console-service.ts';
import { posthogInit, servePosthogPages, visitorContext, type PosthogPageServer } from './support/posthog-js-page.ts';

/**
 * PostHog's browser SDK (posthog-js, its own bundle, unchanged) in Debian's chromium against `npm start`'s single
 * process: a shop page on another origin initialises it with the project's ingest key and the service as `api_host`,
 * autocapture off; it captures a pageview and a custom event, identifies the visitor, reads a feature flag and its
 * payload, and captures one last event as the page is left (posthog-js sends it with sendBeacon as the base64 form).
 * Every event is stored with its properties and without the key; the flags are the edge's.
 */
let svc: ConsoleService;
let browser: Browser;
let project: IngestProject;
let apiKey: string;
let pages: PosthogPageServer;

const shopPage = (serviceUrl: string, key: string) => `<!doctype html><html><head><meta charset="utf-8"><title>shop</title>
<script src="/posthog.js"></script></head><body><h1>Shop</h1><a id="away" href="/bye">leave</a>
<script>
  ${posthogInit(serviceUrl, key)}
  posthog.capture('clicked_buy', { sku: 'A1', price: 12.5 });
  posthog.identify('visitor-42', { email: 'visitor@example.com' });
  posthog.onFeatureFlags(function () {
    window.flagsSeen = {
      enabled: posthog.isFeatureEnabled('checkout'),
      variant: posthog.getFeatureFlag('checkout'),
      payload: posthog.getFeatureFlagPayload('checkout'),
      other: posthog.isFeatureEnabled('off-flag'),
    };
  });
  document.getElementById('away').addEventListener('click', function () { posthog.capture('leaving', { step: 3 }); });
</script></body></html>`;

beforeAll(async () => {
  svc = await startConsoleService();
  const platform = svc.running.platform;
  project = await createIngestProject(platform);
  apiKey = (await keysRepository.createKey(platform.db, { projectId: project.projectId, kind: 'live', scopes: ['analytics:read'], now: Date.now() })).token;
  const flag = {
    key: 'checkout',
    description: '',
    enabled: true,
    rolloutPercentage: 100,
    variants: [{ key: 'blue', weight: 100 }],
    payload: { color: 'blue' },
    conditions: [],
  };
  const off = { key: 'off-flag', description: '', enabled: false, rolloutPercentage: 100, variants: [], conditions: [] };
  for (const f of [flag, off])
    await platform.db.query(`INSERT INTO feature_flags (id, project_id, key, definition) VALUES ($1, $2, $3, $4::jsonb)`, [
      newId('flg_'),
      project.projectId,
      f.key,
      JSON.stringify(f),
    ]);
  pages = await servePosthogPages((path) => (path === '/bye' ? '<!doctype html><p>bye</p>' : shopPage(svc.base, project.ingestKey)));
  browser = await launchChromium();
  // The edge knows the new key and flags at its next settings refresh.
  for (let i = 0; i < 100; i++) {
    const r = await fetch(`${svc.base}/v1/flags/i?distinctId=probe&keys=checkout`, { headers: { authorization: `Bearer ${project.ingestKey}` } });
    if (r.status === 200 && (await r.json()).flags.checkout.enabled) break;
    await new Promise((r) => setTimeout(r, 100));
  }
});

afterAll(async () => {
  await browser?.close();
  await pages?.close();
  await svc?.running.stop();
  if (svc) await rm(svc.dataDir, { recursive: true, force: true });
});

/** The project's stored events once every one of `names` is among them (posthog-js may send them over several flushes). */
async function storedEvents(names: string[]): Promise<Array<Record<string, any>>> {
  const end = Date.now() + 30_000;
  for (;;) {
    const r = await fetch(`${svc.base}/v1/projects/${project.slug}/analytics/events?from=${Date.now() - 3_600_000}&to=${Date.now() + 60_000}&limit=100`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const rows = r.status === 200 ? ((await r.json()).data as Array<Record<string, any>>) : [];
    if (names.every((n) => rows.some((x) => x.event === n))) return rows;
    if (Date.now() > end) throw new Error(`timed out waiting for ${names.join(', ')}: stored ${rows.map((x) => x.event).join(', ')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe('posthog-js in a real browser', () => {
  it('captures, identifies, reads flags and payloads, and sends the last event as the page is left', async () => {
    const context = await visitorContext(browser);
    const page = await context.newPage();
    const flagCalls: string[] = [];
    page.on('request', (req) => {
      const u = new URL(req.url());
      if (u.origin === svc.base && (u.pathname.startsWith('/flags') || u.pathname.startsWith('/decide'))) flagCalls.push(u.pathname);
    });
    await page.goto(`${pages.origin}/shop`);
    await page.waitForFunction(() => (window as unknown as { flagsSeen?: unknown }).flagsSeen !== undefined, undefined, { timeout: 20_000 });
    const seen = await page.evaluate(() => (window as unknown as { flagsSeen: unknown }).flagsSeen);
    expect(seen).toEqual({ enabled: true, variant: 'blue', payload: { color: 'blue' }, other: false });
    expect(flagCalls.length).toBeGreaterThan(0);

    await page.click('#away');
    await page.waitForURL(`${pages.origin}/bye`);
    await context.close();

    const rows = await storedEvents(['$identify', '$pageview', 'clicked_buy', 'leaving']);
    const byEvent = new Map(rows.map((r) => [r.event, r]));
    expect([...byEvent.keys()].sort()).toEqual(expect.arrayContaining(['$identify', '$pageview', 'clicked_buy', 'leaving']));
    expect(byEvent.get('clicked_buy')!.properties).toMatchObject({ sku: 'A1', price: '12.5', $lib: 'web' });
    expect(byEvent.get('$pageview')!.path).toBe('/shop');
    expect(byEvent.get('leaving')!.distinctId).toBe('visitor-42');
    expect(JSON.parse(byEvent.get('$identify')!.properties.$set)).toMatchObject({ email: 'visitor@example.com' });
    for (const r of rows) expect(JSON.stringify(r)).not.toContain(project.ingestKey);
    // The browser's page is another origin: the events are stamped by it (not one of the project's domains).
    expect(byEvent.get('clicked_buy')!.environment).toBe('unknown');
  });
});
