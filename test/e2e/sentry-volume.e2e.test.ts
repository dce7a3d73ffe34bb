import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
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
import { addLiveSite, createIngestProject, projectNumberOf, type IngestProject } from '../support/ingest-fixtures.ts';

/**
 * Issue 40's volume test: the real @sentry/browser, session tracking on (its default), in Chromium against `npm start`'s
 * single process, on one ingest key from one address. PAGE_LOADS page loads of a site the platform serves, as fast as
 * TABS tabs can load them (well above 300 a minute here), each a fresh SDK that sends its session; every
 * CRASH_EVERY-th load throws an unhandled error (an error event, and the session marked crashed). Before issue 40 each
 * session envelope spent the error budget (200 a minute per key) and the errors after it got 429: here every error is
 * stored, every session counted, and the deploy's crash-free sessions and users are exactly right.
 */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-sync'];
const PAGE_LOADS = 600;
const TABS = 4;
const CRASH_EVERY = 20;
const USERS = 40;

let dataDir: string;
let running: Running;
let browser: Browser;
let project: IngestProject;
let apiKey: string;
let base: string;
let site: string;
let deployId: string;

async function api<T = any>(p: string): Promise<T> {
  const res = await fetch(`${base}/v1/projects/${project.slug}${p}`, { headers: { authorization: `Bearer ${apiKey}` } });
  expect(res.status, p).toBe(200);
  return res.json() as Promise<T>;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'e2e-sentry-volume-'));
  const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'silent', SETTINGS_REFRESH_MS: '250' });
  running = await start('all', config, createLogger('silent', 'e2e'), { testing: { uptime: false, quietFirstStart: true } });
  base = `http://localhost:${running.port}`;
  project = await createIngestProject(running.platform, { productionDomains: ['*.localhost'] });
  apiKey = (await keysRepository.createKey(running.platform.db, { projectId: project.projectId, kind: 'live', scopes: ['errors:read'], now: Date.now() }))
    .token;

  const artifact = path.join(dataDir, 'site');
  await mkdir(artifact, { recursive: true });
  ({ deployId } = await addLiveSite(running.platform, project.projectId, artifact));
  const bundle = await build({
    stdin: { contents: "import * as Sentry from '@sentry/browser'; window.Sentry = Sentry;", resolveDir: process.cwd() },
    bundle: true,
    format: 'iife',
    write: false,
    logLevel: 'silent',
  });
  await writeFile(path.join(artifact, 'sentry.js'), bundle.outputFiles[0]!.contents);
  const dsn = ingestDsn(project.ingestKey, await projectNumberOf(running.platform, project.projectId), base);
  // ?n=<load>&u=<user>: the user is set before init so the session carries it (`did`); every CRASH_EVERY-th load throws.
  await writeFile(
    path.join(artifact, 'index.html'),
    `<!doctype html><title>shop</title><script src="/sentry.js"></script><script>
      var q = new URLSearchParams(location.search);
      Sentry.init({ dsn: ${JSON.stringify(dsn)}, release: ${JSON.stringify(deployId)}, tracesSampleRate: 0, initialScope: { user: { id: 'user-' + q.get('u') } } });
      window.loaded = true;
      if (q.get('crash') === '1') setTimeout(function () { checkout(null); }, 0);
      function checkout(cart) { return cart.items.length; }
    </script>`,
  );
  site = `http://${project.slug}.localhost:${running.port}`;
  await new Promise((r) => setTimeout(r, 1_000));
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await running?.stop();
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
});

const crashes = (n: number) => n % CRASH_EVERY === CRASH_EVERY - 1;

describe('the real @sentry/browser at volume, sessions on', () => {
  it(`stores every error of ${PAGE_LOADS} page loads on one key and counts every session`, async () => {
    const tabs: Page[] = await Promise.all(Array.from({ length: TABS }, async () => (await browser.newContext()).newPage()));
    const statuses = new Map<number, number>();
    for (const tab of tabs)
      tab.on('response', (r) => {
        if (r.url().includes('/envelope/')) statuses.set(r.status(), (statuses.get(r.status()) ?? 0) + 1);
      });
    let next = 0;
    const startedAt = Date.now();
    await Promise.all(
      tabs.map(async (tab) => {
        for (let n = next++; n < PAGE_LOADS; n = next++) {
          await tab.goto(`${site}/?n=${n}&u=${n % USERS}${crashes(n) ? '&crash=1' : ''}`);
          await tab.waitForFunction(() => (window as any).loaded);
          // The session (and the crash's event and session update) is sent before the next load, as a user who stays a moment would.
          await tab.evaluate(() => (window as any).Sentry.flush(5000));
        }
      }),
    );
    const seconds = (Date.now() - startedAt) / 1000;
    console.log(`${PAGE_LOADS} page loads in ${seconds.toFixed(1)} s (${Math.round((PAGE_LOADS / seconds) * 60)} a minute); envelope answers`, [...statuses]);
    const crashed = Array.from({ length: PAGE_LOADS }, (_, n) => n).filter(crashes).length;

    expect(statuses.get(429) ?? 0).toBe(0);
    const issues = await until('every error', async () => {
      const l = (await api<{ data: Array<{ groupId: string; name: string; count: number }> }>('/errors?status=unresolved&limit=100')).data;
      const typeErrors = l.filter((i) => i.name === 'TypeError');
      return typeErrors.reduce((s, i) => s + i.count, 0) >= crashed ? typeErrors : undefined;
    });
    expect(issues.reduce((s, i) => s + i.count, 0)).toBe(crashed);

    // Release health of the deploy (processor/release-health/): every session started, the crashed ones, both rates.
    // @sentry/browser says `unhandled` for an uncaught error, counted as a crash (api/release-health/health-numbers.ts).
    const users = new Set(Array.from({ length: PAGE_LOADS }, (_, n) => n % USERS)).size;
    const crashedUsers = new Set(
      Array.from({ length: PAGE_LOADS }, (_, n) => n)
        .filter(crashes)
        .map((n) => n % USERS),
    ).size;
    const health = await until('every session', async () => {
      const h = await api<{ totals: Record<string, number> }>(`/deploys/${deployId}/health`);
      return h.totals.sessions! >= PAGE_LOADS && h.totals.crashed! >= crashed ? h : undefined;
    });
    expect(health.totals).toMatchObject({ sessions: PAGE_LOADS, crashed, unhandled: crashed, users, crashedUsers });
    expect(health.totals.crashFreeSessions).toBeCloseTo(1 - crashed / PAGE_LOADS, 9);
    expect(health.totals.crashFreeUsers).toBeCloseTo(1 - crashedUsers / users, 9);
    for (const tab of tabs) await tab.context().close();
  }, 600_000);
});
