import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysRepository } from '../../api/keys/keys-repository.ts';
import { loadConfig } from '../../platform/config.ts';
import { createLogger } from '../../platform/logger.ts';
import { ingestDsn } from '../../platform/sentry-dsn.ts';
import { start, type Running } from '../../service/service.ts';
import { createForwarder } from '../../sdk/node/forwarder.ts';
import { addLiveSite, createIngestProject, projectNumberOf, type IngestProject } from '../support/ingest-fixtures.ts';

/**
 * The browser clients in a real browser (Debian's chromium, driven by playwright-core) against `npm start`'s single
 * process: a site the platform serves loads cx.js from the service, throws, rejects promises, calls the manual API
 * and navigates away; every event arrives through the site's same-origin path, grouped, with its fields, none lost
 * on pagehide; a 429 makes the client wait for Retry-After. Then the same site with the real @sentry/browser
 * pointed at a DSN of the project's key.
 */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

let dataDir: string;
let running: Running;
let browser: Browser;
let project: IngestProject;
let apiKey: string;
let base: string;
let site: string;

const page = (cxSrc: string) => `<!doctype html><html><head><meta charset="utf-8"><title>shop</title><script src="${cxSrc}"></script></head><body><h1>Shop</h1>
<script>
  function renderCart(cart) { return cart.items.length; }
  setTimeout(function () { renderCart(undefined); }, 0);
  Promise.reject(new Error('payment promise rejected'));
  Promise.reject('a plain string reason');
  window.cx.errors.captureException(new RangeError('coupon 7 out of range'), { path: '/checkout/coupon', extra: { couponId: 7 } });
  window.cx.errors.captureMessage('checkout opened', { extra: { step: 1 } });
  for (var i = 0; i < 5; i++) window.cx.errors.captureMessage('burst repeated');
</script></body></html>`;

async function issue(groupId: string): Promise<any> {
  return (await api(`/errors/${groupId}`)).issue;
}

async function api<T = any>(p: string): Promise<T> {
  const res = await fetch(`${base}/v1/projects/${project.slug}${p}`, { headers: { authorization: `Bearer ${apiKey}` } });
  expect(res.status, p).toBe(200);
  return res.json() as Promise<T>;
}

