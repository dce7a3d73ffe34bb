import { execFileSync } from 'node:child_process';
import { createHash, generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import nodemailer from 'nodemailer';
import { mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGithubStandin, type GithubStandin } from '../support/github-standin.ts';
import { startHttpsReceiver, type HttpsReceiver } from '../support/https-receiver.ts';
import { startStripeStandin, type StripeStandin } from '../support/stripe-standin.ts';
import { prng } from '../support/prng.ts';
import { resendRequest } from '../support/resend.ts';
import { httpRequest } from '../support/http-request.ts';
import { launchChromium, OWNER, sendErrors, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * The console in a real browser (Debian's chromium, driven by playwright-core) against the whole service as `npm start`
 * runs it, on a fresh data dir. A person signs in, creates a project and its keys, sends errors through the edge with
 * the key the page showed, triages them (resolve, a regression comes back, ignore, reopen, bulk actions, keys), changes
 * settings (a refused origin shows the API's message; the second test alert shows the 15-minute limit), creates a
 * webhook and sees its test delivery in the log, creates a deploy hook and watches the deploy's build log, reads
 * analytics and manages feature flags, approves a
 * CLI login, and finds every page usable on a narrow screen with every control labelled.
 */
let svc: ConsoleService;
let receiver: HttpsReceiver;
/** GitHub's API on loopback: the GitHub App's code exchange and installations (test/support/github-standin.ts). */
let gh: GithubStandin;
/** Stripe's Connect OAuth host on loopback: the code exchange (test/support/stripe-standin.ts). */
let stripe: StripeStandin;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let repo: string;
const SLUG = 'shop';
let ingestKey = '';

const RESEND_SECRET = `whsec_${Buffer.from('console-e2e-resend-secret-32byte').toString('base64')}`;
/** The DNS TXT records the service sees (custom domain verification, DKIM keys). */
const txt = new Map<string, string[]>();

function git(cwd: string, ...args: string[]) {
  return execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd, encoding: 'utf8' }).trim();
}

async function issueRows(): Promise<string[]> {
  await page.waitForSelector('.issue-list, .empty');
  return page.locator('.issue-row .issue-title strong').allInnerTexts();
}

/** Wait until the issue list (after its reloads) shows exactly these names, in any order. */
async function expectRows(names: string[]) {
  await expect.poll(async () => (await issueRows()).sort(), { timeout: 15_000 }).toEqual([...names].sort());
}

const event = (name: string, message: string, fn: string, extra: Record<string, unknown> = {}) => ({
  name,
  message,
  stack: `${name}: ${message}\n    at ${fn} (src/${fn}.ts:10:5)\n    at handle (node_modules/express/lib/router/layer.js:95:5)\n    at next (node_modules/express/lib/router/route.js:149:13)`,
  path: `/${fn}`,
  runtime: 'node',
  extra,
});

beforeAll(async () => {
  receiver = await startHttpsReceiver();
  gh = await startGithubStandin();
  stripe = await startStripeStandin();
  const acme = { id: 7001, account: 'acme', repos: [{ id: 7002, fullName: 'acme/shop', private: true }] };
  gh.installations.set(acme.id, acme);
  gh.access.set('octocat', new Set([acme.id]));
  svc = await startConsoleService({
    webhookCa: `${receiver.cert}${gh.cert}${stripe.cert}`,
    txt,
    hosts: { 'github.com': '140.82.112.3' }, // a connected repository's clone URL is checked, never dialled here
    env: {
      RESEND_WEBHOOK_SECRETS: RESEND_SECRET,
      INBOUND_EMAIL_DOMAIN: 'mail.example.com',
      ...gh.env,
      ...stripe.env,
    },
  });
  repo = await mkdtemp(path.join(os.tmpdir(), 'console-repo-'));
  git(repo, 'init', '-q', '-b', 'main');
  await writeFile(path.join(repo, 'build.sh'), 'echo "building the shop"; sleep 1; mkdir -p out; echo "<h1>shop</h1>" > out/index.html; echo "build finished"');
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'first');
  browser = await launchChromium();
  context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: svc.base });
  page = await context.newPage();
  page.on('dialog', (d) => void d.accept());
});

// A failing step leaves a picture of the page behind (in the temp dir), to see what the person would have seen.
afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && page)
    await page.screenshot({ path: path.join(os.tmpdir(), `console-e2e-failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`) }).catch(() => undefined);
});

afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
  await receiver?.close();
  await gh?.close();
  await stripe?.close();
});

