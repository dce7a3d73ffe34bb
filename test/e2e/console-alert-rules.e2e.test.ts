import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/tokens.ts';
import { launchChromium, signedInOwner, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * Alert rules in the console (issue 41), in a real browser against the whole service: a new project shows the default
 * rule; a frequency rule with environments, a level and a webhook endpoint is created from the form; a rule is
 * switched off and one deleted. Screenshots go to the temp directory.
 */
let svc: ConsoleService;
let browser: Browser;
let page: Page;
let api: Awaited<ReturnType<typeof signedInOwner>>['api'];
const SLUG = 'alerting';
let projectId = '';

beforeAll(async () => {
  svc = await startConsoleService();
  browser = await launchChromium();
  ({ page, api } = await signedInOwner(svc, browser));
  const made = await api('/v1/projects', { method: 'POST', body: JSON.stringify({ name: 'Alerting', slug: SLUG }) });
  projectId = (made as { project: { id: string } }).project.id;
});

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && page)
    await page.screenshot({
      path: path.join(os.tmpdir(), `console-alert-rules-failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`),
      fullPage: true,
    });
});

afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
});

describe('alert rules in the console', () => {
  it('lists the default rule, creates a rule from the form, switches one off and deletes one', async () => {
    // An endpoint straight in the database (the API refuses a URL it cannot resolve from here).
    const endpointId = newId('whk_');
    await svc.running.platform.db.query(
      'INSERT INTO webhook_endpoints (id, project_id, url, events, max_attempts, secret, created_at, updated_at) VALUES ($1, $2, $3, $4, 6, $5, $6, $6)',
      [endpointId, projectId, 'https://hooks.example.com/alerts', [], 'whsec_e2e', Date.now()],
    );
    await page.goto(`${svc.base}/projects/${SLUG}/settings`);
    await page.getByRole('link', { name: 'alert rules' }).click();
    await page.waitForURL('**/alerts');
    await page.getByRole('heading', { name: 'Alert rules' }).waitFor();
    const rows = page.locator('table.alert-rules tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(1);
    expect(await rows.first().innerText()).toContain('New production issues and regressions');
    expect(await rows.first().innerText()).toContain('default');
    expect(await rows.first().innerText()).toContain('6 h');

    await page.getByLabel('Name').fill('Checkout spikes');
    await page.getByLabel('N events in M minutes').check();
    await page.getByLabel('N', { exact: true }).fill('50');
    await page.getByLabel('M (minutes)').fill('10');
    await page.getByLabel('preview').check();
    await page.getByLabel('fatal').check();
    await page.getByLabel('E-mail the alert recipients').uncheck();
    await page.getByLabel(/Send issue.alert to https:\/\/hooks.example.com\/alerts/).check();
    await page.getByLabel(/^Throttle/).fill('30');
    await page.getByRole('button', { name: 'Create rule' }).click();
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(2);
    const made = rows.nth(1);
    expect(await made.innerText()).toContain('Checkout spikes');
    expect(await made.innerText()).toContain('50 events in 10 min');
    expect(await made.innerText()).toContain('production, preview');
    expect(await made.innerText()).toContain('fatal');
    expect(await made.innerText()).toContain('https://hooks.example.com/alerts');
    expect(await made.innerText()).toContain('30 min');
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-alert-rules.png'), fullPage: true });

    const list = (await api(`/v1/projects/${SLUG}/alerts/rules`)) as { rules: Array<{ name: string; enabled: boolean; triggers: unknown; actions: unknown }> };
    expect(list.rules.find((r) => r.name === 'Checkout spikes')).toMatchObject({
      enabled: true,
      triggers: [{ type: 'event_frequency', count: 50, minutes: 10 }],
      actions: { email: false, endpointIds: [endpointId] },
    });

    await page.getByRole('button', { name: 'Disable Checkout spikes' }).click();
    await expect.poll(() => made.innerText(), { timeout: 15_000 }).toContain('off');
    await page.getByRole('button', { name: 'Delete New production issues and regressions' }).click();
    await expect.poll(() => rows.count(), { timeout: 15_000 }).toBe(1);
    expect(await rows.first().innerText()).toContain('Checkout spikes');
    const after = (await api(`/v1/projects/${SLUG}/alerts/rules`)) as { rules: Array<{ id: string; enabled: boolean }> };
    expect(after.rules.map((r) => [r.id === 'default', r.enabled])).toEqual([[false, false]]);
  });
});