async function issues(): Promise<Array<{ groupId: string; name: string; message: string; count: number; envCounts: Record<string, number> }>> {
  return (await api('/errors?status=unresolved&limit=100')).data;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function newPage(): Promise<Page> {
  const context = await browser.newContext();
  return context.newPage();
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'e2e-browser-'));
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent', SETTINGS_REFRESH_MS: '250' });
  running = await start('all', config, createLogger('silent', 'e2e'));
  base = `http://localhost:${running.port}`;
  project = await createIngestProject(running.platform, { productionDomains: ['*.localhost'] });
  apiKey = (
    await keysRepository.createKey(running.platform.db, {
      projectId: project.projectId,
      kind: 'live',
      scopes: ['errors:read', 'analytics:read'],
      now: Date.now(),
    })
  ).token;
  const flag = {
    key: 'new-checkout',
    description: '',
    enabled: true,
    rolloutPercentage: 100,
    variants: [{ key: 'green', weight: 100 }],
    conditions: [{ environments: ['production'] }],
  };
  await running.platform.db.query(`INSERT INTO feature_flags (id, project_id, key, definition) VALUES ('flg_browser', $1, 'new-checkout', $2::jsonb)`, [
    project.projectId,
    JSON.stringify(flag),
  ]);

  // The site: a page with cx.js, a second page to navigate to, and one with the real @sentry/browser.
  const artifact = path.join(dataDir, 'site');
  await mkdir(artifact, { recursive: true });
  const manifest = await (await fetch(`${base}/v1/w/manifest.json`)).json();
  await writeFile(path.join(artifact, 'index.html'), page(`${base}${manifest.files['cx.js']}`));
  await writeFile(path.join(artifact, 'next.html'), '<!doctype html><title>next</title><p>next page</p>');
  await writeFile(path.join(artifact, 'quiet.html'), `<!doctype html><title>quiet</title><script src="${base}/v1/w/cx.js"></script>`);
  // Two bundles given debug ids by the real `sentry-cli sourcemaps inject` (its `_sentryDebugIds` snippet), for cx.js.
  await mkdir(path.join(artifact, 'assets'));
  await writeFile(
    path.join(artifact, 'assets', 'app-3f9a2c1b.js'),
    'function checkout(cart){return cart.items.length}window.runCheckout=function(){checkout(undefined)};\n',
  );
  await writeFile(path.join(artifact, 'assets', 'vendor-8e1d7f0a.js'), 'window.vendorReady=true;\n');
  execFileSync(path.join(process.cwd(), 'node_modules', '.bin', 'sentry-cli'), ['sourcemaps', 'inject', path.join(artifact, 'assets')], { stdio: 'ignore' });
  await writeFile(
    path.join(artifact, 'debug-ids.html'),
    `<!doctype html><title>debug ids</title><script src="${base}/v1/w/cx.js"></script><script src="/assets/vendor-8e1d7f0a.js"></script><script src="/assets/app-3f9a2c1b.js"></script>`,
  );
  const sentryBundle = await build({
    stdin: { contents: "import * as Sentry from '@sentry/browser'; window.Sentry = Sentry;", resolveDir: process.cwd() },
    bundle: true,
    format: 'iife',
    write: false,
    logLevel: 'silent',
  });
  await writeFile(path.join(artifact, 'sentry.js'), sentryBundle.outputFiles[0]!.contents);
  const dsn = ingestDsn(project.ingestKey, await projectNumberOf(running.platform, project.projectId), base);
  await writeFile(
    path.join(artifact, 'sentry.html'),
    `<!doctype html><title>sentry</title><script src="/sentry.js"></script><script>
      Sentry.init({ dsn: ${JSON.stringify(dsn)}, release: 'feedc0de1234', tracesSampleRate: 0 });
      function loadProfile() { throw new SyntaxError('profile json is broken'); }
      setTimeout(function () { loadProfile(); }, 0);
      Sentry.captureMessage('sentry browser says hi');
      Sentry.captureException(new Error('database unreachable'), { extra: { url: 'postgres://admin:hunter2secret@db.internal/app' } });
    </script>`,
  );
  // Breadcrumbs (issue 40): a click, a navigation, console and a fetch, then a throw.
  await writeFile(
    path.join(artifact, 'crumbs.html'),
    `<!doctype html><title>crumbs</title><script src="${base}/v1/w/cx.js"></script>
    <div id="cart"><input id="card" value="4242 typed s3cr3t"><button id="buy" class="primary large">Buy now</button></div>
    <script>
      document.getElementById('buy').addEventListener('click', function () {
        history.pushState({}, '', '/cart?coupon=s3cr3t');
        console.warn('cart is slow');
        fetch('/next.html?token=s3cr3t').then(function (r) { return r.text(); }).then(function () {
          setTimeout(function () { throw new Error('checkout broke after breadcrumbs'); }, 0);
        });
      });
    </script>`,
  );
  // Sessions (issue 40): @cx/browser's init({ sessions: true }), bundled as an app would; ?crash throws unhandled.
  const cxBrowser = await build({
    stdin: { contents: "import { init } from './sdk/browser/src/index.ts'; window.CxBrowser = { init };", resolveDir: process.cwd() },
    bundle: true,
    format: 'iife',
    write: false,
    logLevel: 'silent',
  });
  await writeFile(path.join(artifact, 'cx-browser.js'), cxBrowser.outputFiles[0]!.contents);
  await writeFile(
    path.join(artifact, 'sessions.html'),
    `<!doctype html><title>sessions</title><script src="/cx-browser.js"></script><script>
      window.cx = CxBrowser.init({ sessions: true });
      if (location.search.indexOf('crash') >= 0) setTimeout(function () { throw new Error('the session crashes'); }, 0);
    </script>`,
  );
  // Sessions with the served cx.js (issue 40): its add-on cx-sessions.js after it; ?crash throws unhandled, ?byhand reports.
  await writeFile(
    path.join(artifact, 'cx-sessions.html'),
    `<!doctype html><title>cx.js sessions</title><script src="${base}/v1/w/cx.js"></script><script src="${base}/v1/w/cx-sessions.js"></script><script>
      if (location.search.indexOf('crash') >= 0) setTimeout(function () { throw new Error('the cx.js session crashes'); }, 0);
      if (location.search.indexOf('byhand') >= 0) window.cx.errors.captureMessage('the cx.js session errs by hand');
    </script>`,
  );
  await addLiveSite(running.platform, project.projectId, artifact);
  site = `http://${project.slug}.localhost:${running.port}`;
  // The edge's settings cache holds the new key.
  await new Promise((r) => setTimeout(r, 1_000));
  // Playwright gives every launch a fresh, empty profile of its own.
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  await running?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

