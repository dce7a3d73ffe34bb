import { randomUUID } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import * as clientItems from '../../schemas/bus/client-items.ts';
import { encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import { TOPICS } from '../../schemas/topics.ts';
import { launchChromium, OWNER, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * User feedback in the console (issue 40), in a real browser against the whole service as `npm start` runs it: feedback
 * published on the client-items topic as the edge publishes it, beside an error event it names, shows on the project's
 * feedback page (with a link to the issue) and on the issue's page. Screenshots of both go to the temp directory.
 */
let svc: ConsoleService;
let browser: Browser;
let page: Page;
let cookie = '';
const SLUG = 'shop';
let projectId = '';

const api = async (url: string) => (await fetch(`${svc.base}${url}`, { headers: { cookie } })).json() as Promise<Record<string, unknown>>;
/** Polls `read` until `done` holds: the processor runs beside the test. */
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
  if (ctx.task.result?.state === 'fail' && page)
    await page.screenshot({ path: path.join(os.tmpdir(), `console-feedback-failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`), fullPage: true });
});

afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
});

describe('user feedback in the console', () => {
  it("lists feedback on the project's page and on its issue's page", async () => {
    const bus = svc.running.platform.bus;
    const sentryId = randomUUID().replaceAll('-', '');
    const now = Date.now();
    await bus.publish(TOPICS.errorEvents, [
      {
        key: projectId,
        value: encodeErrorBatchV1({
          projectId,
          originHost: 'shop.example.com',
          receivedAt: now,
          events: [
            {
              eventId: randomUUID(),
              name: 'CheckoutError',
              message: 'payment form did not submit',
              stack: '',
              runtime: 'browser',
              truncated: [],
              extra: { sentry: { eventId: sentryId } },
            },
          ],
        }),
      },
    ]);
    const issues = await until(
      () => api(`/v1/projects/${SLUG}/errors`),
      (b) => (b.data as unknown[]).length === 1,
    );
    const groupId = (issues.data as Array<{ groupId: string }>)[0]!.groupId;
    const feedback: clientItems.FeedbackItem[] = [
      {
        id: randomUUID().replaceAll('-', ''),
        eventId: sentryId,
        source: 'feedback',
        name: 'Ann Buyer',
        email: 'ann@example.com',
        message: 'I clicked Pay and nothing happened.\nMy card is 4242 4242 4242 4242.',
        url: 'https://shop.example.com/checkout',
        timestamp: now,
      },
      { id: randomUUID().replaceAll('-', ''), source: 'user_report', message: 'Love the new search <b>bold</b>', timestamp: now },
    ];
    const m: clientItems.ClientItemsMessage = { v: 1, batchId: randomUUID(), projectId, originHost: 'shop.example.com', receivedAt: now + 1, feedback };
    await bus.publish(clientItems.TOPIC, [{ key: projectId, value: clientItems.encode(m) }]);
    await until(
      () => api(`/v1/projects/${SLUG}/feedback`),
      (b) => (b.data as unknown[]).length === 2,
    );

    await page.goto(`${svc.base}/projects/${SLUG}`);
    await page.getByRole('navigation', { name: 'Project' }).getByRole('link', { name: 'Feedback' }).click();
    await page.getByRole('heading', { name: 'User feedback' }).waitFor();
    const rows = page.locator('.feedback-table tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBe(2);
    const ann = rows.filter({ hasText: 'Ann Buyer' });
    expect(await ann.innerText()).toContain('ann@example.com');
    expect(await ann.locator('.feedback-message').innerText()).toBe('I clicked Pay and nothing happened.\nMy card is [Filtered].');
    // Markup in a message is text.
    expect(await rows.filter({ hasText: 'Love the new search' }).locator('.feedback-message').innerText()).toBe('Love the new search <b>bold</b>');
    expect(await rows.filter({ hasText: 'Love the new search' }).innerText()).toContain('anonymous');
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-feedback-project.png'), fullPage: true });

    await ann.getByRole('link', { name: 'Open issue' }).click();
    await page.waitForURL(`**/errors/${groupId}`);
    const section = page.locator('section', { has: page.getByRole('heading', { name: 'User feedback' }) });
    await section.locator('tbody tr').first().waitFor();
    expect(await section.locator('tbody tr').count()).toBe(1);
    expect(await section.innerText()).toContain('I clicked Pay and nothing happened.');
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-feedback-issue.png'), fullPage: true });
  });
});
