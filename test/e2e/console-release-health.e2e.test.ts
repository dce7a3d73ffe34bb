import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newId } from '../../platform/tokens.ts';
import { routePath } from '../../schemas/api/client.ts';
import { encode, TOPIC, type SessionUpdate } from '../../schemas/bus/client-items.ts';
import { launchChromium, OWNER, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * Release health in the console (issue 40), in Chromium against `npm start`'s single process: session updates go onto
 * the bus as the edge publishes them (schemas/bus/client-items.ts) for the live deploy and an older one, and the
 * console shows crash-free sessions and users per deploy on the Deploys page, the live deploy's crash-free sessions
 * over time on the overview, and a deploy's own on its page. Pictures of each are left in the temp dir.
 */
let svc: ConsoleService;
let browser: Browser;
let shown: Page | undefined;
let cookie = '';
const SLUG = 'health-shop';
const HOUR = 3_600_000;
let live = '';
let older = '';

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

/** `n` sessions of a deploy started `hoursAgo`, `crashed` of them crashed, each of its own user; init and end updates. */
function sessions(deployId: string, hoursAgo: number, n: number, crashed: number): SessionUpdate[] {
  const started = Date.now() - hoursAgo * HOUR;
  return Array.from({ length: n }, (_, i) => {
    const base = { sid: randomUUID(), did: `user-${deployId}-${hoursAgo}-${i}`, errors: 0, started, timestamp: started, release: deployId };
    return [
      { ...base, init: true, status: 'ok' as const },
      { ...base, init: false, status: i < crashed ? ('crashed' as const) : ('exited' as const), errors: i < crashed ? 1 : 0 },
    ];
  }).flat();
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
  const { project } = await asOwner(routePath('createProject'), { name: 'Health shop', slug: SLUG });
  const { db, bus } = svc.running.platform;
  older = newId('dep_');
  live = newId('dep_');
  for (const [id, ago] of [
    [older, 48],
    [live, 12],
  ] as const)
    await db.query(
      `INSERT INTO deploys (id, project_id, branch, environment, status, git_sha, created_at, finished_at) VALUES ($1, $2, 'main', 'production', 'ready', $3, $4, $4)`,
      [id, project.id, randomUUID().replace(/-/g, '').padEnd(40, '0'), new Date(Date.now() - ago * HOUR)],
    );
  await db.query('UPDATE projects SET live_deploy_id = $2 WHERE id = $1', [project.id, live]);
  // The live deploy: 10 sessions an hour for 8 hours, crashes in two of them (97.5 % crash-free); the older one 80 %.
  const updates = [...[0, 1, 2, 3, 4, 5, 6, 7].flatMap((h) => sessions(live, h + 0.5, 10, h === 2 ? 1 : h === 5 ? 1 : 0)), ...sessions(older, 20, 10, 2)];
  for (let i = 0; i < updates.length; i += 100) {
    const msg = { v: 1 as const, batchId: randomUUID(), projectId: project.id, originHost: null, receivedAt: Date.now(), sessions: updates.slice(i, i + 100) };
    await bus.publish(TOPIC, [{ key: project.id, value: encode(msg) }]);
  }
  browser = await launchChromium();
});

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && shown)
    await shown.screenshot({ path: path.join(os.tmpdir(), 'console-release-health-failed.png') }).catch(() => undefined);
});

afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
});

describe('release health in the console', () => {
  it('shows crash-free sessions and users per deploy, and the live deploy over time on the overview', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await context.addCookies([{ name: 'cx_session', value: cookie.slice('cx_session='.length), url: svc.base }]);
    const page = await context.newPage();
    shown = page;

    // The overview: the live deploy's tile and its line, once the processor has counted every session.
    const tile = page.locator('a.tile', { hasText: 'crash-free sessions' });
    await expect
      .poll(
        async () => {
          await page.goto(`${svc.base}/projects/${SLUG}`);
          await tile.waitFor();
          await page.waitForLoadState('networkidle');
          return tile.innerText();
        },
        { timeout: 30_000, interval: 500 },
      )
      .toContain('80 sessions');
    expect(await tile.innerText()).toContain('97.50%');
    const chart = page.locator('section[aria-labelledby="live-health-h"] svg[role="img"]');
    await chart.waitFor();
    expect(await chart.locator('polyline').count()).toBeGreaterThanOrEqual(1);
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-release-health-overview.png'), fullPage: true });

    // The Deploys page: a column each, per deploy.
    await page.goto(`${svc.base}/projects/${SLUG}/deploys`);
    const row = (id: string) => page.locator('tr', { hasText: id });
    await row(live).waitFor();
    await expect.poll(async () => row(older).innerText(), { timeout: 10_000, interval: 200 }).toContain('80.00%');
    expect(await row(live).innerText()).toMatch(/97\.50%\s+97\.50%/);
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-release-health-deploys.png'), fullPage: true });

    // A deploy's page: its totals and its hours.
    await page.goto(`${svc.base}/projects/${SLUG}/deploys/${live}`);
    const section = page.locator('section[aria-labelledby="health-h"]');
    await section.locator('svg[role="img"]').waitFor();
    expect(await section.innerText()).toMatch(/Crash-free sessions\s+97\.50%/);
    expect(await section.innerText()).toContain('2 crashed');
    await section.screenshot({ path: path.join(os.tmpdir(), 'console-release-health-deploy.png') });
    await context.close();
  });
});