describe("cx.js in Chromium, through the site's same-origin path", () => {
  it('delivers window errors, rejections and manual calls, none lost on pagehide, grouped with their fields', async () => {
    const tab = await newPage();
    await tab.goto(`${site}/`);
    // Leave at once: 7 events are queued (under the 10 that send at once) and the 2 s timer has not fired, so only
    // pagehide can send them. (Playwright does not report keepalive requests sent while a page unloads.)
    await tab.waitForFunction(() => (window as any).cx?.errors);
    await tab.goto(`${site}/next.html`);

    const expected = ['renderCart', 'payment promise rejected', 'a plain string reason', 'coupon 7 out of range', 'checkout opened', 'burst repeated'];
    const list = await until('every event', async () => {
      const l = await issues();
      return expected.every((m) => l.some((i) => i.message.includes(m) || (m === 'renderCart' && i.name === 'TypeError'))) ? l : undefined;
    });
    const byMessage = (m: string) => list.find((i) => i.message.includes(m))!;
    expect(list.find((i) => i.name === 'TypeError')!.envCounts).toEqual({ production: 1 });
    expect(byMessage('burst repeated').count).toBe(1);

    const typeError = await issue(list.find((i) => i.name === 'TypeError')!.groupId);
    expect(typeError.stack).toContain('renderCart');
    expect(typeError.culprit).toContain('renderCart');
    const coupon = await issue(byMessage('coupon 7 out of range').groupId);
    expect(coupon.name).toBe('RangeError');
    expect(coupon.samples[0]).toMatchObject({ path: '/checkout/coupon', runtime: 'browser', extra: { couponId: 7 } });
    const burst = await issue(byMessage('burst repeated').groupId);
    expect(burst.samples[0].extra).toMatchObject({ cxRepeats: 5 });
    expect(burst.samples[0].path).toBe('/');
    const plain = byMessage('a plain string reason');
    expect(plain.name).toBe('Error');
    await tab.context().close();
  });

  it('waits for Retry-After after a 429, then delivers', async () => {
    const tab = await newPage();
    const times: number[] = [];
    await tab.route('**/service/v1/errors/i', async (route) => {
      times.push(Date.now());
      if (times.length === 1)
        return route.fulfill({
          status: 429,
          headers: { 'retry-after': '2', 'content-type': 'application/json' },
          body: '{"error":"rate_limited","message":"slow down"}',
        });
      return route.continue();
    });
    await tab.goto(`${site}/quiet.html`);
    await tab.evaluate(() => {
      (window as any).cx.errors.captureMessage('after the backoff');
      return (window as any).cx.errors.flush();
    });
    // A flush during the backoff sends nothing.
    await tab.evaluate(() => (window as any).cx.errors.flush());
    expect(times).toHaveLength(1);
    await until('the retry', async () => (times.length >= 2 ? true : undefined), 10_000);
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(1_900);
    await until('the event', async () => ((await issues()).some((i) => i.message === 'after the backoff') ? true : undefined));
    await tab.context().close();
  });
});

