import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, signedInOwner, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * Build variables in the console (issue 42), in a real browser against the whole service: a production value and a
 * branch's secret preview override added from the Deploys page's form, listed with their environments (the secret
 * masked), and one removed. Screenshots of a failure go to the temp directory.
 */
let svc: ConsoleService;
let browser: Browser;
let page: Page;
let api: Awaited<ReturnType<typeof signedInOwner>>['api'];
const SLUG = 'variables';

beforeAll(async () => {
  svc = await startConsoleService();
  browser = await launchChromium();
  ({ page, api } = await signedInOwner(svc, browser));
  await api('/v1/projects', { method: 'POST', body: JSON.stringify({ name: 'Variables', slug: SLUG }) });
});

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && page)
    await page.screenshot({
      path: path.join(os.tmpdir(), `console-build-variables-failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`),
      fullPage: true,
    });
});

afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
});

describe('build variables in the console', () => {
  it('adds a production value and a secret branch override, lists them with their environments, removes one', async () => {
    await page.goto(`${svc.base}/projects/${SLUG}/deploys`);
    await page.getByRole('heading', { name: 'Build variables' }).waitFor();
    const form = page.getByRole('form', { name: 'Add a build variable' });
    const list = page.getByRole('list', { name: 'Build variables' });

    await form.getByLabel('Key').fill('API_URL');
    await form.getByLabel('Value').fill('https://api.example.com');
    await form.getByLabel('Environments').selectOption('production');
    await form.getByRole('button', { name: 'Add variable' }).click();
    await list.getByText('https://api.example.com').waitFor();

    await form.getByLabel('Key').fill('API_TOKEN');
    await form.getByLabel('Value').fill('feature-token-value');
    await form.getByLabel('Branch').fill('feature');
    await form.getByLabel('Secret').check();
    await form.getByRole('button', { name: 'Add variable' }).click();
    await list.getByText('API_TOKEN').waitFor();

    const items = list.getByRole('listitem');
    expect(await items.count()).toBe(2);
    const token = await items.filter({ hasText: 'API_TOKEN' }).innerText();
    expect(token).toContain('••••');
    expect(token).toContain('feature');
    expect(token).toContain('preview');
    expect(token).not.toContain('feature-token-value');
    expect(await items.filter({ hasText: 'API_URL' }).innerText()).toContain('production');
    const stored = ((await api(`/v1/projects/${SLUG}/env`)) as { env: Array<{ key: string; target: string[]; branch: string | null; secret: boolean }> }).env;
    expect(stored).toMatchObject([
      { key: 'API_TOKEN', target: ['preview'], branch: 'feature', secret: true },
      { key: 'API_URL', target: ['production'], branch: null, secret: false },
    ]);

    page.once('dialog', (d) => void d.accept());
    await items
      .filter({ hasText: 'API_URL' })
      .getByRole('button', { name: /^Remove API_URL/ })
      .click();
    await list.getByText('API_URL').waitFor({ state: 'detached' });
    expect(((await api(`/v1/projects/${SLUG}/env`)) as { env: unknown[] }).env).toHaveLength(1);
  });
});
