/**
 * Screenshots of the console's main screens (issue 17), for people to look at: `npm run screenshots` starts the whole
 * service as `npm start` runs it on a fresh data dir, fills a project the way users would (errors through the edge
 * from a production and a preview host, a regression, a webhook with deliveries, a deploy from a hook, a connected
 * repository and Stripe account, an inbox with mail, uptime monitors up and down, an issue whose frames source maps
 * resolved, written as the processor stores it), and writes PNGs
 * to docs/screenshots/ (1280x800, and the issue list at 390 px wide). Loopback only.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import nodemailer from 'nodemailer';
import { startHttpsReceiver } from '../support/https-receiver.ts';
import { resendRequest } from '../support/resend.ts';
import { startStripeStandin } from '../support/stripe-standin.ts';
import { startGithubStandin } from '../support/github-standin.ts';
import { launchChromium, OWNER, sendErrors, startConsoleService } from './support/console-service.ts';
import { shootSourceMapScreens } from './support/source-map-screens.ts';

/** docs/screenshots/, or SCREENSHOTS_DIR (to look at a change without touching the committed pictures). */
const OUT = process.env.SCREENSHOTS_DIR ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs', 'screenshots');
const SLUG = 'storefront';

function git(cwd: string, ...args: string[]) {
  return execFileSync('git', ['-c', 'user.email=dev@example.com', '-c', 'user.name=dev', ...args], { cwd, encoding: 'utf8' }).trim();
}

const frame = (fn: string, file: string, line: number) => `    at ${fn} (${file}:${line}:${(line * 7) % 40})`;
const browserError = (name: string, message: string, frames: string[], extra: Record<string, unknown>, p: string) => ({
  name,
  message,
  stack: [`${name}: ${message}`, ...frames].join('\n'),
  path: p,
  runtime: 'browser',
  extra,
});