describe('cx.js breadcrumbs and @cx/browser sessions in Chromium (issue 40)', () => {
  it('sends the click, navigation, console and fetch before an error with it, stored with the occurrence; no query, value or text', async () => {
    const tab = await newPage();
    await tab.goto(`${site}/crumbs.html`);
    await tab.waitForFunction(() => (window as any).cx?.errors);
    await tab.click('#buy');
    const found = await until('the error', async () => (await issues()).find((i) => i.message === 'checkout broke after breadcrumbs'));
    const sample = (await issue(found.groupId)).samples[0];
    const crumbs = sample.context.breadcrumbs as Array<{ category: string; level?: string; message?: string; data?: Record<string, unknown> }>;
    expect(crumbs.map(({ category, level, message, data }) => ({ category, level, message, data }))).toEqual([
      { category: 'ui.click', level: undefined, message: 'button#buy.primary', data: undefined },
      { category: 'navigation', level: undefined, message: undefined, data: { from: '/crumbs.html', to: '/cart' } },
      { category: 'console', level: 'warning', message: 'cart is slow', data: undefined },
      { category: 'fetch', level: undefined, message: undefined, data: { method: 'GET', url: '/next.html', status_code: 200 } },
    ]);
    const stored = JSON.stringify(sample);
    for (const never of ['s3cr3t', 'Buy now', '4242', 'flags/i']) expect(stored).not.toContain(never);
    await tab.context().close();
  });

  it('sends one session per page load with sessions: true (init, crashed at an unhandled error, then the end), counted for the deploy', async () => {
    const sessionPosts = (tab: Page) => {
      const bodies: Array<{ init: boolean; status: string; errors: number }> = [];
      tab.on('request', (r) => {
        if (r.url().endsWith('/service/v1/sessions/i')) bodies.push(...(JSON.parse(r.postData()!).sessions as typeof bodies));
      });
      return bodies;
    };
    const crashing = await newPage();
    const crashed = sessionPosts(crashing);
    await crashing.goto(`${site}/sessions.html?crash`);
    await until('the crashed update', async () => (crashed.some((u) => u.status === 'crashed') ? true : undefined));
    await crashing.goto(`${site}/next.html`);
    const clean = await newPage();
    const exited = sessionPosts(clean);
    await clean.goto(`${site}/sessions.html`);
    await clean.waitForFunction(() => (window as any).cx?.errors);
    await clean.goto(`${site}/next.html`);
    expect(crashed.slice(0, 2).map((u) => [u.init, u.status, u.errors])).toEqual([
      [true, 'ok', 0],
      [false, 'crashed', 1],
    ]);
    expect(exited[0]).toMatchObject({ init: true, status: 'ok', errors: 0 });

    const totals = await until('both sessions counted', async () => {
      const health = await api<{ deploys: Array<{ totals: { sessions: number; crashed: number; crashFreeSessions: number | null; users: number } }> }>(
        '/release-health',
      );
      const t = health.deploys.find((d) => d.totals.sessions > 0)?.totals;
      return t && t.sessions >= 2 && t.crashed >= 1 ? t : undefined;
    });
    expect(totals).toMatchObject({ sessions: 2, crashed: 1, crashFreeSessions: 0.5, users: 2 });
    await crashing.context().close();
    await clean.context().close();
  });
});

