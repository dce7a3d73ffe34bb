import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderStatusHtml } from '../../api/uptime/status-html.ts';
import type { StatusView } from '../../api/uptime/status-view.ts';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../support/accounts.ts';
import { steerableGuard } from '../support/outbound-guard.ts';
import { launchChromium } from './support/console-service.ts';

/**
 * Issue 43 "The page" in a real browser (Debian's chromium, playwright-core): the status page read as a visitor and a
 * screen reader would (headings, the banner, the charts' text alternatives, the form's label), light and dark, without
 * script; without incidents, with an automatic one, and with a written incident and maintenance in the status JSON's
 * shape (the contract of issue 43). A tenant's markup in a monitor name stays text (no dialog opens). The subscribe
 * form posts with script off. Screenshots (status-page-*.png): SCREENSHOTS_DIR when set, else the temp dir.
 */
const HOUR = 3_600_000;
const EVIL = '<img src=x onerror=alert(1)>Checkout <script>alert(2)</script>';
const shots = process.env.SCREENSHOTS_DIR ?? os.tmpdir();
let t: Awaited<ReturnType<typeof buildTestApi>>;
let browser: Browser;
let base: string;
let owner: Awaited<ReturnType<typeof signUpAndSignIn>>;

/** A project with two public monitors (one named by an attacker), a day of rollups; `incident`: an open automatic one. */
async function seededProject(incident: boolean): Promise<string> {
  const slug = (await createProject(t.app, owner.cookie)).slug;
  const projectId = (await t.platform.db.query<{ id: string }>('SELECT id FROM projects WHERE slug = $1', [slug])).rows[0]!.id;
  const ids: string[] = [];
  for (const name of ['Website', EVIL]) {
    const res = await t.app.inject({
      method: 'POST',
      url: `/v1/projects/${slug}/uptime`,
      headers: sessionHeaders(owner.cookie),
      payload: { name, url: 'https://status-e2e.example/', public: true, paused: true },
    });
    expect(res.statusCode, res.body).toBe(201);
    ids.push(res.json().monitor.id);
  }
  await t.platform.db.query(`UPDATE uptime_monitors SET paused = false, state = 'up' WHERE project_id = $1`, [projectId]);
  const hour = Math.floor(Date.now() / HOUR) * HOUR;
  for (const [i, id] of ids.entries())
    for (let h = 0; h < 24 * 20; h++)
      await t.platform.db.query('INSERT INTO uptime_hourly (monitor_id, hour, checks, failures, ms_sum, ms_checks) VALUES ($1, $2, 60, $3, $4, 60)', [
        id,
        new Date(hour - h * HOUR),
        h === 30 + i * 100 ? 6 : 0,
        60 * (120 + ((h * 37) % 90)),
      ]);
  if (incident) {
    await t.platform.db.query(`UPDATE uptime_monitors SET state = 'down' WHERE id = $1`, [ids[1]]);
    await t.platform.db.query(
      `INSERT INTO uptime_incidents (id, monitor_id, project_id, started_at, cause_error, cause_status) VALUES ($1, $2, $3, $4, 'status', 503)`,
      [`inc_${projectId}`, ids[1], projectId, new Date(Date.now() - 40 * 60_000)],
    );
  }
  return slug;
}

/** What a visitor reads, and what a screen reader is given for the page. */
async function readPage(tab: Page, slug: string) {
  await tab.getByRole('heading', { level: 1, name: `${slug} status` }).waitFor();
  for (const name of ['Monitors', 'Past incidents', 'Get updates']) await tab.getByRole('heading', { level: 2, name }).waitFor();
  expect(await tab.getByRole('main').count()).toBe(1);
  // the tenant's markup is a heading's text, not an element
  await tab.getByRole('heading', { level: 3, name: EVIL, exact: true }).waitFor();
  expect(await tab.locator('main img, script').count()).toBe(0);
  // the bars and charts have names a screen reader reads
  const images = await tab.getByRole('img').evaluateAll((els) => els.map((e) => e.getAttribute('aria-label') ?? ''));
  expect(images.filter((l) => /^Daily uptime over the last 90 days: 2[01] days with checks, 2[01] fully up|lowest 90 % on/.test(l))).toHaveLength(2);
  expect(images.filter((l) => /^Response time over the last 24 hours \(hourly averages\): average \d+ ms/.test(l))).toHaveLength(2);
  await tab.getByLabel('Email address').waitFor();
}

beforeAll(async () => {
  const outbound = steerableGuard({ unknownNames: 'fail' });
  outbound.table['status-e2e.example'] = ['93.184.215.14']; // paused at creation: never dialled
  t = await buildTestApi({ overrides: { outbound: outbound.guard } });
  owner = await signUpAndSignIn(t.app, t.platform);
  base = await t.app.listen({ port: 0, host: '127.0.0.1' });
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await t?.close();
});

