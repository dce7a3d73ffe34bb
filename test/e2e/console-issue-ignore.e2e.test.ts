import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, it } from 'vitest';
import { encodeErrorBatchEnvelope } from '../../schemas/bus/error-events.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { launchChromium, OWNER, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * Ignore until (issue 41) in a real browser against the whole service: the issue page's Ignore takes a condition, the
 * issue then says "Ignored until …"; after enough events it is back, and the page says why.
 */
let svc: ConsoleService;
let browser: Browser;
let page: Page;
let cookie = '';
const SLUG = 'shop';
let projectId = '';

const api = async (url: string) => (await fetch(`${svc.base}${url}`, { headers: { cookie } })).json() as Promise<Record<string, unknown>>;
async function until<T>(read: () => Promise<T>, done: (v: T) => boolean): Promise<T> {
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
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
  const made = await fetch(`${svc.base}/v1/projects`, {
    method: 'POST',
    headers: { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
    body: JSON.stringify({ name: 'Shop', slug: SLUG, environmentHosts: { production: ['shop.example.com'], preview: [] } }),
  });
  projectId = ((await made.json()) as { project: { id: string } }).project.id;
  await page.goto(`${svc.base}/projects`);
  await page.getByLabel('Email').fill(OWNER.email);
  await page.getByLabel('Password').fill(OWNER.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
});

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && page) await page.screenshot({ path: path.join(os.tmpdir(), 'console-issue-ignore-failed.png'), fullPage: true });
});

afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
});

function publish(n: number) {
  const events = Array.from({ length: n }, () => ({ name: 'CartError', message: 'cart is undefined', path: '/cart' }));
  const value = encodeErrorBatchEnvelope(
    { projectId, originHost: 'shop.example.com', receivedAt: Date.now(), defaultRuntime: 'browser', eventIds: events.map(() => randomUUID()) },
    Buffer.from(JSON.stringify({ batch: events })),
  );
  return svc.running.platform.bus.publish(TOPICS.errorEvents, [{ key: projectId, value }]);
}

describe('ignore until in the console', () => {
  it('ignores until 100 more events, shows it, and says why the issue came back', async () => {
    await publish(1);
    const issues = await until(
      () => api(`/v1/projects/${SLUG}/errors`),
      (b) => (b.data as unknown[]).length === 1,
    );
    const groupId = (issues.data as Array<{ groupId: string }>)[0]!.groupId;
    await page.goto(`${svc.base}/projects/${SLUG}/errors/${groupId}`);
    await page.getByLabel('Ignore for how long').selectOption({ label: 'Until 100 more events' });
    await page.getByRole('button', { name: 'Ignore', exact: true }).click();
    await page.getByText(/Ignored until 100 more events \(0 so far\)/).waitFor();

    // A client batch holds at most LIMITS.errorBatch.maxEvents events.
    for (let i = 0; i < 5; i++) await publish(20);
    await until(
      () => api(`/v1/projects/${SLUG}/errors/${groupId}`),
      (b) => (b.issue as { status: string }).status === 'unresolved',
    );
    await page.reload();
    await page.getByText(/Back from ignored .*: it reached the events it was ignored for/).waitFor();
  });
});
