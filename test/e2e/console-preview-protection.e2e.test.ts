import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, signedInOwner, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * Preview protection in the console (issue 42), in a real browser against the whole service: a new project's Settings
 * say its previews are protected with share links only; a password set there (never shown back) turns it to
 * "password set"; a share link is made (its path shown once) and revoked. Screenshot: SCREENSHOTS_DIR when set (`SCREENSHOTS_DIR=docs/screenshots`), else the temp dir.
 */
let svc: ConsoleService;
let browser: Browser;
let page: Page;
let api: Awaited<ReturnType<typeof signedInOwner>>['api'];
const SLUG = 'previews';

beforeAll(async () => {
  svc = await startConsoleService();
  browser = await launchChromium();
  ({ page, api } = await signedInOwner(svc, browser));
  await api('/v1/projects', { method: 'POST', body: JSON.stringify({ name: 'Previews', slug: SLUG }) });
});

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && page)
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-preview-protection-failed.png'), fullPage: true });
});

afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
});

describe('preview protection in the console', () => {
  it('says which state the previews are in, sets a password, makes and revokes a share link', async () => {
    await page.goto(`${svc.base}/projects/${SLUG}/settings`);
    const section = page.getByRole('region', { name: 'Preview protection' });
    await section.getByText('protected (share links only)').waitFor();

    await section.getByLabel(/^Password/).fill('correct horse battery');
    await section.getByRole('button', { name: 'Save preview protection' }).click();
    await section.getByText('protected (password set)').waitFor();
    expect(await section.getByLabel(/New password/).inputValue()).toBe('');
    const project = ((await api(`/v1/projects/${SLUG}`)) as { project: { previewProtection: unknown } }).project;
    expect(project.previewProtection).toEqual({ enabled: true, passwordSet: true });

    await section.getByRole('button', { name: 'Create share link' }).click();
    await section.getByText(/New link \(shown once\)/).waitFor();
    expect(await section.locator('code', { hasText: '/.cx/share/cxp_' }).count()).toBe(1);
    await section.getByText('open', { exact: true }).waitFor();
    await section.screenshot({ path: path.join(process.env.SCREENSHOTS_DIR ?? os.tmpdir(), 'preview-protection-settings.png') });
    await section.getByRole('button', { name: /^Revoke pvl_/ }).click();
    await section.getByText('revoked', { exact: true }).waitFor();

    await section.getByLabel('Protect previews').uncheck();
    await section.getByRole('button', { name: 'Save preview protection' }).click();
    await section.getByText('public', { exact: true }).waitFor();
  });
});