describe('cx.js with its sessions add-on cx-sessions.js in Chromium (issue 40)', () => {
  it('sends one session per page load (crashed at a throw, errored by hand), with the visitor id, counted for the deploy', async () => {
    type Totals = { sessions: number; crashed: number; errored: number; users: number };
    const totals = async (): Promise<Totals> => {
      const health = await api<{ deploys: Array<{ totals: Totals }> }>('/release-health');
      const sum = { sessions: 0, crashed: 0, errored: 0, users: 0 };
      for (const d of health.deploys) for (const k of Object.keys(sum) as Array<keyof Totals>) sum[k] += d.totals[k];
      return sum;
    };
    const before = await totals();
    const sessionPosts = (tab: Page) => {
      const bodies: Array<{ init: boolean; status: string; errors: number; did?: string }> = [];
      tab.on('request', (r) => {
        if (r.url().endsWith('/service/v1/sessions/i')) bodies.push(...(JSON.parse(r.postData()!).sessions as typeof bodies));
      });
      return bodies;
    };
    const crashing = await newPage();
    const crashed = sessionPosts(crashing);
    await crashing.goto(`${site}/cx-sessions.html?crash`);
    await until('the crashed update', async () => (crashed.some((u) => u.status === 'crashed') ? true : undefined));
    const visitor = await crashing.evaluate(() => localStorage.getItem('cx_id'));
    await crashing.goto(`${site}/next.html`);
    const byHand = await newPage();
    const errored = sessionPosts(byHand);
    await byHand.goto(`${site}/cx-sessions.html?byhand`);
    await until('the errored update', async () => (errored.some((u) => u.status === 'errored') ? true : undefined));
    await byHand.goto(`${site}/next.html`);
    expect(crashed.slice(0, 2).map((u) => [u.init, u.status, u.errors])).toEqual([
      [true, 'ok', 0],
      [false, 'crashed', 1],
    ]);
    expect(visitor).toMatch(/^cx_/);
    expect(crashed[0]!.did).toBe(visitor);
    expect(errored.slice(0, 2).map((u) => [u.init, u.status, u.errors])).toEqual([
      [true, 'ok', 0],
      [false, 'errored', 1],
    ]);

    const after = await until('both sessions counted', async () => {
      const t = await totals();
      return t.sessions >= before.sessions + 2 && t.crashed >= before.crashed + 1 && t.errored >= before.errored + 1 ? t : undefined;
    });
    expect(after).toEqual({ sessions: before.sessions + 2, crashed: before.crashed + 1, errored: before.errored + 1, users: before.users + 2 });
    // cx.js itself still delivered the errors.
    await until('the errors', async () => {
      const messages = (await issues()).map((i) => i.message);
      return messages.includes('the cx.js session crashes') && messages.includes('the cx.js session errs by hand') ? true : undefined;
    });
    await crashing.context().close();
    await byHand.context().close();
  });
});

describe('cx.js behind an app hosted elsewhere (issue 23)', () => {
  it("takes the app's own HTML answer as a failure (counted, events kept), and delivers once the app relays with the Node forwarder", async () => {
    // An app of its own: every path answers its HTML page until it mounts the forwarder.
    let relay = false;
    const forward = createForwarder({ ingestKey: project.ingestKey, baseUrl: base });
    const app = http.createServer((req, res) => {
      if (relay && req.url?.startsWith('/service/v1/')) return forward.middleware(req, res);
      res
        .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
        .end(`<!doctype html><title>app</title><script src="${base}/v1/w/cx.js"></script><p>the app</p>`);
    });
    await new Promise<void>((r) => app.listen(0, '127.0.0.1', () => r()));
    const appBase = `http://app.localhost:${(app.address() as { port: number }).port}`;
    try {
      const tab = await newPage();
      await tab.goto(`${appBase}/`);
      await tab.waitForFunction(() => (window as any).cx?.errors);
      await tab.evaluate(() => {
        (window as any).cx.errors.captureMessage('kept while misrouted');
        (window as any).cx.capture('kept_event', { n: 1 });
        return (window as any).cx.flush();
      });
      // The HTML answers were not taken as delivery: each queue (and the flags load) counted one.
      expect(await tab.evaluate(() => (window as any).cx.misrouted)).toBeGreaterThanOrEqual(3);
      expect((await issues()).some((i) => i.message === 'kept while misrouted')).toBe(false);
      // The app mounts the forwarder; cx.js retries after its backoff (5 s) and the kept events arrive.
      relay = true;
      await until('the kept error', async () => ((await issues()).some((i) => i.message === 'kept while misrouted') ? true : undefined), 30_000);
      await until(
        'the kept event',
        async () =>
          (await api<{ data: Array<{ event: string }> }>('/analytics/events?limit=100')).data.some((e) => e.event === 'kept_event') ? true : undefined,
        30_000,
      );
      await tab.context().close();
    } finally {
      await new Promise<void>((r) => app.close(() => r()));
    }
  });
});

