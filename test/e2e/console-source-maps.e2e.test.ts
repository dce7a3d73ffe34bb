import { mkdtemp, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { sampleWith, seedDeployWithMaps, seedIssue, seedStorefrontIssue } from '../support/symbolicated-issue.ts';
import { SOURCE_MAP_SCREENS, shootSourceMapScreens } from './support/source-map-screens.ts';
import { launchChromium, OWNER, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * The console's symbolicated issue page and a deploy's source maps (issue 37), in a real browser against the whole
 * service as `npm start` runs it. The issue is written into the database as the processor stores it (its samples'
 * frames; the processor's own tests make them from real maps), so every case shows at once: resolved frames with their
 * source, library frames folded, one frame per unresolved reason, the minified toggle; an issue stored before
 * symbolication still shows its plain stack. Its pictures (test/e2e/support/source-map-screens.ts) go to SCREENSHOTS_DIR
 * when set (`SCREENSHOTS_DIR=docs/screenshots`), as `npm run screenshots` also makes them.
 */
let svc: ConsoleService;
let browser: Browser;
let page: Page;
const SLUG = 'storefront';
let projectId = '';

beforeAll(async () => {
  svc = await startConsoleService();
  browser = await launchChromium();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  const signIn = await fetch(`${svc.base}/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OWNER) });
  const cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .find((c) => c.startsWith('cx_session='))!;
  const made = await fetch(`${svc.base}/v1/projects`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
    body: JSON.stringify({ name: 'Storefront', slug: SLUG }),
  });
  projectId = ((await made.json()) as { project: { id: string } }).project.id;
  await page.goto(`${svc.base}/projects`);
  await page.getByLabel('Email').fill(OWNER.email);
  await page.getByLabel('Password').fill(OWNER.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
});

/** A locator's text with runs of white space as one space (a screen-reader-only note starts a line of its own). */
const words = async (l: Locator) => (await l.innerText()).replace(/\s+/g, ' ').trim();

/** The frame whose function is `fn` (its source lines may name other functions). */
const frameNamed = (stack: Locator, fn: string) => stack.locator('.frame').filter({ has: page.locator('.fn').getByText(fn, { exact: true }) });

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && page)
    await page.screenshot({ path: path.join(os.tmpdir(), `console-maps-failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`), fullPage: true });
});

afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
});

describe('the issue page with source-mapped frames', () => {
  it('shows original frames with their source (the failing line marked), which map resolved each, and why the rest did not resolve', async () => {
    const { groupId, deployId } = await seedStorefrontIssue(svc.running.platform.db, projectId);
    await page.goto(`${svc.base}/projects/${SLUG}/errors/${groupId}`);
    await page.locator('.stack-view.symbolicated').waitFor();
    const stack = page.locator('.stack-view');
    expect(await stack.locator('.legend').innerText()).toContain('5 of 10 frames resolved by source maps');

    // The top in-app frame: original function and file:line:col, its source open, the failing line marked.
    const top = stack.locator('.frame.in-app').first();
    expect(await words(top.locator('.frame-where'))).toBe('lineTotal src/cart/totals.ts:14:27 (your code)');
    const failing = top.locator('.ctx.failing');
    expect(await failing.count()).toBe(1);
    expect(await failing.locator('.ln').innerText()).toBe('14');
    expect(await failing.locator('.code').innerText()).toBe('  return line.quantity * product.price;');
    expect(await failing.getAttribute('aria-current')).toBe('true');
    expect(await top.locator('.ctx .ln').allInnerTexts()).toEqual(['9', '10', '11', '12', '13', '14', '15', '16', '17', '18', '19']);
    // Which map resolved it, linking to the deploy that kept the map.
    expect(await words(top.locator('.frame-note'))).toBe(`resolved by map assets/index-3f9a2c1b.js.map · deploy ${deployId.slice(0, 12)}…`);

    // The next in-app frames: resolved, their source folded until asked for.
    const cartTotal = frameNamed(stack, 'cartTotal');
    expect(await cartTotal.locator('.context-lines').isVisible()).toBe(false);
    await cartTotal.locator('summary').click();
    expect(await cartTotal.locator('.ctx.failing .code').innerText()).toContain('lines.map((l) => lineTotal(l, products))');
    // Source is text, never markup.
    const summaryFrame = frameNamed(stack, 'CartSummary');
    await summaryFrame.locator('summary').click();
    expect(await summaryFrame.locator('.context-lines').innerText()).toContain('<script>alert("not markup")</script> stays text');
    expect(await page.locator('.context-lines script').count()).toBe(0);

    // Library frames (the original path is node_modules/) are folded like Sentry's.
    const libraries = stack.locator('.library-run');
    expect(await libraries.locator(':scope > summary').allInnerTexts()).toEqual(['1 library frame', '2 library frames']);
    expect(await frameNamed(stack, 'renderWithHooks').isVisible()).toBe(false);
    await libraries.nth(1).locator(':scope > summary').click();
    expect(await words(frameNamed(stack, 'renderWithHooks').locator('.frame-where'))).toBe(
      'renderWithHooks node_modules/react-dom/cjs/react-dom.production.js:5290:21',
    );

    // Every unresolved frame says why, in words.
    const why = (file: string) => words(stack.locator('.frame', { hasText: file }).locator('.frame-note'));
    expect(await why('index-3f9a2c1b.js:7:1')).toBe('minified: line out of range of its map');
    expect(await why('legacy-55aa0c3d.js')).toBe('minified: map could not be read');
    expect(await why('charts-77c0ffee.js')).toBe('minified: not resolved: processor busy');
    expect(await why('widget.min.js')).toBe('minified: no source map for this file');
    await libraries.nth(0).locator(':scope > summary').click();
    expect(await why('<anonymous>')).toBe('minified: not a served file');

    // The deploy link opens the deploy page, which lists its maps.
    await top.getByRole('link', { name: deployId }).click();
    await page.waitForURL(`${svc.base}/projects/${SLUG}/deploys/${deployId}`);
    const maps = page.getByRole('table', { name: 'Source maps kept from this build' });
    await maps.waitFor();
    expect(await maps.locator('tbody tr').allInnerTexts()).toEqual([
      expect.stringMatching(/^\/assets\/checkout-5d6e7f80\.js\s+assets\/checkout-5d6e7f80\.js\.map\s+0a9b8c7d-6e5f-4a3b-9c2d-1e0f9a8b7c6d\s+94\.1 KB$/),
      expect.stringMatching(/^\/assets\/index-3f9a2c1b\.js\s+assets\/index-3f9a2c1b\.js\.map\s+c1f0e2d3-4b5a-4c6d-8e7f-90a1b2c3d4e5\s+1\.8 MB$/),
      expect.stringMatching(/^\/assets\/vendor-0b1c2d3e\.js\s+assets\/vendor-0b1c2d3e\.js\.map\s+–\s+3\.9 MB$/),
    ]);
    expect(await page.locator('section[aria-labelledby="maps-h"]').innerText()).toContain('3 maps, 5.8 MB in all, kept privately');
  });

  it('the minified toggle shows every frame as the client sent it, and back', async () => {
    const { groupId } = await seedStorefrontIssue(svc.running.platform.db, projectId);
    await page.goto(`${svc.base}/projects/${SLUG}/errors/${groupId}`);
    const stack = page.locator('.stack-view.symbolicated');
    await stack.waitFor();
    await stack.getByRole('button', { name: 'Minified' }).click();
    expect(await stack.getByRole('button', { name: 'Minified' }).getAttribute('aria-pressed')).toBe('true');
    const top = stack.locator('.frame.in-app').first();
    expect(await words(top.locator('.frame-where'))).toBe('r https://shop.example.com/assets/index-3f9a2c1b.js:1:18433 (your code)');
    expect(await stack.locator('.context-lines').count()).toBe(0);
    expect(await stack.locator('.frame-where', { hasText: 'src/' }).count()).toBe(0);
    // Each frame still says what resolved it.
    expect(await top.locator('.frame-note').innerText()).toContain('assets/index-3f9a2c1b.js.map');
    await stack.getByRole('button', { name: 'Original' }).click();
    expect(await words(top.locator('.frame-where'))).toBe('lineTotal src/cart/totals.ts:14:27 (your code)');
    expect(await top.locator('.ctx.failing').isVisible()).toBe(true);
  });

  it('an issue stored before symbolication shows its plain stack, and its sample rows carry no frame data', async () => {
    const old = sampleWith(null);
    const groupId = await seedIssue(svc.running.platform.db, projectId, [old]);
    await page.goto(`${svc.base}/projects/${SLUG}/errors/${groupId}`);
    await page.locator('.stack-view').waitFor();
    expect(await page.locator('.stack-view.symbolicated').count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Minified' }).count()).toBe(0);
    expect(await page.locator('.frame.in-app').first().innerText()).toContain('r https://shop.example.com/assets/index-3f9a2c1b.js:1:18433');
    // A symbolicated issue's samples do not spill their frames into the Context column.
    const { groupId: withFrames } = await seedStorefrontIssue(svc.running.platform.db, projectId);
    await page.goto(`${svc.base}/projects/${SLUG}/errors/${withFrames}`);
    await page.locator('table.samples tbody tr').first().waitFor();
    const rows = await page.locator('table.samples').innerText();
    expect(rows).not.toContain('minifiedStack');
    expect(rows).not.toContain('resolution');
  });

  it('takes its pictures: the issue original and minified, the deploy maps (SCREENSHOTS_DIR, else a temp dir)', async () => {
    const out = process.env.SCREENSHOTS_DIR ?? (await mkdtemp(path.join(os.tmpdir(), 'console-maps-shots-')));
    const written = await shootSourceMapScreens({ page, base: svc.base, db: svc.running.platform.db, projectId, slug: SLUG, out });
    expect(written.map((f) => path.basename(f))).toEqual(SOURCE_MAP_SCREENS.map((n) => `${n}.png`));
    for (const f of written) expect((await stat(f)).size).toBeGreaterThan(10_000);
  });

  it('fits a narrow screen: long source lines scroll inside their block, the page does not', async () => {
    const { groupId, deployId } = await seedStorefrontIssue(svc.running.platform.db, projectId);
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      for (const p of [`/projects/${SLUG}/errors/${groupId}`, `/projects/${SLUG}/deploys/${deployId}`]) {
        await page.goto(`${svc.base}${p}`);
        await page
          .locator(p.includes('/errors/') ? '.ctx.failing' : 'table.source-maps')
          .first()
          .waitFor();
        const wide = await page.evaluate(() =>
          [...document.querySelectorAll('body *')]
            .filter((e) => {
              for (let a = e.parentElement; a; a = a.parentElement) if (/auto|scroll|hidden/.test(getComputedStyle(a).overflowX)) return false;
              return e.getBoundingClientRect().right > innerWidth + 1;
            })
            .map((e) => e.outerHTML.slice(0, 120)),
        );
        expect(await page.evaluate(() => document.documentElement.scrollWidth - innerWidth), `${p} ${wide.slice(0, 5).join('\n')}`).toBe(0);
      }
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  it('a deploy whose build kept no maps says so', async () => {
    const deployId = await seedDeployWithMaps(svc.running.platform.db, projectId, []);
    await page.goto(`${svc.base}/projects/${SLUG}/deploys/${deployId}`);
    await page.getByText('This build kept no source maps').waitFor();
  });
});
