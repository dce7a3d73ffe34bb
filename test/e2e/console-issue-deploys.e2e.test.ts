import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { launchChromium, OWNER, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * Issues and deploys in the console (issue 41), in a real browser against the whole service: an issue first seen in
 * one deploy and regressed in the next shows both (linked) and the first deploy's commit that touched its file, resolves in next deploy from its page, and the deploy's
 * page lists the issue it regressed and the commits it brought. Screenshots go to the temp directory.
 */
let svc: ConsoleService;
let browser: Browser;
let page: Page;
let cookie = '';
const SLUG = 'shop';
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
const SHA1 = '1111111aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa';
const SHA2 = '2222222bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb';
async function deploy(id: string, sha: string, minutesAgo: number, live: boolean) {
  const db = svc.running.platform.db;
  await db.query(
    `INSERT INTO deploys (id, project_id, branch, git_sha, environment, status, trigger_kind, created_at, started_at, finished_at)
     VALUES ($1, $2, 'main', $3, 'production', 'ready', 'hook', now() - make_interval(mins => $4), now() - make_interval(mins => $4), now() - make_interval(mins => $4))`,
    [id, projectId, sha, minutesAgo],
  );
  if (live) await db.query('UPDATE projects SET live_deploy_id = $2 WHERE id = $1', [projectId, id]);
}
/** Commits as the builder records them from its checkout (builder/commits/), newest first. */
async function commits(deployId: string, list: Array<{ sha: string; subject: string; files: string[] }>) {
  for (const [position, c] of list.entries())
    await svc.running.platform.db.query(
      `INSERT INTO deploy_commits (deploy_id, position, sha, author, committed_at, subject, files) VALUES ($1, $2, $3, 'Ada', now(), $4, $5::jsonb)`,
      [deployId, position, c.sha, c.subject, JSON.stringify(c.files)],
    );
}
async function errorIn(deployId: string, receivedAt: number) {
  await svc.running.platform.bus.publish(TOPICS.errorEvents, [
    {
      key: projectId,
      value: encodeErrorBatchV1({
        projectId,
        originHost: null,
        receivedAt,
        events: [
          {
            eventId: randomUUID(),
            name: 'CheckoutError',
            message: 'payment form did not submit',
            stack: 'CheckoutError: payment form did not submit\n    at submitForm (/srv/app/src/checkout.js:12:7)',
            runtime: 'node',
            truncated: [],
            deployId,
          },
        ],
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
  const made = await api('/v1/projects', { method: 'POST', body: JSON.stringify({ name: 'Shop', slug: SLUG }) });
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
      path: path.join(os.tmpdir(), `console-issue-deploys-failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`),
      fullPage: true,
    });
});

afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
});

describe('issues and deploys in the console', () => {
  it("shows an issue's deploys, resolves it in next deploy, and lists a deploy's issues", async () => {
    await deploy('dep_e2eone', SHA1, 30, false);
    await deploy('dep_e2etwo', SHA2, 20, true);
    await commits('dep_e2eone', [
      { sha: 'c1c1c1c1aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', subject: 'Rework the checkout form', files: ['src/checkout.js', 'src/form.css'] },
      { sha: 'c2c2c2c2aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', subject: 'Fix a typo in the README', files: ['README.md'] },
    ]);
    await commits('dep_e2etwo', [{ sha: 'c3c3c3c3aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', subject: 'Bump dependencies', files: ['package.json'] }]);
    const now = Date.now();
    await errorIn('dep_e2eone', now);
    const issues = await until(
      () => api(`/v1/projects/${SLUG}/errors`),
      (b) => (b.data as unknown[]).length === 1,
    );
    const groupId = (issues.data as Array<{ groupId: string }>)[0]!.groupId;
    await api(`/v1/projects/${SLUG}/errors/${groupId}/resolve`, { method: 'POST', body: '{}' });
    await errorIn('dep_e2etwo', now + 1);
    await until(
      () => api(`/v1/projects/${SLUG}/errors/${groupId}`),
      (b) => (b.issue as { regressionCount: number }).regressionCount === 1,
    );

    await page.goto(`${svc.base}/projects/${SLUG}/errors/${groupId}`);
    const section = page.locator('section', { has: page.getByRole('heading', { name: 'Deploys' }) });
    await section.waitFor();
    const fact = (label: string) => section.locator('div', { has: page.locator('dt', { hasText: label }) }).locator('dd');
    expect(await fact('First seen in').innerText()).toBe('1111111');
    expect(await fact('Regressed in').innerText()).toBe('2222222');
    expect(await fact('Last seen in').innerText()).toBe('2222222');

    // Suspect commits: of the first-seen deploy's two commits, the one that touched the in-app frame's file.
    const suspects = page.locator('section', { has: page.getByRole('heading', { name: 'Suspect commits' }) });
    const suspectRow = suspects.locator('tbody tr');
    await suspectRow.first().waitFor();
    expect(await suspectRow.count()).toBe(1);
    expect(await suspectRow.innerText()).toContain('Rework the checkout form');
    expect(await suspectRow.innerText()).toContain('src/checkout.js');
    expect(await suspects.innerText()).not.toContain('README');

    await page.getByRole('button', { name: 'Resolve in next deploy' }).click();
    await section.getByRole('status').waitFor();
    expect(await section.getByRole('status').innerText()).toContain('Resolves when a production deploy newer than 2222222 goes live');
    expect(await page.locator('.issue-facts .badge').first().innerText()).toBe('resolving');
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-issue-deploys-issue.png'), fullPage: true });

    await fact('Regressed in').getByRole('link').click();
    await page.waitForURL('**/deploys/dep_e2etwo');
    const issuesSection = page.locator('section', { has: page.getByRole('heading', { name: 'Issues', exact: true }) });
    const row = issuesSection.locator('tbody tr');
    await row.first().waitFor();
    expect(await row.count()).toBe(1);
    expect(await row.innerText()).toContain('CheckoutError');
    expect(await row.innerText()).toContain('regressed');
    const deployCommits = page.locator('section', { has: page.getByRole('heading', { name: 'Commits', exact: true }) }).locator('tbody tr');
    await deployCommits.first().waitFor();
    expect(await deployCommits.count()).toBe(1);
    expect(await deployCommits.innerText()).toContain('Bump dependencies');
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-issue-deploys-deploy.png'), fullPage: true });
  });
});