describe('the console', () => {
  it('signs in: a wrong password shows the API message, the right one opens the page asked for', async () => {
    await page.goto(`${svc.base}/projects`);
    await page.getByLabel('Email').fill(OWNER.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').innerText()).toMatch(/email or password/i);
    await page.getByLabel('Password').fill(OWNER.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    // The first start made the demo project.
    await page.getByRole('link', { name: /demo/ }).waitFor();
  });

  it('creates a project and lands on its dashboard', async () => {
    await page.getByLabel('Name').fill('Shop');
    await page.getByLabel(/Slug/).fill(SLUG);
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.waitForURL(`${svc.base}/projects/${SLUG}`);
    await page.getByRole('heading', { name: 'Shop' }).waitFor();
    await expect.poll(() => page.locator('.tile').first().innerText()).toMatch(/0\s+open issues/);
    // A second project with the same slug is refused with the API's message.
    await page.goto(`${svc.base}/projects`);
    await page.getByLabel('Name').fill('Shop again');
    await page.getByLabel(/Slug/).fill(SLUG);
    await page.getByRole('button', { name: 'Create project' }).click();
    await expect.poll(() => page.getByRole('alert').innerText()).toMatch(/slug/i);
  });

  it('creates keys: the token shown once with a copy button and the DSN, then only its hint; revoke refuses it at once', async () => {
    await page.goto(`${svc.base}/projects/${SLUG}/keys`);
    await page.getByRole('button', { name: 'Create key' }).click();
    const once = page.getByRole('region', { name: /New ingest key/ });
    await once.waitFor();
    ingestKey = await once.locator('[data-secret="Token"]').innerText();
    expect(ingestKey).toMatch(/^cak_live_/);
    expect(await once.locator('[data-secret="Sentry DSN"]').innerText()).toMatch(/^http:\/\/[0-9a-f]+@/);
    await once.getByRole('button', { name: 'Copy Token' }).click();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(ingestKey);
    await expect.poll(() => once.innerText()).toContain('<script src=');
    expect(await once.innerText()).toContain(`posthog.init('${ingestKey}', { api_host: '${svc.base}' })`);
    await once.getByRole('button', { name: 'I have saved it' }).click();
    await expect.poll(() => page.locator('body').innerText()).not.toContain(ingestKey);

    // An API key with one scope; revoked from the list, it is refused by the API at once.
    await page.getByLabel(/API key \(cx_live_\)/).check();
    await page.getByLabel('Name').fill('ci reader');
    await page.getByRole('button', { name: 'Create key' }).click();
    const token = await page
      .getByRole('region', { name: /New API key/ })
      .locator('[data-secret="Token"]')
      .innerText();
    expect(token).toMatch(/^cx_live_/);
    const read = () => fetch(`${svc.base}/v1/projects/${SLUG}/errors`, { headers: { authorization: `Bearer ${token}` } }).then((r) => r.status);
    expect(await read()).toBe(200);
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByRole('button', { name: 'Revoke ci reader' }).click();
    await page.locator('tr.revoked', { hasText: 'ci reader' }).waitFor();
    expect(await read()).toBe(401);
  });

  it('triages: errors sent through the edge, resolve, a regression comes back, ignore by key, reopen and bulk actions', async () => {
    await sendErrors(svc.base, ingestKey, [
      ...Array.from({ length: 3 }, () => event('TypeError', 'cart is undefined', 'loadCart', { cartId: 42 })),
      event('RangeError', 'coupon 7 out of range', 'applyCoupon'),
      event('SyntaxError', 'bad JSON in profile', 'readProfile'),
    ]);
    await page.goto(`${svc.base}/projects/${SLUG}/errors`);
    // The processor handles the events shortly after (PIPELINE_LINGER_MS): the list shows them after a reload.
    await expect
      .poll(
        async () => {
          await page.reload();
          return (await issueRows()).sort();
        },
        { timeout: 15_000 },
      )
      .toEqual(['RangeError', 'SyntaxError', 'TypeError']);
    expect((await issueRows())[0]).toBe('TypeError'); // sorted by count

    // The detail: in-app frames apart from library frames, the hint labelled as one, a sample with its fields.
    await page.getByRole('link', { name: /TypeError cart is undefined/ }).click();
    await page.getByRole('heading', { name: 'TypeError: cart is undefined' }).waitFor();
    expect(await page.locator('.frame.in-app').allInnerTexts()).toEqual([expect.stringContaining('loadCart')]);
    expect(await page.locator('.library-run summary').innerText()).toBe('2 library frames');
    expect(await page.locator('.frame.library').first().isVisible()).toBe(false);
    expect(await page.getByRole('complementary', { name: 'Suggestion' }).innerText()).toMatch(
      /^Hint \(generated from the message and stack; not a diagnosis\)/,
    );
    const sample = page.locator('table.samples tbody tr').first();
    expect(await sample.innerText()).toMatch(/node\s+\/loadCart/);
    await sample.getByText('1 field').click();
    expect(await sample.locator('pre').innerText()).toContain('"cartId": 42');
    expect(await page.locator('table.samples tbody tr').count()).toBe(3);
    expect(await page.locator('dl.facts').first().innerText()).toMatch(/Events\s+3/);

    // Resolve it; a fresh occurrence brings it back as a regression.
    await page.getByRole('button', { name: 'Resolve', exact: true }).click();
    await page.locator('.badge.status.resolved').waitFor();
    // The answer of the action keeps the samples (issue 23: the page showed "Recent events (0)").
    await page.getByRole('heading', { name: 'Recent events (3)' }).waitFor();
    expect(await page.locator('table.samples tbody tr').count()).toBe(3);
    await page.getByRole('link', { name: '← Issues' }).click();
    await expectRows(['RangeError', 'SyntaxError']);
    await sendErrors(svc.base, ingestKey, [event('TypeError', 'cart is undefined', 'loadCart')]);
    await expect
      .poll(
        async () => {
          await page.reload();
          return issueRows();
        },
        { timeout: 15_000 },
      )
      .toContain('TypeError');
    await page.locator('.issue-row', { hasText: 'TypeError' }).locator('.badge.regressed').waitFor();

    // Keyboard: j moves down, i ignores the highlighted issue.
    await page.getByRole('heading', { name: 'Issues' }).click();
    const focused = () => page.locator('.issue-row.focused .issue-title strong').innerText();
    expect(await focused()).toBe('TypeError');
    await page.keyboard.press('j');
    await expect.poll(focused).not.toBe('TypeError');
    const second = await focused();
    await page.keyboard.press('i');
    await expect.poll(() => page.getByRole('status').filter({ hasText: 'ignored' }).count()).toBe(1);
    await expectRows(['TypeError', 'RangeError', 'SyntaxError'].filter((n) => n !== second));

    // The ignored tab has it; reopen it with the bulk bar.
    await page.getByRole('link', { name: 'Ignored', exact: true }).click();
    await expectRows([second]);
    await page.getByRole('checkbox', { name: 'Select all issues on this page' }).check();
    await page.getByRole('button', { name: 'Reopen' }).click();
    await expectRows([]);
    await page.getByRole('link', { name: 'Unresolved', exact: true }).click();
    await expectRows(['TypeError', 'RangeError', 'SyntaxError']);

    // Search and sort.
    await page.getByLabel('Search').fill('coupon');
    await page.getByRole('button', { name: 'Search' }).click();
    await expectRows(['RangeError']);
    expect(page.url()).toContain('query=coupon');
    await page.getByLabel('Search').fill('');
    await page.getByRole('button', { name: 'Search' }).click();
    await expectRows(['TypeError', 'RangeError', 'SyntaxError']);
    await page.getByLabel('Sort by').selectOption('lastSeen');
    await expect.poll(async () => (await issueRows())[0]).toBe('TypeError'); // the regression is the newest
    await page.getByLabel('Environment').selectOption('preview');
    await expectRows([]);
    await page.getByLabel('Environment').selectOption('');

    // Bulk: select two and resolve them.
    await page.getByRole('checkbox', { name: /Select RangeError/ }).check();
    await page.getByRole('checkbox', { name: /Select SyntaxError/ }).check();
    await page.getByRole('button', { name: 'Resolve', exact: true }).click();
    await expectRows(['TypeError']);
    await page.getByRole('link', { name: 'Resolved', exact: true }).click();
    await expectRows(['RangeError', 'SyntaxError']);

    // An unknown issue says so instead of a blank page.
    await page.goto(`${svc.base}/projects/${SLUG}/errors/grp_000000000000000000000000`);
    await expect.poll(() => page.getByRole('alert').innerText()).toBe('no such issue in this project');
  });

  it('changes settings: a refused origin shows the API message; the second test alert shows the 15-minute limit', async () => {
    await page.goto(`${svc.base}/projects/${SLUG}/settings`);
    const origins = page.getByLabel(/Allowed browser origins/);
    await origins.waitFor();
    await origins.fill('https://shop.example.com/path');
    await page.getByRole('button', { name: 'Save ingest settings' }).click();
    await expect.poll(() => page.getByRole('alert').innerText()).toMatch(/hostname/);
    // A long list is shown whole: the box grows with its lines (issue 23: the fifth line was cut).
    await origins.fill('a.example.com\nb.example.com\nc.example.com\nd.example.com\ne.example.com');
    expect(Number(await origins.getAttribute('rows'))).toBeGreaterThanOrEqual(6);
    await origins.fill('shop.example.com\nlocalhost:3000');
    await page.getByLabel(/Paused/).check();
    await page.getByRole('button', { name: 'Save ingest settings' }).click();
    await page.getByText('Saved.').first().waitFor();
    const settings = await page.evaluate(() => fetch('/v1/projects/shop/errors/settings').then((r) => r.json()));
    expect(settings).toEqual({ paused: true, ingestOrigins: ['shop.example.com', 'localhost:3000'] });

    await page.getByLabel('Send alert email').uncheck();
    await page.getByLabel(/Recipients/).fill('oncall@example.com');
    await page.getByRole('button', { name: 'Save alert settings' }).click();
    await expect
      .poll(() => page.evaluate(() => fetch('/v1/projects/shop/error-alerts').then((r) => r.json())))
      .toEqual({ enabled: false, recipients: ['oncall@example.com'], suppressed: [] });

    await page.getByRole('button', { name: 'Send a test alert' }).click();
    await page.getByText('Test alert sent to oncall@example.com.').waitFor();
    await page.getByRole('button', { name: 'Send a test alert' }).click();
    await expect.poll(() => page.getByRole('alert').innerText()).toMatch(/one test alert per 15 minutes.*Try again in (1[0-5]|[1-9]) min/);
    // Unpause, so the rest of the run ingests.
    await page.getByLabel(/Paused/).uncheck();
    await page.getByRole('button', { name: 'Save ingest settings' }).click();
    await expect.poll(() => page.evaluate(() => fetch('/v1/projects/shop/errors/settings').then((r) => r.json()))).toMatchObject({ paused: false });
  });

  it('adds a custom domain: a reserved one shows the API message; a pending one shows its TXT record and verifies once DNS has it', async () => {
    await page.goto(`${svc.base}/projects/${SLUG}/settings`);
    const domain = page.getByLabel(/^Domain/);
    await domain.waitFor();
    await domain.fill('localhost');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await expect.poll(() => page.getByRole('alert').innerText()).toMatch(/cannot be a project's domain/);
    await domain.fill('shop.example.com');
    await page.getByRole('button', { name: 'Add domain' }).click();
    await page.getByText('TXT _service-challenge.shop.example.com').waitFor();
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-e2e-domain-pending.png'), fullPage: true });
    await page.getByRole('button', { name: 'Verify shop.example.com' }).click();
    await expect.poll(() => page.getByRole('alert').innerText()).toMatch(/add a TXT record _service-challenge\.shop\.example\.com/);
    const listed = await page.evaluate(() => fetch('/v1/projects/shop/domains').then((r) => r.json()));
    txt.set('_service-challenge.shop.example.com', [listed.domains[0].verification.value]);
    await page.getByRole('button', { name: 'Verify shop.example.com' }).click();
    await page.locator('.badge.ok', { hasText: 'verified' }).waitFor();
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-e2e-domains.png'), fullPage: true });

    // The environments' host patterns are edited here too, with the API's validation message (issue 23). They are
    // not domains (issue 39 §5): the section is named for what they do and says they serve nothing.
    await page.reload();
    const hosts = page.getByRole('region', { name: 'Environment hosts' });
    await expect.poll(() => hosts.innerText()).toMatch(/stamped production or preview/);
    expect(await hosts.innerText()).toMatch(/These hosts serve nothing: to serve the site on a domain of yours, add it under Custom domains/);
    const production = page.getByLabel(/^Production hosts/);
    await production.fill('https://shop.example.com/path');
    await page.getByRole('button', { name: 'Save environment hosts' }).click();
    await expect.poll(() => page.getByRole('alert').innerText()).toMatch(/hostname/);
    await production.fill('shop.example.com\n*.shop.example.com');
    await page.getByLabel(/^Preview hosts/).fill('*.preview.shop.example.com');
    await page.getByRole('button', { name: 'Save environment hosts' }).click();
    await expect
      .poll(() => page.evaluate(() => fetch('/v1/projects/shop').then((r) => r.json())).then((b) => b.project.environmentHosts))
      .toEqual({ production: ['shop.example.com', '*.shop.example.com'], preview: ['*.preview.shop.example.com'] });
  });

  it('a settings form keeps what is typed the moment it appears (its fields start from the data as it renders, not in an effect a frame later)', async () => {
    // The page's timers held (Playwright's clock): an effect scheduled when the form appeared runs only at runFor.
    const held = await browser.newContext({ storageState: await context.storageState(), viewport: { width: 1280, height: 800 } });
    try {
      const p = await held.newPage();
      await p.clock.install();
      // The ingest settings held back until the page is up and its timers are held too.
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      await p.route(/\/v1\/projects\/[^/?]+\/errors\/settings$/, async (route) => {
        await gate;
        await route.continue();
      });
      await p.goto(`${svc.base}/projects/${SLUG}/settings`);
      await p.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
      await p.clock.pauseAt(Date.now() + 1000);
      release();
      const origins = p.getByLabel(/^Allowed browser origins/);
      await origins.fill('typed.example.com');
      await p.clock.runFor(1000);
      expect(await origins.inputValue()).toBe('typed.example.com');
    } finally {
      await held.close();
    }
  });

  it('creates a webhook (secret shown once), sends a test event and shows the delivery in the log; edits events; rotates the secret', async () => {
    await page.goto(`${svc.base}/projects/${SLUG}/webhooks`);
    // A plain-http URL is refused with the API's message.
    await page.getByLabel(/^URL/).fill('http://example.com/hook');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    await expect.poll(() => page.getByRole('alert').innerText()).toMatch(/https/);
    await page.getByLabel(/^URL/).fill(receiver.url);
    await page.getByLabel(/Description/).fill('orders service');
    await page.getByRole('button', { name: 'Create endpoint' }).click();
    const secret = await page
      .getByRole('region', { name: /Signing secret/ })
      .locator('[data-secret="Secret"]')
      .innerText();
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'I have saved it' }).click();

    await page.getByRole('button', { name: 'Send a test event' }).click();
    await page.getByText(/webhook\.test sent/).waitFor();
    const got = await receiver.waitFor(1);
    expect(JSON.parse(got[0]!.body).event).toBe('webhook.test');

    await page.getByRole('link', { name: new RegExp(receiver.url.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')) }).click();
    const row = page.locator('table.deliveries tbody tr').first();
    await expect.poll(async () => ((await row.count()) ? row.innerText() : ''), { timeout: 15_000 }).toMatch(/webhook\.test[\s\S]*succeeded \(200\)/);

    // Replay puts the delivery back; the receiver gets it again.
    await row.getByRole('button', { name: 'Replay' }).click();
    await page.getByText(/queued again/).waitFor();
    await receiver.waitFor(2);

    await page.getByLabel('deploy.failed').check();
    await page.getByLabel('webhook.test').check();
    await page.getByRole('button', { name: 'Save events' }).click();
    await page.getByText('Saved.').waitFor();
    const endpoints = await page.evaluate(() => fetch('/v1/projects/shop/webhooks').then((r) => r.json()));
    expect(endpoints.endpoints[0].events.sort()).toEqual(['deploy.failed', 'webhook.test']);
    // A family the API took (`deploy.*`, set by another client) shows checked and survives a save from the console.
    const epId = endpoints.endpoints[0].id as string;
    await page.evaluate(
      (id) =>
        fetch(`/v1/projects/shop/webhooks/${id}`, {
          method: 'PATCH',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ events: ['deploy.*'] }),
        }),
      epId,
    );
    await page.reload();
    expect(await page.getByLabel('deploy.*').isChecked()).toBe(true);
    await page.getByLabel('webhook.test').check();
    await page.getByRole('button', { name: 'Save events' }).click();
    await page.getByText('Saved.').waitFor();
    const kept = await page.evaluate((id) => fetch(`/v1/projects/shop/webhooks/${id}`).then((r) => r.json()), epId);
    expect(kept.endpoint.events.sort()).toEqual(['deploy.*', 'webhook.test']);

    await page.getByRole('button', { name: 'Rotate secret' }).click();
    const rotated = await page.getByRole('region', { name: 'New signing secret' }).locator('[data-secret="Secret"]').innerText();
    expect(rotated).toMatch(/^whsec_/);
    expect(rotated).not.toBe(secret);
  });

  it('creates a deploy hook (URL shown once); a call to it deploys, the build log follows the build to ready, and a rollback serves it again', async () => {
    await page.goto(`${svc.base}/projects/${SLUG}/deploys`);
    await page.getByLabel('Repository URL').fill(repo);
    await page.getByLabel('Output directory').fill('out');
    await page.getByLabel(/Build command/).fill('sh build.sh');
    await page.getByRole('button', { name: 'Save build source' }).click();
    await page.getByText('Saved.').waitFor();

    await page.getByLabel('Hook name').fill('main pushes');
    await page.getByRole('button', { name: 'Create hook' }).click();
    const url = await page
      .getByRole('region', { name: /Deploy hook for main/ })
      .locator('[data-secret="URL"]')
      .innerText();
    expect(url).toMatch(/\/v1\/hooks\/cxhook_/);
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await page.getByText('main pushes').waitFor();

    const hooked = await fetch(url.replace(/^https?:\/\/[^/]+/, svc.base), { method: 'POST' });
    expect(hooked.status).toBe(202);
    const { deployId } = (await hooked.json()) as { deployId: string };
    await page.reload();
    await page.getByRole('link', { name: deployId }).click();
    const log = page.locator('pre.build-log');
    await expect.poll(() => log.innerText(), { timeout: 30_000 }).toContain('build finished');
    await expect.poll(() => page.locator('.issue-facts .badge').first().innerText(), { timeout: 15_000 }).toBe('ready');
    expect(await log.innerText()).toContain('building the shop');

    // The deploys list shows it live.
    await page.getByRole('link', { name: '← Deploys' }).click();
    const liveBadge = (id: string) => page.locator('tr', { hasText: id }).locator('.badge', { hasText: /^live$/ });
    await liveBadge(deployId).waitFor();
    // Each ready deploy links to its own host, which serves it (issue 23).
    const open = page.locator('tr', { hasText: deployId }).getByRole('link', { name: `open ${deployId}` });
    const deployHost = (await open.getAttribute('href'))!;
    expect(deployHost).toMatch(new RegExp(`^http://${deployId.replace(/_/g, '-')}\\.localhost:\\d+/$`));
    // A new project's per-deploy hosts are protected (issue 42): the password page, never the site.
    const own = await httpRequest(svc.base, 'GET', '/', { host: new URL(deployHost).host });
    expect([own.status, own.body.includes('Protected preview'), own.body.includes('<h1>shop</h1>')]).toEqual([401, true, false]);
    // The overview links to the live site.
    await page.goto(`${svc.base}/projects/${SLUG}`);
    expect(await page.locator('a.site-link').getAttribute('href')).toMatch(new RegExp(`^http://${SLUG}\\.localhost:\\d+/$`));
    await page.goto(`${svc.base}/projects/${SLUG}/deploys`);

    // A second deploy from the hook goes live; rolling back from the list serves the first again.
    const second = ((await (await fetch(url.replace(/^https?:\/\/[^/]+/, svc.base), { method: 'POST' })).json()) as { deployId: string }).deployId;
    await page.reload();
    await liveBadge(second).waitFor({ timeout: 30_000 });
    await page.locator('tr', { hasText: deployId }).getByRole('button', { name: 'Roll back to this' }).click();
    await liveBadge(deployId).waitFor();
    expect(await liveBadge(second).count()).toBe(0);
  });

  it('shows analytics sent through the edge, and manages feature flags (a switch keeps the rollout)', async () => {
    const events = [
      ...Array.from({ length: 4 }, (_, i) => ({ event: 'checkout_started', distinctId: `u${i % 2}`, properties: { plan: 'pro' } })),
      { event: 'signup', distinctId: 'u9', properties: {} },
    ];
    const sent = await fetch(`${svc.base}/v1/analytics/i`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ingestKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ batch: events }),
    });
    expect(sent.status).toBe(202);
    await page.goto(`${svc.base}/projects/${SLUG}/analytics`);
    await expect
      .poll(
        async () => {
          await page.reload();
          await page.getByRole('heading', { name: 'Top events' }).waitFor();
          await page.waitForLoadState('networkidle');
          return page.locator('.tile').first().innerText();
        },
        { timeout: 20_000 },
      )
      .toMatch(/^5\s+events/);
    expect(await page.locator('.tile').nth(1).innerText()).toMatch(/^3\s+unique users/);
    // The week reads as seven days on axes (issue 23: one bar, no axes): a bar or a stub per day, dated, on a scale.
    expect(await page.locator('.chart rect.bar').count()).toBeGreaterThanOrEqual(7);
    expect((await page.locator('.chart .x-axis span').allInnerTexts()).filter((t) => t.trim()).length).toBeGreaterThanOrEqual(7);
    expect(await page.locator('.chart .y-axis span').allInnerTexts()).toEqual(['5', '3', '0']);
    await page.locator('.chart').screenshot({ path: path.join(os.tmpdir(), 'console-e2e-chart.png') });
    await page.getByRole('button', { name: 'checkout_started' }).click();
    // Polled as long as the page load above: on a busy machine the filtered query can take longer than expect.poll's 1 s.
    await expect.poll(() => page.locator('.tile').first().innerText(), { timeout: 20_000 }).toMatch(/^4\s+events named checkout_started/);
    await expect.poll(() => page.locator('section[aria-labelledby="raw-h"] tbody tr').count(), { timeout: 20_000 }).toBe(4);

    await page.goto(`${svc.base}/projects/${SLUG}/flags`);
    await page.getByLabel('Key').fill('new-checkout');
    await page.getByLabel(/Rollout %/).fill('30');
    await page.getByRole('button', { name: 'Create flag (off)' }).click();
    const toggle = page.getByRole('switch', { name: 'new-checkout enabled' });
    await expect.poll(() => toggle.getAttribute('aria-checked')).toBe('false');
    await toggle.click();
    await expect.poll(() => toggle.getAttribute('aria-checked')).toBe('true');
    // Its state reads as a state: the knob on the right, 'On' beside it (issue 23).
    expect(await toggle.locator('.state').innerText()).toBe('On');
    await toggle.screenshot({ path: path.join(os.tmpdir(), 'console-e2e-switch-on.png') });
    const flag = () => page.evaluate(() => fetch('/v1/projects/shop/flags/new-checkout').then((r) => r.json()));
    expect((await flag()).flag).toMatchObject({ enabled: true, rolloutPercentage: 30 });
    // Variants whose weights do not add up to 100 are refused with the API's message.
    const json = page.getByLabel('Variants, payload and conditions of new-checkout');
    await page.getByText('Variants, payload and conditions (JSON)').click();
    await json.fill('{"variants":[{"key":"a","weight":10}],"conditions":[]}');
    await page.getByRole('button', { name: 'Save variants, payload and conditions' }).click();
    await expect.poll(() => page.locator('.card.flag [role="alert"]').innerText()).toMatch(/weight/i);
    await json.fill(
      '{"variants":[{"key":"a","weight":50},{"key":"b","weight":50}],"payload":{"color":"green"},"conditions":[{"environments":["production"]}]}',
    );
    await page.getByRole('button', { name: 'Save variants, payload and conditions' }).click();
    await expect.poll(async () => (await flag()).flag.variants.length).toBe(2);
    expect((await flag()).flag).toMatchObject({
      enabled: true,
      rolloutPercentage: 30,
      payload: { color: 'green' },
      conditions: [{ environments: ['production'] }],
    });
    await page.getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No flags yet.').waitFor();
  });

  it('connects a repository and a Stripe account; creates an inbox (its secret shown once) and lists the mail it received, DKIM verdict and .eml', async () => {
    await page.goto(`${svc.base}/projects/${SLUG}/integrations`);
    // GitHub's authorize page, for a user who authorized the app before: straight back to the callback with a code.
    await page.route(`${gh.url}/login/oauth/authorize**`, (route) => {
      const state = new URL(route.request().url()).searchParams.get('state')!;
      return route.fulfill({ status: 302, headers: { location: `${svc.base}/v1/integrations/github/callback?code=${gh.codeFor('octocat')}&state=${state}` } });
    });
    await page.getByLabel(/Repository/).fill('acme/shop');
    await page.getByRole('button', { name: 'Connect repository' }).click();
    await page.getByText('Repository connected.').waitFor();
    await page.getByRole('cell', { name: 'acme/shop', exact: true }).waitFor();
    // Stripe's consent page, for the account's owner consenting: back to the callback with a code naming the account.
    await page.route(`${stripe.url}/oauth/authorize**`, (route) => {
      const state = new URL(route.request().url()).searchParams.get('state')!;
      return route.fulfill({
        status: 302,
        headers: { location: `${svc.base}/v1/payments/connect/callback?code=${stripe.codeFor('acct_1Shop')}&state=${state}` },
      });
    });
    await page.getByRole('button', { name: 'Connect with Stripe' }).click();
    await page.getByText('Stripe account connected.').waitFor();
    await page.getByRole('cell', { name: 'acct_1Shop', exact: true }).waitFor();

    await page.getByLabel(/Address/).fill('support');
    await page.getByLabel(/Webhook URL/).fill(receiver.url);
    await page.getByRole('button', { name: 'Create inbox' }).click();
    const once = page.getByRole('region', { name: 'Inbox support@shop.mail.example.com' });
    await once.waitFor();
    expect(await once.locator('[data-secret="Webhook secret"]').innerText()).toMatch(/^whsec_/);
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-e2e-inbox-created.png'), fullPage: true });
    await page.getByRole('button', { name: 'I have saved it' }).click();
    await expect.poll(() => page.locator('[data-secret]').count()).toBe(0);

    // Mail arrives through Resend's webhook, DKIM-signed by a key DNS serves.
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    txt.set('s1._domainkey.customer.example', [`v=DKIM1; k=rsa; p=${publicKey.export({ type: 'spki', format: 'der' }).toString('base64')}`]);
    const mail = nodemailer.createTransport({
      streamTransport: true,
      buffer: true,
      dkim: { domainName: 'customer.example', keySelector: 's1', privateKey: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString() },
    });
    for (const [subject, signed] of [
      ['Where is my order?', true],
      ['Unsigned question', false],
    ] as const) {
      const raw = (
        await (signed ? mail : nodemailer.createTransport({ streamTransport: true, buffer: true })).sendMail({
          from: 'Grace <grace@customer.example>',
          to: 'support@shop.mail.example.com',
          subject,
          text: 'Hello',
          attachments: [{ filename: 'receipt.txt', content: 'paid' }],
        })
      ).message as Buffer;
      const r = resendRequest(RESEND_SECRET, 'email.received', { to: ['support@shop.mail.example.com'], raw: raw.toString('base64') });
      const res = await httpRequest(svc.base, 'POST', '/v1/webhooks/email', r.headers, r.body);
      expect(res.status).toBe(200);
    }
    await page.getByRole('button', { name: 'Messages' }).click();
    const recent = page.getByRole('table', { name: /Recent mail to support@shop.mail.example.com/ });
    // The list loads once when opened: reopen it until both messages are in.
    await expect
      .poll(
        async () => {
          const n = await recent.locator('tbody tr').count();
          if (n < 2) {
            await page.getByRole('button', { name: 'Hide messages' }).click();
            await page.getByRole('button', { name: 'Messages' }).click();
          }
          return n;
        },
        { timeout: 20_000 },
      )
      .toBe(2);
    expect(await recent.getByRole('row', { name: /Where is my order\?/ }).innerText()).toMatch(/DKIM verified/);
    expect(await recent.getByRole('row', { name: /Unsigned question/ }).innerText()).toMatch(/unverified/);
    const eml = await page.evaluate(
      (href) => fetch(href).then(async (r) => [r.headers.get('content-type'), await r.text()]),
      (await recent.getByRole('link', { name: '.eml' }).first().getAttribute('href'))!,
    );
    expect(eml[0]).toBe('message/rfc822');
    expect(eml[1]).toMatch(/Subject: /);
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-e2e-integrations.png'), fullPage: true });
  });

  it('creates an uptime monitor that goes up, shows its checks, pauses it, and publishes it on the status JSON', async () => {
    receiver.respond = () => ({ status: 200, body: 'ok' });
    await page.goto(`${svc.base}/projects/${SLUG}/uptime`);
    // The Uptime panel and the Incidents panel both say so.
    await page
      .getByText(/No monitor yet/)
      .first()
      .waitFor();
    await page.getByLabel('Name', { exact: true }).fill('Storefront API');
    await page.getByLabel(/^URL/).fill('http://example.com/');
    await page.getByRole('button', { name: 'Create monitor' }).click();
    await expect.poll(() => page.getByRole('alert').first().innerText()).toMatch(/https/);
    await page.getByLabel(/^URL/).fill(receiver.url);
    await page.getByLabel('Check every').selectOption('30');
    await page.getByLabel(/public status page/).check();
    await page.getByRole('button', { name: 'Create monitor' }).click();
    const row = page.getByRole('row', { name: /Storefront API/ }).first();
    await row.waitFor();
    // The monitor loop of `npm start` checks it at once; the page shows it after a reload.
    await expect
      .poll(
        async () => {
          await page.reload();
          await row.waitFor();
          return row.innerText();
        },
        { timeout: 20_000 },
      )
      .toMatch(/\bup\b[\s\S]*200 in \d+ ms/);
    // Check rows reach the analytical store in batches (at most once a second): reopen the list until the first is in.
    await row.getByRole('button', { name: 'Checks' }).click();
    const checks = page.getByRole('table', { name: 'Latest checks of Storefront API' });
    await expect
      .poll(
        async () => {
          const n = await checks.locator('tbody tr').count();
          if (!n) {
            await row.getByRole('button', { name: 'Hide checks' }).click();
            await row.getByRole('button', { name: 'Checks' }).click();
            await page.waitForTimeout(300);
          }
          return n;
        },
        { timeout: 20_000 },
      )
      .toBeGreaterThan(0);
    await checks.getByText('up').first().waitFor();
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-e2e-uptime.png'), fullPage: true });
    const status = await page.evaluate(() => fetch('/v1/status/shop').then((r) => r.json()));
    expect(status).toMatchObject({ status: 'up', monitors: [{ name: 'Storefront API', state: 'up' }] });
    expect(JSON.stringify(status)).not.toContain(receiver.url);
    await page.getByRole('button', { name: 'Pause Storefront API' }).click();
    await page.getByRole('button', { name: 'Resume Storefront API' }).waitFor();
    await expect.poll(() => row.innerText()).toMatch(/paused/);
  });

  it('connects an MCP client through OAuth consent (PKCE), lists it among connected clients, and disconnecting it refuses its token', async () => {
    // The client's redirect target: a loopback page that keeps the code it is sent.
    let got: URLSearchParams | undefined;
    const cb = http.createServer((req, res) => {
      // Only the redirect counts: the browser also asks this origin for /favicon.ico.
      const u = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (u.pathname === '/cb') got = u.searchParams;
      res.writeHead(200, { 'content-type': 'text/plain' }).end('you may close this tab');
    });
    await new Promise<void>((r) => cb.listen(0, '127.0.0.1', () => r()));
    const redirect = `http://127.0.0.1:${(cb.address() as AddressInfo).port}/cb`;
    const client = await (
      await fetch(`${svc.base}/v1/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Claude Desktop', redirect_uris: [redirect] }),
      })
    ).json();
    const verifier = 'k'.repeat(64);
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const ask = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirect,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'st-1',
    });
    await page.goto(`${svc.base}/oauth/authorize?${ask}`);
    await page
      .getByText(/Claude Desktop/)
      .first()
      .waitFor();
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-e2e-oauth-consent.png'), fullPage: true });
    await page.getByRole('button', { name: 'Approve' }).click();
    await expect.poll(() => got?.get('code') ?? null, { timeout: 15_000 }).toMatch(/^cxc_/);
    expect(got!.get('state')).toBe('st-1');
    const tokens = await (
      await fetch(`${svc.base}/v1/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: got!.get('code')!,
          code_verifier: verifier,
          client_id: client.client_id,
          redirect_uri: redirect,
        }),
      })
    ).json();
    expect(tokens.access_token).toMatch(/^cxm_/);
    const mcp = (token: string) =>
      fetch(`${svc.base}/v1/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
    expect((await mcp(tokens.access_token)).status).toBe(200);
    await page.goto(`${svc.base}/projects`);
    await page.getByRole('cell', { name: 'Claude Desktop', exact: true }).waitFor();
    await page.screenshot({ path: path.join(os.tmpdir(), 'console-e2e-connected-apps.png'), fullPage: true });
    await page.getByRole('button', { name: 'Disconnect Claude Desktop' }).click();
    await page.getByText('No MCP client is connected.').waitFor();
    expect((await mcp(tokens.access_token)).status).toBe(401);
    cb.close();
  });

  it('approves a CLI device login from the URL the CLI prints', async () => {
    const started = (await (
      await fetch(`${svc.base}/v1/cli/device`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'laptop cli' }),
      })
    ).json()) as {
      device_code: string;
      verification_uri_complete: string;
    };
    await page.goto(started.verification_uri_complete.replace(/^https?:\/\/[^/]+/, svc.base));
    // A code from a link is confirmed before it is approved (test/e2e/console-oauth-device.e2e.test.ts).
    await page.getByLabel(/This code is the one my terminal shows/).check();
    await page.getByRole('button', { name: 'Approve this CLI login' }).click();
    await page.getByText(/Approved: laptop cli/).waitFor();
    const token = await fetch(`${svc.base}/v1/cli/device/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ device_code: started.device_code }),
    });
    expect(((await token.json()) as { access_token: string }).access_token).toMatch(/^cx_cli_/);
  });

  it('serves the console routes over real HTTP under random input: never a 5xx, never a hang, still up', async () => {
    const rnd = prng(23);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(32 + Math.floor(rnd() * 0x2f00))).join('');
    const html = await (await fetch(`${svc.base}/`)).text();
    const asset = /\/console\/assets\/[^"]+\.js/.exec(html)![0];
    for (let i = 0; i < 200; i++) {
      const path = pick([
        '/',
        '/sign-in',
        '/cli/device',
        '/projects',
        `/projects/${encodeURIComponent(text(6))}/errors/${encodeURIComponent(text(4))}`,
        asset,
        `/console/assets/${encodeURIComponent(text(10))}`,
        '/console/assets/..%2F..%2Fpackage.json',
        `/projects/${SLUG}/${'x/'.repeat(50)}`,
      ]);
      const method = pick(['GET', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS']);
      const headers: Record<string, string> = {};
      if (rnd() < 0.5) headers['accept-encoding'] = pick(['gzip', 'br', 'identity', 'gzip;q=0', text(8).replace(/[^\x20-\x7e]/g, 'a')]);
      if (rnd() < 0.3) headers['if-none-match'] = pick(['*', '"x"', text(5).replace(/[^\x20-\x7e]/g, 'a')]);
      if (rnd() < 0.3) headers.range = pick(['bytes=0-10', 'bytes=-1', 'bytes=abc']);
      const body = method === 'GET' || method === 'HEAD' ? undefined : text(Math.floor(rnd() * 200));
      const res = await fetch(`${svc.base}${path}${rnd() < 0.3 ? `?${encodeURIComponent(text(10))}` : ''}`, {
        method,
        headers,
        body,
        signal: AbortSignal.timeout(5_000),
      });
      expect(res.status, `${method} ${path}`).toBeLessThan(500);
      await res.arrayBuffer();
    }
    expect((await fetch(`${svc.base}/v1/`)).status).toBe(200);
    expect((await fetch(`${svc.base}${asset}`)).status).toBe(200);
  });

  it('is usable on a narrow screen, and every control has a label', async () => {
    const narrow = await context.newPage();
    await narrow.setViewportSize({ width: 390, height: 844 });
    for (const p of [
      '/projects',
      `/projects/${SLUG}`,
      `/projects/${SLUG}/errors?status=resolved`,
      `/projects/${SLUG}/settings`,
      `/projects/${SLUG}/keys`,
      `/projects/${SLUG}/webhooks`,
      `/projects/${SLUG}/deploys`,
      `/projects/${SLUG}/analytics`,
      `/projects/${SLUG}/flags`,
      `/projects/${SLUG}/integrations`,
      `/projects/${SLUG}/uptime`,
    ]) {
      await narrow.goto(`${svc.base}${p}`);
      await narrow.waitForSelector('h1');
      await narrow.waitForLoadState('networkidle');
      const layout = await narrow.evaluate(() => {
        const unlabelled = [...document.querySelectorAll('input, select, textarea, button')].filter((el) => {
          const e = el as HTMLInputElement;
          return !(e.labels?.length || e.getAttribute('aria-label') || (e.tagName === 'BUTTON' && e.textContent?.trim()));
        });
        return { overflow: document.documentElement.scrollWidth - innerWidth, unlabelled: unlabelled.map((e) => e.outerHTML.slice(0, 80)) };
      });
      expect(layout, p).toEqual({ overflow: 0, unlabelled: [] });
    }
    // Sign out ends the session: the next page asks to sign in.
    await narrow.getByRole('button', { name: 'Sign out' }).click();
    await narrow.getByRole('button', { name: 'Sign in' }).waitFor();
    await narrow.close();
  });
});