async function main() {
  await mkdir(OUT, { recursive: true });
  const receiver = await startHttpsReceiver();
  const gh = await startGithubStandin();
  const stripe = await startStripeStandin();
  const acme = { id: 7001, account: 'acme', repos: [{ id: 7002, fullName: 'acme/storefront', private: true }] };
  gh.installations.set(acme.id, acme);
  gh.access.set('octocat', new Set([acme.id]));
  const resendSecret = `whsec_${Buffer.from('screenshots-resend-secret-32byte').toString('base64')}`;
  const svc = await startConsoleService({
    webhookCa: `${receiver.cert}${gh.cert}${stripe.cert}`,
    hosts: { 'github.com': '140.82.112.3' }, // checked, never dialled
    env: {
      RESEND_WEBHOOK_SECRETS: resendSecret,
      INBOUND_EMAIL_DOMAIN: 'mail.example.com',
      ...gh.env,
      ...stripe.env,
    },
  });
  const base = svc.base;
  try {
    const signIn = await fetch(`${base}/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OWNER) });
    const cookie = signIn.headers
      .getSetCookie()
      .map((c) => c.split(';')[0]!)
      .find((c) => c.startsWith('cx_session='))!;
    const session = { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' };
    const call = async (method: string, p: string, body?: unknown) => {
      const res = await fetch(`${base}/v1${p}`, { method, headers: session, body: method === 'GET' ? undefined : JSON.stringify(body ?? {}) });
      const text = await res.text();
      if (res.status >= 400) throw new Error(`${method} ${p}: ${res.status} ${text}`);
      return text ? JSON.parse(text) : null;
    };
    await call('POST', '/projects', {
      name: 'Storefront',
      slug: SLUG,
      environmentHosts: { production: ['shop.example.com'], preview: ['*.preview.shop.example.com'] },
    });
    const ingestCreated = (await call('POST', `/projects/${SLUG}/keys`, { kind: 'ingest', name: 'web app' })).key;
    const ingestKey = ingestCreated.token as string;
    const dsn = new URL(ingestCreated.dsn as string);
    await call('POST', `/projects/${SLUG}/keys`, { kind: 'live', name: 'CI reader', scopes: ['errors:read', 'deploys:read'] });

    const PROD_ORIGIN = 'https://shop.example.com';
    const send = (events: Array<Record<string, unknown>>, origin: string) => sendErrors(base, ingestKey, events, { origin });
    const cart = browserError(
      'TypeError',
      "Cannot read properties of undefined (reading 'items')",
      [
        frame('renderCart', 'https://shop.example.com/assets/cart.js', 41),
        frame('updateQuantity', 'https://shop.example.com/assets/cart.js', 88),
        frame('commitRoot', 'https://shop.example.com/assets/node_modules/react-dom/cjs/react-dom.production.js', 3120),
        frame('flushSync', 'https://shop.example.com/assets/node_modules/react-dom/cjs/react-dom.production.js', 2211),
      ],
      { cartId: 'c_81', items: 0 },
      '/cart',
    );
    const coupon = browserError(
      'RangeError',
      'coupon 7 is out of range',
      [frame('applyCoupon', 'https://shop.example.com/assets/checkout.js', 17), frame('onSubmit', 'https://shop.example.com/assets/checkout.js', 203)],
      { coupon: 'SPRING7' },
      '/checkout',
    );
    const img = browserError(
      'Error',
      'image failed to load: hero-2.webp',
      [frame('HTMLImageElement.onerror', 'https://shop.example.com/assets/gallery.js', 9)],
      {},
      '/',
    );
    const fetchErr = browserError(
      'TypeError',
      'Failed to fetch',
      [
        frame('fetchJson', 'https://shop.example.com/assets/api.js', 12),
        frame('loadRecommendations', 'https://shop.example.com/assets/home.js', 55),
        frame('async Promise.all', 'native', 1),
      ],
      { endpoint: '/api/recommendations' },
      '/',
    );
    const ref = browserError(
      'ReferenceError',
      'analytics is not defined',
      [frame('trackView', 'https://shop.example.com/assets/track.js', 3)],
      {},
      '/product/42',
    );
    await send([...Array(14).fill(cart), ...Array(6).fill(coupon), ...Array(3).fill(img), ...Array(9).fill(fetchErr), ref], PROD_ORIGIN);
    await send([cart, cart, coupon], 'https://pr-12.preview.shop.example.com');
    await new Promise((r) => setTimeout(r, 1500));
    // A regression: resolve the image error, then it happens again.
    const list = (await call('GET', `/projects/${SLUG}/errors?limit=100`)).data as Array<{ groupId: string; name: string; message: string }>;
    const imgId = list.find((i) => i.message.startsWith('image failed'))!.groupId;
    await call('POST', `/projects/${SLUG}/errors/${imgId}/resolve`);
    await send([img], PROD_ORIGIN);
    const refId = list.find((i) => i.name === 'ReferenceError')!.groupId;
    await call('POST', `/projects/${SLUG}/errors/${refId}/ignore`);

    // Webhooks: an endpoint with a success and a failure in its log.
    const ep = (await call('POST', `/projects/${SLUG}/webhooks`, { url: receiver.url, events: ['deploy.*', 'webhook.test'], description: 'Slack relay' }))
      .endpoint;
    await call('POST', `/projects/${SLUG}/webhooks/test`);
    await receiver.waitFor(1);
    receiver.respond = () => ({ status: 503 });
    await call('POST', `/projects/${SLUG}/webhooks/test`);
    await receiver.waitFor(2);

    // Deploys: a repository, a hook, a deploy from it.
    const repo = await mkdtemp(path.join(os.tmpdir(), 'shots-repo-'));
    git(repo, 'init', '-q', '-b', 'main');
    await writeFile(
      path.join(repo, 'build.sh'),
      'echo "> storefront@1.4.0 build"; echo "vite v7 building for production..."; sleep 1; echo "transforming (212) src/main.tsx"; mkdir -p dist; echo "<h1>Storefront</h1>" > dist/index.html; echo "dist/index.html  0.46 kB"; echo "built in 1.32s"',
    );
    git(repo, 'add', '.');
    git(repo, 'commit', '-q', '-m', 'Storefront');
    await call('PATCH', `/projects/${SLUG}/deploys/settings`, { repoUrl: repo, buildCommand: 'sh build.sh', outputDir: 'dist' });
    const hook = (await call('POST', `/projects/${SLUG}/deploys/hooks`, { name: 'GitHub main', branch: 'main' })).hook;
    const { deployId } = (await (await fetch(`${base}/v1/hooks/${hook.token}`, { method: 'POST' })).json()) as { deployId: string };
    for (let i = 0; i < 100; i++) {
      const d = (await call('GET', `/projects/${SLUG}/deploys/${deployId}`)).deploy;
      if (d.status === 'ready' || d.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 200));
    }
    await receiver.waitFor(3).catch(() => undefined);

    // Release health of the live deploy (issue 40): 24 hours of page-load sessions, a few of them crashed.
    const hourMs = 3_600_000;
    const sessions = Array.from({ length: 400 }, (_, i) => {
      const started = Date.now() - Math.floor((((i * 7919) % 1000) / 1000) * 23 * hourMs) - 60_000;
      const crashed = ((i * 7919) % 1000) % 23 === 5;
      return {
        sid: `s-${i}`,
        did: `user-${(i * 13) % 97}`,
        init: true,
        status: crashed ? 'crashed' : 'exited',
        errors: crashed ? 1 : 0,
        started,
        timestamp: started + 30_000,
        release: deployId,
      };
    });
    for (let i = 0; i < sessions.length; i += 100) {
      await fetch(`${base}/v1/sessions/i`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ingestKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ sessions: sessions.slice(i, i + 100) }),
      });
    }
    // A cron job that checks in by Sentry's HTTP form, and one whose run failed.
    const cron = (slug: string, status: string, config?: unknown) =>
      fetch(`${base}/api${dsn.pathname}/cron/${slug}/${dsn.username}/?status=${status}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(config ? { status, monitor_config: config } : { status }),
      });
    await cron('nightly-backup', 'ok', { schedule: { type: 'crontab', value: '0 3 * * *' }, checkin_margin: 5, max_runtime: 30 });
    await cron('invoice-sync', 'error', { schedule: { type: 'interval', value: 15, unit: 'minute' } });

    // Analytics over the last week (client times are trusted back to 7 days), and two flags.
    const names = ['page_view', 'page_view', 'page_view', 'add_to_cart', 'checkout_started', 'signup'];
    const now = Date.now();
    const analytics = Array.from({ length: 600 }, (_, i) => ({
      event: names[i % names.length],
      distinctId: `user-${(i * 7) % 83}`,
      timestamp: new Date(now - Math.floor((((i * 7919) % 1000) / 1000) * 6.5 * 86400_000 * (0.6 + 0.4 * ((i % 5) / 5)))).toISOString(),
      path: ['/', '/product/42', '/cart', '/checkout'][i % 4],
      properties: { plan: i % 3 ? 'free' : 'pro' },
    }));
    for (let i = 0; i < analytics.length; i += 100) {
      await fetch(`${base}/v1/analytics/i`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ingestKey}`, 'content-type': 'application/json', origin: PROD_ORIGIN },
        body: JSON.stringify({ batch: analytics.slice(i, i + 100) }),
      });
    }
    await call('POST', `/projects/${SLUG}/flags`, {
      key: 'new-checkout',
      description: 'One-page checkout',
      enabled: true,
      rolloutPercentage: 30,
      variants: [
        { key: 'green', weight: 50 },
        { key: 'blue', weight: 50 },
      ],
      conditions: [{ environments: ['production'] }],
    });
    await call('POST', `/projects/${SLUG}/flags`, { key: 'gift-cards', description: 'Gift card purchase flow', enabled: false, rolloutPercentage: 100 });
    // Uptime: a monitor that is up and one whose target answers 500 (down at its first failure, an incident open).
    receiver.respond = (r) => (r.path === '/payments/health' ? { status: 500, body: 'oops' } : { status: 200 });
    await call('POST', `/projects/${SLUG}/uptime`, { name: 'Storefront', url: receiver.url, intervalSec: 30, public: true });
    await call('POST', `/projects/${SLUG}/uptime`, {
      name: 'Payments API',
      url: receiver.url.replace(/\/hook$/, '/payments/health'),
      public: true,
      failuresToDown: 1,
    });
    // Integrations: a repository, a Stripe account, an inbox with mail (one message unsigned).
    // The GitHub App's flow, as the browser would go through it (GitHub's side is the stand-in).
    const { authorizeUrl } = await call('POST', '/integrations/github', { project: SLUG, repository: 'acme/storefront' });
    const state = new URL(authorizeUrl).searchParams.get('state')!;
    await fetch(`${base}/v1/integrations/github/callback?code=${gh.codeFor('octocat')}&state=${state}`, { headers: { cookie }, redirect: 'manual' });
    // Stripe Connect's flow the same way (Stripe's side is the stand-in).
    const connect = new URL((await call('POST', `/projects/${SLUG}/payments/connect`)).url).searchParams.get('state')!;
    await fetch(`${base}/v1/payments/connect/callback?code=${stripe.codeFor('acct_1Storefront')}&state=${connect}`, {
      headers: { cookie },
      redirect: 'manual',
    });
    const inbox = (await call('POST', `/projects/${SLUG}/email/inboxes`, { localPart: 'support', webhookUrl: receiver.url })).inbox;
    const mails: Array<[string, string, string]> = [
      ['Grace Hopper <grace@customer.example>', 'Where is my order #1042?', 'Hello, my order has not arrived yet.'],
      ['billing@vendor.example', 'Invoice for November', 'Please find the invoice attached.'],
    ];
    for (const [from, subject, text] of mails) {
      const raw = (
        await nodemailer
          .createTransport({ streamTransport: true, buffer: true })
          .sendMail({ from, to: inbox.address, subject, text, attachments: subject.startsWith('Invoice') ? [{ filename: 'invoice.pdf', content: 'x' }] : [] })
      ).message as Buffer;
      const r = resendRequest(resendSecret, 'email.received', { to: [inbox.address], raw: raw.toString('base64') });
      await fetch(`${base}/v1/webhooks/email`, { method: 'POST', headers: r.headers, body: r.body });
    }
    await new Promise((r) => setTimeout(r, 1500));

    const browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, colorScheme: 'light' });
    const page = await context.newPage();
    const shot = async (name: string, p: string, ready: string, opts: { fullPage?: boolean } = {}) => {
      await page.goto(`${base}${p}`);
      await page.waitForSelector(ready);
      await page.waitForTimeout(300);
      await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage: opts.fullPage });
      process.stderr.write(`wrote ${name}.png\n`);
    };
    await page.goto(`${base}/projects`);
    await page.getByLabel('Email').fill(OWNER.email);
    await page.getByLabel('Password').fill(OWNER.password);
    await page.screenshot({ path: path.join(OUT, 'sign-in.png') });
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Projects' }).waitFor();
    await shot('projects', '/projects', '.cards');
    await shot('overview', `/projects/${SLUG}`, '.tiles');
    await shot('issues', `/projects/${SLUG}/errors`, '.issue-row');
    await page.keyboard.press('j');
    await page.keyboard.press('x');
    await page.keyboard.press('j');
    await page.keyboard.press('x');
    await page.waitForTimeout(200);
    await page.screenshot({ path: path.join(OUT, 'issues-selected.png') });
    const cartId = list.find((i) => i.message.includes("'items'"))!.groupId;
    await shot('issue', `/projects/${SLUG}/errors/${cartId}`, '.stack-view', { fullPage: true });
    // Alert recipients, one of which the mail provider reported as bounced (Resend's email.bounced).
    await call('PATCH', `/projects/${SLUG}/error-alerts`, { recipients: ['oncall@shop.example', 'ops@shop.example'] });
    await svc.running.platform.db.query(
      `INSERT INTO mail_suppressions (email, reason, at) VALUES ('ops@shop.example', 'bounced', now()) ON CONFLICT DO NOTHING`,
      [],
    );
    await shot('settings', `/projects/${SLUG}/settings`, '#alerts-h', { fullPage: true });
    await page.goto(`${base}/projects/${SLUG}/keys`);
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.getByRole('region', { name: /New ingest key/ }).waitFor();
    await page.screenshot({ path: path.join(OUT, 'keys-created.png'), fullPage: true });
    await shot('webhook', `/projects/${SLUG}/webhooks/${ep.id}`, 'table.deliveries');
    await shot('deploys', `/projects/${SLUG}/deploys`, 'table');
    await shot('deploy-log', `/projects/${SLUG}/deploys/${deployId}`, '.log-line');
    await shot('analytics', `/projects/${SLUG}/analytics`, '.chart');
    await shot('flags', `/projects/${SLUG}/flags`, '.card.flag');
    await shot('uptime', `/projects/${SLUG}/uptime`, 'table', { fullPage: true });
    await page.goto(`${base}/projects/${SLUG}/integrations`);
    await page.getByRole('button', { name: 'Messages' }).click();
    await page
      .getByRole('table', { name: /Recent mail/ })
      .locator('tbody tr')
      .nth(1)
      .waitFor();
    await page.screenshot({ path: path.join(OUT, 'integrations.png'), fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await shot('issues-narrow', `/projects/${SLUG}/errors`, '.issue-row', { fullPage: true });
    // Source maps (issue 37): an issue as the processor stores it once maps resolved its frames, and the deploy's maps.
    await page.setViewportSize({ width: 1280, height: 800 });
    const projectId = (await call('GET', `/projects/${SLUG}`)).project.id as string;
    for (const f of await shootSourceMapScreens({ page, base, db: svc.running.platform.db, projectId, slug: SLUG, out: OUT }))
      process.stderr.write(`wrote ${path.basename(f)}\n`);
    await browser.close();
  } finally {
    await svc.running.stop();
    await receiver.close();
    await gh.close();
    await stripe.close();
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
