import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { routePath } from '../../schemas/api/client.ts';
import { encode, TOPIC, type CheckInItem } from '../../schemas/bus/client-items.ts';
import { launchChromium, OWNER, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * Cron jobs on the console's uptime page (issue 40), in Chromium against `npm start`'s single process: one job checks
 * in through Sentry's HTTP cron form on the service's own port (its DSN's key), another's check-ins go onto the bus as
 * the envelope route publishes them and its run fails. The page shows each job's schedule, state, last check-in and
 * next expected run, and a job's recent check-ins; a picture is left in the temp dir.
 */
let svc: ConsoleService;
let browser: Browser;
let shown: Page | undefined;
let cookie = '';
const SLUG = 'cron-shop';
let cron = '';

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
  const { project } = await asOwner(routePath('createProject'), { name: 'Cron shop', slug: SLUG });
  const { key } = await asOwner(routePath('createKey', { slug: SLUG }), { kind: 'ingest' });
  const dsn = new URL(key.dsn as string);
  cron = `${svc.base}/api${dsn.pathname}/cron/nightly-backup/${dsn.username}/`;

  const now = Date.now();
  const item = (status: CheckInItem['status'], checkInId: string, extra: Partial<CheckInItem> = {}): CheckInItem => ({
    checkInId,
    monitorSlug: 'invoice-run',
    status,
    timestamp: now,
    environment: 'production',
    release: 'abc1234',
    ...extra,
  });
  const config = { schedule: { type: 'interval' as const, value: 15, unit: 'minute' as const }, maxRuntime: 5 };
  const msg = { v: 1 as const, batchId: randomUUID(), projectId: project.id, originHost: null, receivedAt: now };
  await svc.running.platform.bus.publish(TOPIC, [
    {
      key: project.id,
      value: encode({ ...msg, checkIns: [item('in_progress', 'inv-1', { monitorConfig: config }), item('error', 'inv-1', { duration: 3 })] }),
    },
  ]);
  browser = await launchChromium();
});

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && shown)
    await shown.screenshot({ path: path.join(os.tmpdir(), 'console-uptime-heartbeats-failed.png') }).catch(() => undefined);
});

afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
});

describe('cron jobs on the uptime page', () => {
  it('shows each job with its schedule, state, last check-in and next run, and its recent check-ins', async () => {
    // The edge's project cache learns the new key within its refresh.
    const body = JSON.stringify({
      status: 'in_progress',
      check_in_id: 'run-1',
      monitor_config: { schedule: { type: 'crontab', value: '0 3 * * *' }, checkin_margin: 10 },
    });
    await expect
      .poll(async () => (await fetch(cron, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status, {
        timeout: 10_000,
        interval: 250,
      })
      .toBe(202);
    expect((await fetch(`${cron}?status=ok&check_in_id=run-1&duration=42`)).status).toBe(202);

    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addCookies([{ name: 'cx_session', value: cookie.slice('cx_session='.length), url: svc.base }]);
    const page = await context.newPage();
    shown = page;
    const jobs = page.locator('section[aria-labelledby="heartbeats-h"]');
    const row = (name: string) => jobs.locator('tr', { hasText: name });
    // Both jobs listed, and nightly-backup's ok check-in processed: a 202 says the bus holds it, not that it is applied.
    await expect
      .poll(
        async () => {
          await page.goto(`${svc.base}/projects/${SLUG}/uptime`);
          await jobs.waitFor();
          await page.waitForLoadState('networkidle');
          const rows = await jobs.locator('tbody tr').count();
          return rows === 2 && /\bup\b/.test(await row('nightly-backup').innerText());
        },
        { timeout: 30_000, interval: 500 },
      )
      .toBe(true);
    const nightly = await row('nightly-backup').innerText();
    expect(nightly).toMatch(/\bup\b/); // the state badge ("nightly-backup" itself contains "up")
    expect(nightly).toContain('0 3 * * *');
    expect(nightly).toContain('margin 10 min');
    expect(nightly).toMatch(/ok/);
    const invoices = await row('invoice-run').innerText();
    expect(invoices).toContain('down');
    expect(invoices).toContain('failed');
    expect(invoices).toContain('every 15 minutes');

    await row('invoice-run').getByRole('button', { name: 'Check-ins' }).click();
    const history = page.getByRole('table', { name: 'Latest check-ins of invoice-run' });
    await history.waitFor();
    const text = await history.innerText();
    expect(text).toContain('error');
    expect(text).toContain('production');
    expect(text).toContain('abc1234');
    // The incident is listed with the URL monitors' ones.
    expect(await page.locator('section[aria-labelledby="incidents-h"]').innerText()).toContain('invoice-run');
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-uptime-heartbeats.png'), fullPage: true });
    await context.close();
  });
});
