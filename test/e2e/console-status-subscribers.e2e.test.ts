import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { routePath } from '../../schemas/api/client.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';
import { launchChromium, signedInOwner, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * The Subscribers panel of the console's Uptime page (issue 43), in Chromium against `npm start`'s single process: an
 * address signed up through the status page's form (script off: a plain form post, answered with a page) shows as pending; a webhook subscriber added in the panel
 * shows its secret once and is listed, and removing it takes it off. A picture is left in SCREENSHOTS_DIR or the temp dir.
 */
let svc: ConsoleService;
let browser: Browser;
let receiver: HttpsReceiver;
let shown: Page | undefined;
const SLUG = 'subscribed-shop';
const shots = process.env.SCREENSHOTS_DIR ?? os.tmpdir();

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  svc = await startConsoleService({ webhookCa: receiver.cert, hosts: { 'status-target.example': '93.184.215.14' } });
  browser = await launchChromium();
});
afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && shown)
    await shown.screenshot({ path: path.join(shots, 'console-status-subscribers-failed.png') }).catch(() => undefined);
});
afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
  await receiver?.close();
});

describe('the Subscribers panel', () => {
  it('lists a pending e-mail subscriber, adds a webhook subscriber (secret shown once) and removes it', async () => {
    const { page, api } = await signedInOwner(svc, browser);
    shown = page;
    await api(routePath('createProject'), { method: 'POST', body: JSON.stringify({ name: 'Subscribed shop', slug: SLUG }) });
    const made = await api(routePath('createMonitor', { slug: SLUG }), {
      method: 'POST',
      body: JSON.stringify({ name: 'Shop', url: 'https://status-target.example/', public: true, paused: true }),
    });
    expect(made.monitor).toBeTruthy();
    // the status page's own form, in a browser with script off
    const reader = await (await browser.newContext({ javaScriptEnabled: false })).newPage();
    await reader.goto(`${svc.base}${routePath('statusPage', { slug: SLUG })}`);
    await reader.getByLabel('Email address').fill('reader@example.com');
    await reader.getByRole('button', { name: 'Subscribe' }).click();
    await reader.getByRole('heading', { name: 'Check your inbox' }).waitFor();
    await reader.context().close();

    await page.goto(`${svc.base}/projects/${SLUG}/uptime`);
    const panel = page.locator('section[aria-labelledby="subscribers-h"]');
    await panel.locator('tr', { hasText: 'reader@example.com' }).waitFor();
    expect(await panel.locator('tr', { hasText: 'reader@example.com' }).innerText()).toContain('pending');

    await panel.getByLabel('Webhook URL').fill(receiver.url);
    await panel.getByRole('button', { name: 'Add webhook subscriber' }).click();
    await panel.getByRole('status').waitFor();
    expect(await panel.getByRole('status').innerText()).toMatch(/whsec_/);
    const hook = panel.locator('tr', { hasText: receiver.url });
    await hook.waitFor();
    expect(await hook.innerText()).toContain('webhook');
    expect(await panel.innerText()).toContain('0 by e-mail, 1 waiting for their confirmation, 1 by webhook');
    await panel.screenshot({ path: path.join(shots, 'console-status-subscribers.png') });

    page.once('dialog', (d) => void d.accept());
    await hook.getByRole('button', { name: /Remove/ }).click();
    await expect.poll(() => panel.locator('tr', { hasText: receiver.url }).count()).toBe(0);
    const list = await api(routePath('listStatusSubscribers', { slug: SLUG }));
    expect(list.counts).toEqual({ confirmed: 0, pending: 1, webhooks: 0 });
  });
});
