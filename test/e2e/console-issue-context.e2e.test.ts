import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { encodeErrorBatchEnvelope } from '../../schemas/bus/error-events.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { launchChromium, OWNER, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * The context of an issue in the console (issue 40), in a real browser against the whole service as `npm start` runs
 * it: error batches published as the edge publishes them (its v2 envelope with the request's User-Agent) show on the
 * issue's page as a breadcrumb timeline, context tables and tag facets with shares; a facet value opens the issue list
 * filtered by that tag. The issue page's screenshot goes to docs/screenshots/issue-context.png.
 */
let svc: ConsoleService;
let browser: Browser;
let page: Page;
let cookie = '';
const SLUG = 'shop';
let projectId = '';
const CHROME = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const FIREFOX = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:121.0) Gecko/20100101 Firefox/121.0';

const api = async (url: string) => (await fetch(`${svc.base}${url}`, { headers: { cookie } })).json() as Promise<Record<string, unknown>>;
/** Polls `read` until `done` holds: the processor runs beside the test. */
async function until<T>(read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  svc = await startConsoleService();
  browser = await launchChromium();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  const signIn = await fetch(`${svc.base}/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OWNER) });
  cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .find((c) => c.startsWith('cx_session='))!;
  const made = await fetch(`${svc.base}/v1/projects`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
    body: JSON.stringify({ name: 'Shop', slug: SLUG, environmentHosts: { production: ['shop.example.com'], preview: [] } }),
  });
  projectId = ((await made.json()) as { project: { id: string } }).project.id;
  await page.goto(`${svc.base}/projects`);
  await page.getByLabel('Email').fill(OWNER.email);
  await page.getByLabel('Password').fill(OWNER.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
});

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && page)
    await page.screenshot({
      path: path.join(os.tmpdir(), `console-issue-context-failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`),
      fullPage: true,
    });
});

afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
});

function publish(userAgent: string, events: unknown[], receivedAt: number) {
  const body = Buffer.from(JSON.stringify({ batch: events }));
  const value = encodeErrorBatchEnvelope(
    { projectId, originHost: 'shop.example.com', receivedAt, defaultRuntime: 'browser', eventIds: events.map(() => randomUUID()), userAgent },
    body,
  );
  return svc.running.platform.bus.publish(TOPICS.errorEvents, [{ key: projectId, value }]);
}

describe('the context of an issue in the console', () => {
  it('shows breadcrumbs, context tables and tag facets; a facet value filters the issue list', async () => {
    const now = Date.now();
    const crash = (release: string, plan: string) => ({
      name: 'CheckoutError',
      message: 'payment form did not submit',
      stack: 'CheckoutError: payment form did not submit\n    at submit (https://shop.example.com/assets/app.js:1:120)',
      path: '/checkout',
      timestamp: now - 1000,
      level: 'error',
      release,
      tags: { plan },
      user: { id: 'usr_42', email: 'ann@example.com' },
      request: { url: 'https://shop.example.com/checkout?step=pay&token=s3cr3t', method: 'GET' },
      breadcrumbs: [
        { timestamp: now - 9000, category: 'navigation', data: { from: '/cart', to: '/checkout' } },
        { timestamp: now - 4000, category: 'ui.click', message: 'button#pay' },
        { timestamp: now - 2500, category: 'fetch', type: 'http', level: 'error', data: { method: 'POST', url: '/api/pay', status_code: 502 } },
        { timestamp: now - 1200, category: 'console', level: 'warning', message: 'retrying payment (password=hunter2)' },
      ],
      sdk: { name: 'cx.js', version: '1.4.0' },
    });
    await publish(CHROME, [crash('shop@1.4.0', 'pro'), crash('shop@1.4.0', 'pro'), crash('shop@1.4.0', 'free')], now);
    await publish(FIREFOX, [crash('shop@1.3.9', 'pro')], now + 1);
    await publish(FIREFOX, [{ name: 'OtherError', message: 'something else', release: 'shop@1.3.9' }], now + 2);
    const issues = await until(
      () => api(`/v1/projects/${SLUG}/errors`),
      (b) => (b.data as Array<{ count: number }>).reduce((n, i) => n + i.count, 0) === 5,
    );
    const groupId = (issues.data as Array<{ groupId: string; name: string }>).find((i) => i.name === 'CheckoutError')!.groupId;
    // The occurrences reach ClickHouse after the Postgres commit.
    await until(
      () => api(`/v1/projects/${SLUG}/errors/${groupId}/tags`),
      (b) => b.total === 4,
    );

    await page.goto(`${svc.base}/projects/${SLUG}/errors/${groupId}`);
    const crumbs = page.locator('table.breadcrumbs tbody tr');
    await crumbs.first().waitFor();
    expect(await crumbs.count()).toBe(4);
    expect(await crumbs.nth(2).innerText()).toMatch(/fetch[\s\S]*error[\s\S]*status_code\s+502/);
    expect(await crumbs.nth(3).innerText()).toContain('password=[Filtered]');
    const context = page.locator('section', { has: page.getByRole('heading', { name: 'Context' }) });
    expect(await context.innerText()).toMatch(/browser[\s\S]*name\s+Firefox/);
    expect(await context.innerText()).toContain('token=[Filtered]');
    expect(await context.innerText()).toMatch(/user[\s\S]*id\s+usr_42/);
    const tags = page.locator('.tag-facets');
    await tags.waitFor();
    const browserFacet = page.locator('.tag-facet', { has: page.getByRole('heading', { name: /^browser/ }) });
    expect(await browserFacet.innerText()).toMatch(/Chrome\s+75%[\s\S]*Firefox\s+25%/);
    expect(await page.locator('.tag-facet', { has: page.getByRole('heading', { name: /^release/ }) }).innerText()).toMatch(/shop@1\.4\.0\s+75%/);
    expect(await page.locator('.tag-facet', { has: page.getByRole('heading', { name: /^plan/ }) }).innerText()).toMatch(/pro\s+75%[\s\S]*free\s+25%/);
    expect(await page.content()).not.toContain('hunter2');
    await page.screenshot({ path: path.join(import.meta.dirname, '../../docs/screenshots/issue-context.png'), fullPage: true });

    // A facet value opens the issue list filtered by it.
    await browserFacet.getByRole('link', { name: 'Firefox' }).click();
    await page.waitForURL(/\/errors\?query=browser%3AFirefox/);
    await page.locator('.issue-row').first().waitFor();
    expect(await page.locator('.issue-row').count()).toBe(2);
    await page.getByRole('searchbox').fill('browser:Chrome');
    await page.getByRole('searchbox').press('Enter');
    await page.waitForURL(/query=browser%3AChrome/);
    await until(
      () => page.locator('.issue-row').count(),
      (n) => n === 1,
    );
    expect(await page.locator('.issue-row').first().innerText()).toContain('CheckoutError');
  });
});
