import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { routePath } from '../../schemas/api/client.ts';
import { EDGE_PATHS } from '../../schemas/api/route-table.ts';
import { launchChromium, OWNER, startConsoleService, type ConsoleService } from './support/console-service.ts';
import { posthogInit, servePosthogPages, visitorContext, type PosthogPageServer } from './support/posthog-js-page.ts';

/**
 * The Analytics page with the events posthog-js really sends (issue 39 §5: the page grew 24,135 px wide): posthog-js
 * in Debian's chromium, on a shop page whose URL carries a long campaign query, captures an event with a long property
 * value of its own, and posthog-js adds its dozens of `$` properties ($current_url, $raw_user_agent, ...). The console,
 * in the same browser, shows them in the newest-events table, and the page stays as wide as the window, wide or
 * narrow. A picture of each is left in the temp dir.
 */
let svc: ConsoleService;
let browser: Browser;
let pages: PosthogPageServer;
/** The console's page, for a picture when a step fails. */
let shown: Page | undefined;
let cookie = '';
const SLUG = 'wide-events';
/** One word, nothing to break at: what a base64 blob or a tracking query looks like. */
const LONG = 'Q'.repeat(2500);

const shopPage = (serviceUrl: string, key: string) => `<!doctype html><html><head><meta charset="utf-8"><title>shop</title>
<script src="/posthog.js"></script></head><body><h1>Shop</h1>
<script>
  ${posthogInit(serviceUrl, key)}
  posthog.capture('cart_viewed', { cart_contents: ${JSON.stringify(LONG)}, items: 3 });
</script></body></html>`;

/** A request to the API as the signed-in owner; its answer, or a thrown error naming it. */
async function asOwner(url: string, body: unknown): Promise<any> {
  const res = await fetch(`${svc.base}${url}`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
    body: JSON.stringify(body),
  });
  const answer = await res.json();
  if (!res.ok) throw new Error(`${url}: ${res.status} ${JSON.stringify(answer)}`);
  return answer;
}

beforeAll(async () => {
  svc = await startConsoleService();
  const signIn = await fetch(`${svc.base}${routePath('signIn')}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(OWNER),
  });
  cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .find((c) => c.startsWith('cx_session='))!;
  await asOwner(routePath('createProject'), { name: 'Wide events', slug: SLUG });
  const ingestKey: string = (await asOwner(routePath('createKey', { slug: SLUG }), { kind: 'ingest' })).key.token;
  pages = await servePosthogPages(() => shopPage(svc.base, ingestKey));
  browser = await launchChromium();
  // The edge takes a new key at its next settings refresh.
  for (let i = 0; i < 100; i++) {
    const r = await fetch(`${svc.base}${EDGE_PATHS.flags}?distinctId=probe`, { headers: { authorization: `Bearer ${ingestKey}` } });
    if (r.status === 200) break;
    await new Promise((r) => setTimeout(r, 100));
  }
});

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && shown)
    await shown.screenshot({ path: path.join(os.tmpdir(), 'console-analytics-failed.png') }).catch(() => undefined);
});

afterAll(async () => {
  await browser?.close();
  await pages?.close();
  await svc?.running.stop();
});

/** How far the document is wider than the window (0 when it fits). */
const overflow = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth - innerWidth);

describe('the Analytics page with real posthog-js events', () => {
  it('keeps long property values within the page: it is no wider than the window, wide or narrow', async () => {
    const shop = await visitorContext(browser);
    await (await shop.newPage()).goto(`${pages.origin}/checkout?utm_content=${'Z'.repeat(1500)}`);

    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    await context.addCookies([{ name: 'cx_session', value: cookie.slice('cx_session='.length), url: svc.base }]);
    const page = await context.newPage();
    shown = page;
    const rows = page.locator('section[aria-labelledby="raw-h"] tbody tr');
    await expect
      .poll(
        async () => {
          await page.goto(`${svc.base}/projects/${SLUG}/analytics`);
          await page.getByRole('heading', { name: 'Newest events' }).waitFor();
          await page.waitForLoadState('networkidle');
          return rows.count();
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBeGreaterThanOrEqual(2);
    expect(await overflow(page)).toBe(0);
    // Both events are posthog-js's own, with their long values (the query in $current_url, the cart's contents),
    // each shown up to 200 characters.
    const table = await page.locator('section[aria-labelledby="raw-h"] table').innerText();
    expect(table).toContain('cart_viewed');
    expect(table).toContain('$pageview');
    expect(table).toContain(`cart_contents\u00a0${'Q'.repeat(199)}…`);
    expect(table).not.toContain('Q'.repeat(200));
    expect(table).toContain('$current_url');

    await page.screenshot({ path: path.join(os.tmpdir(), 'console-analytics-wide.png'), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await overflow(page)).toBe(0);
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-analytics-narrow.png'), fullPage: true });
    await shop.close();
    await context.close();
  });
});
