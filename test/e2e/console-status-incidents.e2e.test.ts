import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { routePath } from '../../schemas/api/client.ts';
import { launchChromium, signedInOwner, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * The "Incidents and maintenance" panel of the console's Uptime page (issue 43), in Chromium against `npm start`'s
 * single process: compose an incident for a public monitor, post an update, resolve it; schedule maintenance and
 * cancel it; "Preview the page" opens the public status page, which shows what was written. A picture is left in
 * SCREENSHOTS_DIR or the temp dir.
 */
let svc: ConsoleService;
let browser: Browser;
let shown: Page | undefined;
const SLUG = 'written-status-shop';
const shots = process.env.SCREENSHOTS_DIR ?? os.tmpdir();

beforeAll(async () => {
  svc = await startConsoleService({ hosts: { 'status-target.example': '93.184.215.14' } });
  browser = await launchChromium();
});
afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && shown)
    await shown.screenshot({ path: path.join(shots, 'console-status-incidents-failed.png'), fullPage: true }).catch(() => undefined);
});
afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
});

describe('the Incidents and maintenance panel', () => {
  it('composes, updates and resolves an incident, schedules and cancels maintenance, and previews the page', async () => {
    const { page, api } = await signedInOwner(svc, browser);
    shown = page;
    await api(routePath('createProject'), { method: 'POST', body: JSON.stringify({ name: 'Written status shop', slug: SLUG }) });
    const made = await api(routePath('createMonitor', { slug: SLUG }), {
      method: 'POST',
      body: JSON.stringify({ name: 'Checkout', url: 'https://status-target.example/', public: true, paused: true }),
    });
    expect(made.monitor).toBeTruthy();

    await page.goto(`${svc.base}/projects/${SLUG}/uptime`);
    const panel = page.locator('section[aria-labelledby="written-h"]');
    await panel.getByRole('heading', { name: 'Incidents and maintenance' }).waitFor();

    // Compose.
    const compose = panel.getByRole('form', { name: 'New incident' });
    await compose.getByLabel('Title').fill('Payments fail at checkout');
    await compose.getByLabel('Impact').selectOption('major');
    await compose.getByLabel('Checkout').check();
    await compose.getByLabel(/What is happening/).fill('Some card payments fail; we are looking into it.');
    await compose.getByRole('button', { name: 'Publish incident' }).click();
    const incident = panel.getByRole('article', { name: 'Payments fail at checkout' });
    await incident.waitFor();
    expect(await incident.locator('h3').innerText()).toContain('investigating'); // its status, not its first update's

    // Update, then resolve.
    await incident.getByLabel('Update').fill('The payment provider rotated a certificate; a fix is rolling out.');
    await incident.getByRole('button', { name: 'Post update' }).click();
    await expect.poll(() => incident.locator('li').count()).toBe(2);
    await incident.getByLabel('Status').selectOption('resolved');
    await incident.getByLabel('Update').fill('Payments work again.');
    await incident.getByRole('button', { name: 'Resolve' }).click();
    await expect.poll(() => incident.locator('li').count()).toBe(3);
    await incident.getByRole('button', { name: 'Resolve' }).waitFor({ state: 'detached' });
    expect(await incident.locator('h3').innerText()).toContain('resolved');

    // Schedule maintenance (the fields start an hour ahead, for an hour).
    const plan = panel.getByRole('form', { name: 'Schedule maintenance' });
    await plan.getByLabel('Title').fill('Database upgrade');
    await plan.getByLabel('Checkout').check();
    await plan.getByLabel('Message').fill('Checkout may be slow for a few minutes.');
    await plan.getByRole('button', { name: 'Schedule maintenance' }).click();
    const row = panel.locator('tr', { hasText: 'Database upgrade' });
    await row.waitFor();
    expect(await row.innerText()).toContain('scheduled');
    await panel.screenshot({ path: path.join(shots, 'console-status-incidents.png') });

    // Preview: the public page shows both.
    const href = await panel.getByRole('link', { name: 'Preview the page' }).getAttribute('href');
    expect(href).toBe(`/status/${SLUG}`);
    const reader = await browser.newPage();
    await reader.goto(`${svc.base}${href}`);
    const text = await reader.locator('body').innerText();
    expect(text).toContain('Payments fail at checkout');
    expect(text).toContain('Payments work again.');
    expect(text).toContain('Database upgrade');
    await reader.screenshot({ path: path.join(shots, 'console-status-incidents-page.png'), fullPage: true });
    await reader.close();

    // Cancel.
    page.once('dialog', (d) => void d.accept());
    await row.getByRole('button', { name: 'Cancel Database upgrade' }).click();
    await expect.poll(() => row.innerText()).toContain('cancelled');
    const list = await api(routePath('listMaintenance', { slug: SLUG }));
    expect(list.maintenance).toEqual([expect.objectContaining({ title: 'Database upgrade', state: 'cancelled' })]);
  });
});