describe('cx.js sends the debug ids of the bundles in the stack (issue 37)', () => {
  it('reads the `_sentryDebugIds` that sentry-cli injected and sends the thrown-through bundle only, accepted by the edge', async () => {
    const debugId = async (file: string) => /\/\/# debugId=([0-9a-f-]{36})/.exec(await readFile(path.join(dataDir, 'site', 'assets', file), 'utf8'))![1]!;
    const tab = await newPage();
    const answered = tab.waitForResponse((r) => r.url().endsWith('/service/v1/errors/i'));
    await tab.goto(`${site}/debug-ids.html`);
    await tab.waitForFunction(() => (window as any).cx?.errors && (window as any).vendorReady);
    await tab.evaluate(() => {
      try {
        (window as any).runCheckout();
      } catch (err) {
        (window as any).cx.errors.captureException(err);
      }
      return (window as any).cx.errors.flush();
    });
    const res = await answered;
    expect(res.status()).toBe(202);
    const [event] = JSON.parse(res.request().postData()!).batch as Array<{ debugIds?: Record<string, string>; message: string }>;
    expect(event!.message).toContain("reading 'items'");
    expect(event!.debugIds).toEqual({ [`${site}/assets/app-3f9a2c1b.js`]: await debugId('app-3f9a2c1b.js') });
    await tab.context().close();
  });
});

describe('cx.js analytics and flags in Chromium, through the same-origin path', () => {
  it("loads the visitor's flags (stamped production by the site's host) and captures events, delivered on pagehide", async () => {
    const tab = await newPage();
    await tab.goto(`${site}/quiet.html`);
    const seen = await tab.evaluate(async () => {
      const cx = (window as any).cx;
      await cx.flags.ready();
      const variant = cx.flags.getVariant('new-checkout');
      cx.capture('checkout_viewed', { variant, step: 2 });
      cx.capture('coupon_applied', { code: 'SPRING' });
      return { enabled: cx.flags.isEnabled('new-checkout'), variant, unknown: cx.flags.isEnabled('nope'), visitor: localStorage.getItem('cx_id') };
    });
    expect(seen).toMatchObject({ enabled: true, variant: 'green', unknown: false });
    await tab.goto(`${site}/next.html`);
    const events = await until('the analytics events', async () => {
      const r = await fetch(`${base}/v1/projects/${project.slug}/analytics/events?from=${Date.now() - 3_600_000}&to=${Date.now() + 60_000}`, {
        headers: { authorization: `Bearer ${apiKey}` },
      });
      const data = (await r.json()).data as Array<{ event: string; distinctId: string; properties: Record<string, string>; environment: string; path: string }>;
      return data?.some((e) => e.event === 'checkout_viewed') ? data : undefined;
    });
    const viewed = events.find((e) => e.event === 'checkout_viewed')!;
    expect(viewed).toMatchObject({ distinctId: seen.visitor, properties: { variant: 'green', step: '2' }, environment: 'production', path: '/quiet.html' });
    await tab.context().close();
  });
});

describe('the real @sentry/browser in Chromium, through a DSN', () => {
  it('delivers a thrown error and a message to the envelope endpoint, as our events', async () => {
    const tab = await newPage();
    await tab.goto(`${site}/sentry.html`);
    await tab.waitForFunction(() => (window as any).Sentry);
    await tab.evaluate(() => (window as any).Sentry.flush(5000));
    const list = await until('the Sentry events', async () => {
      const l = await issues();
      return ['profile json is broken', 'sentry browser says hi', 'database unreachable'].every((m) => l.some((i) => i.message === m)) ? l : undefined;
    });
    // Scrubbed before storage, as every error event is.
    const scrubbed = await issue(list.find((i) => i.message === 'database unreachable')!.groupId);
    expect(JSON.stringify(scrubbed)).not.toContain('hunter2secret');
    expect(scrubbed.samples[0].extra.url).toContain('postgres://');
    const thrown = await issue(list.find((i) => i.message === 'profile json is broken')!.groupId);
    expect(thrown.name).toBe('SyntaxError');
    expect(thrown.culprit).toContain('loadProfile');
    expect(thrown.samples[0]).toMatchObject({ runtime: 'browser', path: '/sentry.html', gitSha: 'feedc0de1234' });
    // A message's culprit is the page's call, not the SDK (its frames are library frames: schemas/known-sdk-files.ts).
    const message = await issue(list.find((i) => i.message === 'sentry browser says hi')!.groupId);
    expect(message.culprit).toContain('sentry.html');
    await tab.context().close();
  });
});
