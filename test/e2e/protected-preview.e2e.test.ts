import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectsRepository } from '../../api/projects/projects-repository.ts';
import { hashPassword } from '../../platform/passwords.ts';
import { addPreviewSite, createIngestProject } from '../support/ingest-fixtures.ts';
import { startTestEdge, type TestEdge } from '../support/test-edge.ts';
import { launchChromium } from './support/console-service.ts';

/**
 * Issue 42 "Previews that only the team sees" in a real browser (Debian's chromium, playwright-core): a protected
 * preview opens on its password page (401), a wrong password says so, the right one sets the host's cookie and the
 * site shows, at the path first asked for; a reload keeps it; another browser (no cookie) still gets the page.
 * Screenshots (protected-preview-*.png): SCREENSHOTS_DIR when set (`SCREENSHOTS_DIR=docs/screenshots`), else the temp dir.
 */
const PASSWORD = 'team only preview';
let edge: TestEdge;
let browser: Browser;
let preview: string;

beforeAll(async () => {
  edge = await startTestEdge({}, { sites: true });
  const dir = await mkdtemp(path.join(os.tmpdir(), 'e2e-protected-'));
  await writeFile(path.join(dir, 'index.html'), '<!doctype html><title>Shop preview</title><h1>The new checkout</h1>');
  await writeFile(path.join(dir, 'pricing.html'), '<!doctype html><title>Pricing</title><h1>Pricing preview</h1>');
  const p = await createIngestProject(edge.platform);
  const { host } = await addPreviewSite(edge.platform, p.projectId, dir);
  await projectsRepository.updateProject(edge.platform.db, p.projectId, { previewProtection: { enabled: true } }, await hashPassword(PASSWORD));
  preview = `http://${host}.localhost:${new URL(edge.base).port}`;
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await edge?.close();
});

describe('a protected preview in Chromium', () => {
  it('shows the password page, refuses a wrong password, opens the site with the right one', async () => {
    const context = await browser.newContext();
    const tab = await context.newPage();
    const first = await tab.goto(`${preview}/pricing`);
    expect(first?.status()).toBe(401);
    await tab.getByRole('heading', { name: 'Protected preview' }).waitFor();
    expect(await tab.content()).not.toContain('Pricing preview');
    await tab.screenshot({ path: path.join(process.env.SCREENSHOTS_DIR ?? os.tmpdir(), 'protected-preview-password.png') });

    await tab.getByLabel('Password').fill('not it');
    await tab.getByRole('button', { name: 'Open preview' }).click();
    await tab.getByRole('alert').filter({ hasText: 'Wrong password.' }).waitFor();

    await tab.getByLabel('Password').fill(PASSWORD);
    await tab.getByRole('button', { name: 'Open preview' }).click();
    await tab.getByRole('heading', { name: 'Pricing preview' }).waitFor();
    expect(tab.url()).toBe(`${preview}/pricing`);
    const [cookie] = await context.cookies(preview);
    expect(cookie).toMatchObject({ name: '__cx_preview', httpOnly: true, sameSite: 'Lax' });
    expect(cookie!.domain).toBe(new URL(preview).hostname); // host-only
    await tab.screenshot({ path: path.join(process.env.SCREENSHOTS_DIR ?? os.tmpdir(), 'protected-preview-open.png') });

    await tab.goto(preview);
    await tab.getByRole('heading', { name: 'The new checkout' }).waitFor();

    const stranger = await (await browser.newContext()).newPage();
    expect((await stranger.goto(preview))?.status()).toBe(401);
    await stranger.context().close();
    await context.close();
  });
});
