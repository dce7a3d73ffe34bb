import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { routePath } from '../../schemas/api/client.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';
import { parseMessage } from '../support/smtp-receiver.ts';
import { launchChromium, signedInOwner, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * Status page subscribers in Chromium against `npm start`'s single process (issue 43). The Subscribers panel of the
 * console's Uptime page: an address signed up through the status page's form (script off: a plain form post, answered
 * with a page) shows as pending; a webhook subscriber added in the panel shows its secret once and is listed, and
 * removing it takes it off. A reader without script: sign-up → the confirmation link from the mail (the file mailer's
 * .eml) → an incident written on its route is mailed with List-Unsubscribe → the unsubscribe page's button ends it.
 * Pictures are left in SCREENSHOTS_DIR or the temp dir.
 */
let svc: ConsoleService;
let browser: Browser;
let receiver: HttpsReceiver;
let shown: Page | undefined;
const SLUG = 'subscribed-shop';
const shots = process.env.SCREENSHOTS_DIR ?? os.tmpdir();

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  svc = await startConsoleService({ webhookCa: receiver.cert, hosts: { 'status-target.example': '93.184.215.14' } });
  browser = await launchChromium();
});
afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && shown)
    await shown.screenshot({ path: path.join(shots, 'console-status-subscribers-failed.png') }).catch(() => undefined);
});
afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
  await receiver?.close();
});

describe('the Subscribers panel', () => {
  it('lists a pending e-mail subscriber, adds a webhook subscriber (secret shown once) and removes it', async () => {
    const { page, api } = await signedInOwner(svc, browser);
    shown = page;
    await api(routePath('createProject'), { method: 'POST', body: JSON.stringify({ name: 'Subscribed shop', slug: SLUG }) });
    const made = await api(routePath('createMonitor', { slug: SLUG }), {
      method: 'POST',
      body: JSON.stringify({ name: 'Shop', url: 'https://status-target.example/', public: true, paused: true }),
    });
    expect(made.monitor).toBeTruthy();
    // the status page's own form, in a browser with script off
    const reader = await (await browser.newContext({ javaScriptEnabled: false })).newPage();
    await reader.goto(`${svc.base}${routePath('statusPage', { slug: SLUG })}`);
    await reader.getByLabel('Email address').fill('reader@example.com');
    await reader.getByRole('button', { name: 'Subscribe' }).click();
    await reader.getByRole('heading', { name: 'Check your inbox' }).waitFor();
    await reader.context().close();

    await page.goto(`${svc.base}/projects/${SLUG}/uptime`);
    const panel = page.locator('section[aria-labelledby="subscribers-h"]');
    await panel.locator('tr', { hasText: 'reader@example.com' }).waitFor();
    expect(await panel.locator('tr', { hasText: 'reader@example.com' }).innerText()).toContain('pending');

    await panel.getByLabel('Webhook URL').fill(receiver.url);
    await panel.getByRole('button', { name: 'Add webhook subscriber' }).click();
    await panel.getByRole('status').waitFor();
    expect(await panel.getByRole('status').innerText()).toMatch(/whsec_/);
    const hook = panel.locator('tr', { hasText: receiver.url });
    await hook.waitFor();
    expect(await hook.innerText()).toContain('webhook');
    expect(await panel.innerText()).toContain('0 by e-mail, 1 waiting for their confirmation, 1 by webhook');
    await panel.screenshot({ path: path.join(shots, 'console-status-subscribers.png') });

    page.once('dialog', (d) => void d.accept());
    await hook.getByRole('button', { name: /Remove/ }).click();
    await expect.poll(() => panel.locator('tr', { hasText: receiver.url }).count()).toBe(0);
    const list = await api(routePath('listStatusSubscribers', { slug: SLUG }));
    expect(list.counts).toEqual({ confirmed: 0, pending: 1, webhooks: 0 });
  });
});

/** The mail `npm start` wrote for `to` (DATA_DIR/mail/*.eml, the file mailer), oldest first. */
async function mailFiles(to: string) {
  const dir = path.join(svc.dataDir, 'mail');
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.eml')).sort();
  const mails = await Promise.all(names.map(async (n) => parseMessage(await readFile(path.join(dir, n), 'utf8'))));
  return mails.filter((m) => (m.headers.to ?? '').includes(to));
}

describe('a reader in a browser without script', () => {
  it('signs up, confirms from the mail, gets the incident update, and unsubscribes with the button', async () => {
    const { api } = await signedInOwner(svc, browser);
    const slug = 'reader-shop';
    await api(routePath('createProject'), { method: 'POST', body: JSON.stringify({ name: 'Reader shop', slug }) });
    const made = (await api(routePath('createMonitor', { slug }), {
      method: 'POST',
      body: JSON.stringify({ name: 'Shop', url: 'https://status-target.example/', public: true, paused: true }),
    })) as { monitor: { id: string } };
    const email = 'fan@example.com';
    const reader = await (await browser.newContext({ javaScriptEnabled: false })).newPage();
    shown = reader;
    await reader.goto(`${svc.base}${routePath('statusPage', { slug })}`);
    await reader.getByLabel('Email address').fill(email);
    await reader.getByRole('button', { name: 'Subscribe' }).click();
    await reader.getByRole('heading', { name: 'Check your inbox' }).waitFor();

    await expect.poll(async () => (await mailFiles(email)).length, { timeout: 10_000 }).toBe(1);
    const link = /https?:\/\/\S+confirm\?token=\S+/.exec((await mailFiles(email))[0]!.text)![0];
    await reader.goto(`${svc.base}${new URL(link).pathname}${new URL(link).search}`);
    await reader.getByRole('heading', { name: 'Subscribed' }).waitFor();

    await api(routePath('createStatusIncident', { slug }), {
      method: 'POST',
      body: JSON.stringify({ title: 'Slow checkout', monitorIds: [made.monitor.id], message: 'Looking into slow pages.' }),
    });
    await expect.poll(async () => (await mailFiles(email)).length, { timeout: 20_000 }).toBe(2);
    const update = (await mailFiles(email))[1]!;
    expect(update.text).toContain('Looking into slow pages.');
    expect(update.headers['list-unsubscribe-post']).toBe('List-Unsubscribe=One-Click');
    const unsubscribe = new URL(update.headers['list-unsubscribe']!.slice(1, -1));
    await reader.goto(`${svc.base}${unsubscribe.pathname}${unsubscribe.search}`);
    expect(await reader.locator('main').innerText()).toContain('f***@example.com');
    await reader.screenshot({ path: path.join(shots, 'status-unsubscribe.png') });
    await reader.getByRole('button', { name: 'Unsubscribe' }).click();
    await reader.getByRole('heading', { name: 'Unsubscribed' }).waitFor();
    const list = await api(routePath('listStatusSubscribers', { slug }));
    expect(list.counts).toEqual({ confirmed: 0, pending: 0, webhooks: 0 });
  });
});