describe('the status page in Chromium', () => {
  it('reads without incidents, in light and dark, with no script and no dialog', async () => {
    const slug = await seededProject(false);
    for (const scheme of ['light', 'dark'] as const) {
      const context = await browser.newContext({ colorScheme: scheme, javaScriptEnabled: false, viewport: { width: 900, height: 1200 } });
      const tab = await context.newPage();
      let dialogs = 0;
      tab.on('dialog', (d) => {
        dialogs++;
        void d.dismiss();
      });
      const res = await tab.goto(`${base}/status/${slug}`);
      expect(res?.status()).toBe(200);
      await readPage(tab, slug);
      await tab.getByText('All systems operational').waitFor();
      expect(await tab.getByRole('heading', { name: 'Current incidents' }).count()).toBe(0);
      const bg = await tab.evaluate(() => getComputedStyle(document.body).backgroundColor);
      expect(bg).toBe(scheme === 'dark' ? 'rgb(13, 17, 23)' : 'rgb(255, 255, 255)');
      await tab.screenshot({ path: path.join(shots, `status-page-${scheme}.png`), fullPage: true });
      expect(dialogs).toBe(0);
      await context.close();
    }
  });

  it('shows an open automatic incident under current incidents', async () => {
    const slug = await seededProject(true);
    const context = await browser.newContext({ javaScriptEnabled: false, viewport: { width: 900, height: 1200 } });
    const tab = await context.newPage();
    await tab.goto(`${base}/status/${slug}`);
    await readPage(tab, slug);
    await tab.getByText('Partial outage').waitFor();
    const current = tab.getByRole('region', { name: 'Current incidents' });
    await current.getByRole('heading', { level: 3, name: `${EVIL} is down (an unexpected status)` }).waitFor();
    await current.getByText('Ongoing').waitFor();
    await tab.screenshot({ path: path.join(shots, 'status-page-incident.png'), fullPage: true });
    await context.close();
  });

  it('shows a written incident with its updates and maintenance (the status JSON of issue 43), light and dark', async () => {
    const slug = await seededProject(false);
    const json = (await (await fetch(`${base}/v1/status/${slug}`)).json()) as StatusView;
    const [web, evil] = json.monitors;
    const now = Date.now();
    const at = (min: number) => new Date(now + min * 60_000).toISOString();
    const view: StatusView = {
      ...json,
      status: 'partial',
      monitors: [{ ...web!, state: 'maintenance' }, evil!],
      incidents: [
        {
          id: 'inc_written',
          kind: 'manual',
          monitorId: evil!.id,
          monitor: evil!.name,
          monitorIds: [evil!.id],
          title: 'Payments fail for some cards <b>bold?</b>',
          impact: 'major',
          status: 'identified',
          startedAt: at(-50),
          endedAt: null,
          updates: [
            { status: 'investigating', message: 'We are looking into failed payments.', at: at(-50) },
            { status: 'identified', message: 'A card processor times out.\nA fix is rolling out.', at: at(-20) },
          ],
        },
      ],
      maintenance: [
        {
          id: 'mnt_db',
          title: 'Database upgrade',
          message: 'Writes pause for a minute.',
          monitorIds: [web!.id],
          startsAt: at(-10),
          endsAt: at(50),
          state: 'in_progress',
        },
        { id: 'mnt_next', title: 'Network work', message: '', monitorIds: [], startsAt: at(60 * 24), endsAt: at(60 * 25), state: 'scheduled' },
      ],
    };
    const html = renderStatusHtml(view, slug, { subscribe: '/subscribe', feed: '/feed', json: '/json' });
    expect(Buffer.byteLength(html)).toBeLessThanOrEqual(30 * 1024);
    for (const scheme of ['light', 'dark'] as const) {
      const context = await browser.newContext({ colorScheme: scheme, javaScriptEnabled: false, viewport: { width: 900, height: 1200 } });
      const tab = await context.newPage();
      await tab.setContent(html);
      await readPage(tab, slug);
      const maintenance = tab.getByRole('region', { name: 'Maintenance' });
      await maintenance.getByRole('heading', { level: 3, name: 'Database upgrade' }).waitFor();
      await maintenance.getByText('In progress').waitFor();
      await maintenance.getByText('Affects: Website').waitFor();
      await maintenance.getByRole('heading', { level: 3, name: 'Network work' }).waitFor();
      await maintenance.getByText('Scheduled').waitFor();
      const current = tab.getByRole('region', { name: 'Current incidents' });
      await current.getByRole('heading', { level: 3, name: 'Payments fail for some cards <b>bold?</b>' }).waitFor();
      await current.getByText('Impact: Major').waitFor();
      const updates = await current.getByRole('list', { name: 'Updates, newest first' }).getByRole('listitem').allInnerTexts();
      expect(updates.map((u) => u.split(/\s/)[0])).toEqual(['Identified', 'Investigating']);
      expect(updates[0]).toContain('A card processor times out.\nA fix is rolling out.');
      await tab.getByText('Under maintenance').first().waitFor();
      await tab.screenshot({ path: path.join(shots, `status-page-written-${scheme}.png`), fullPage: true });
      await context.close();
    }
  });

  it('subscribes through the form with script off (a plain form post)', async () => {
    const slug = await seededProject(false);
    const context = await browser.newContext({ javaScriptEnabled: false });
    const tab = await context.newPage();
    await tab.goto(`${base}/status/${slug}`);
    await tab.getByLabel('Email address').fill('reader@example.com');
    const [answer] = await Promise.all([tab.waitForNavigation(), tab.getByRole('button', { name: 'Subscribe' }).click()]);
    expect(answer?.status()).toBe(202);
    expect(tab.url()).toBe(`${base}/v1/status/${slug}/subscribers`);
    await tab.getByRole('heading', { level: 1, name: 'Check your inbox' }).waitFor();
    await context.close();
  });
});
