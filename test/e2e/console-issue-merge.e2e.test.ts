import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { launchChromium, OWNER, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * Merge and resolve in next deploy in the console (issue 41), in a real browser against the whole service: three
 * issues selected in the list and merged into the one with the most events, its page listing what it merged, a merged
 * issue's link opening the target; then the target resolved in next deploy and resolved by a newer production deploy
 * made live, its page saying which. Screenshots go to the temp directory.
 */
let svc: ConsoleService;
let browser: Browser;
let page: Page;
let cookie = '';
const SLUG = 'merges';
let projectId = '';

const api = async (url: string, init: RequestInit = {}) =>
  (await fetch(`${svc.base}${url}`, { ...init, headers: { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' } })).json() as Promise<
    Record<string, unknown>
  >;
async function until<T>(read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}
/** A ready production deploy with its output kept (a rollback can make it live). */
async function deploy(id: string, sha: string, minutesAgo: number, live: boolean) {
  const db = svc.running.platform.db;
  await db.query(
    `INSERT INTO deploys (id, project_id, branch, git_sha, environment, status, trigger_kind, created_at, started_at, finished_at, artifact_dir)
     VALUES ($1, $2, 'main', $3, 'production', 'ready', 'hook', now() - make_interval(mins => $4), now() - make_interval(mins => $4), now() - make_interval(mins => $4), $5)`,
    [id, projectId, sha, minutesAgo, `artifacts/${id}`],
  );
  if (live) await db.query('UPDATE projects SET live_deploy_id = $2 WHERE id = $1', [projectId, id]);
}
async function errors(names: string[]) {
  await svc.running.platform.bus.publish(TOPICS.errorEvents, [
    {
      key: projectId,
      value: encodeErrorBatchV1({
        projectId,
        originHost: null,
        receivedAt: Date.now(),
        events: names.map((name) => ({
          eventId: randomUUID(),
          name,
          message: `${name} happened`,
          stack: `${name}: ${name} happened\n    at run (/srv/app/src/${name}.js:1:1)`,
          runtime: 'node' as const,
          truncated: [],
        })),
      }),
    },
  ]);
}

beforeAll(async () => {
  svc = await startConsoleService();
  browser = await launchChromium();
  page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  const signIn = await fetch(`${svc.base}/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OWNER) });
  cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .find((c) => c.startsWith('cx_session='))!;
  const made = await api('/v1/projects', { method: 'POST', body: JSON.stringify({ name: 'Merges', slug: SLUG }) });
  projectId = (made as { project: { id: string } }).project.id;
  await page.goto(`${svc.base}/projects`);
  await page.getByLabel('Email').fill(OWNER.email);
  await page.getByLabel('Password').fill(OWNER.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
});

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && page)
    await page.screenshot({
      path: path.join(os.tmpdir(), `console-issue-merge-failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`),
      fullPage: true,
    });
});

afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
});

describe('merge and resolve in next deploy in the console', () => {
  it('merges the selected issues into the one with the most events, lists what it merged, and shows the deploy that resolved it', async () => {
    await deploy('dep_e2emarked', '4444444aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 30, true);
    await errors(['PaymentError', 'PaymentError', 'PaymentError', 'CartError', 'StockError']);
    const listed = await until(
      () => api(`/v1/projects/${SLUG}/errors`),
      (b) => (b.data as unknown[]).length === 3,
    );
    const rows = listed.data as Array<{ groupId: string; name: string }>;
    const target = rows.find((i) => i.name === 'PaymentError')!.groupId;
    const merged = rows.filter((i) => i.name !== 'PaymentError').map((i) => i.groupId);

    await page.goto(`${svc.base}/projects/${SLUG}/errors`);
    // The three rows first: "select all" on a list still loading selects nothing, and Merge then does nothing.
    await until(
      async () => page.locator('.issue-row').count(),
      (n) => n === 3,
    );
    await page.getByRole('checkbox', { name: 'Select all issues on this page' }).check();
    await page.getByRole('button', { name: 'Merge' }).click();
    const toolbar = page.getByRole('toolbar', { name: 'Bulk actions' });
    await toolbar.getByRole('status').waitFor();
    expect(await toolbar.getByRole('status').innerText()).toBe('2 issues merged into PaymentError: PaymentError happened.');
    await until(
      async () => page.locator('.issue-row').count(),
      (n) => n === 1,
    );
    expect(await page.locator('.issue-row').innerText()).toContain('PaymentError');

    await page.goto(`${svc.base}/projects/${SLUG}/errors/${target}`);
    const section = page.locator('section', { has: page.getByRole('heading', { name: 'Merged from' }) });
    await section.waitFor();
    for (const id of merged) expect(await section.innerText()).toContain(id);
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-issue-merge-target.png'), fullPage: true });

    // A merged issue's link opens the target, saying so.
    await page.goto(`${svc.base}/projects/${SLUG}/errors/${merged[0]}`);
    await page.getByText(`Issue ${merged[0]} was merged into this one.`).waitFor();
    expect(await page.getByRole('heading', { level: 1 }).innerText()).toContain('PaymentError');

    // Resolve in next deploy, then a newer production deploy goes live: the page names it.
    await page.goto(`${svc.base}/projects/${SLUG}/errors/${target}`);
    await page.getByRole('button', { name: 'Resolve in next deploy' }).click();
    await until(
      async () => page.locator('.issue-facts .badge').first().innerText(),
      (t) => t === 'resolving',
    );
    await deploy('dep_e2enext', '5555555bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', 5, false);
    await api(`/v1/projects/${SLUG}/deploys/dep_e2enext/rollback`, { method: 'POST', body: '{}' });
    await page.reload();
    const deploys = page.locator('section', { has: page.getByRole('heading', { name: 'Deploys' }) });
    await deploys.getByRole('status').waitFor();
    expect(await deploys.getByRole('status').innerText()).toContain('Resolved by 5555555, the next production deploy after 4444444');
    expect(await page.locator('.issue-facts .badge').first().innerText()).toBe('resolved');
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-issue-merge-resolved.png'), fullPage: true });
  });
});
