import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { gitRepoWith } from '../support/git-repo.ts';
import { launchChromium } from './support/console-service.ts';
import { eventually } from './support/http-client.ts';
import { json, killStarted, OWNER, signIn, startService, type Started } from './support/service-process.ts';

/**
 * Issue 41's guarded rollout, as a user meets it, against `npm start`'s real command (its sweep every second through
 * GUARDED_ROLLOUT_SWEEP_MS): a project that opted in to autoRollback deploys a healthy page with cx.js (v1), then a
 * page that throws while it loads (v2). Chromium opens the production host a few times; the service rolls v2 back to
 * v1 on its own (the production host serves v1 again) and v2's console page says why. A healthy v3 is watched for its
 * one-minute window and stays live. Screenshots of the deploy pages go to the temp directory.
 */
const SLUG = 'guarded';

let svc: Started;
let port: string;
let session: Record<string, string>;
let browser: Browser;
let consolePage: Page;
const made: string[] = [];

const api = (route: string, init: { method?: string; body?: unknown } = {}) => json(svc.base, route, session, init);

beforeAll(async () => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'e2e-guarded-'));
  made.push(dataDir);
  svc = await startService(dataDir, { GUARDED_ROLLOUT_SWEEP_MS: '1000' });
  port = new URL(svc.base).port;
  session = await signIn(svc.base);
  browser = await launchChromium();
  consolePage = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
});

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && consolePage)
    await consolePage.screenshot({ path: path.join(os.tmpdir(), 'guarded-rollout-failed.png'), fullPage: true }).catch(() => undefined);
});

afterAll(async () => {
  await browser?.close();
  if (svc && svc.child.exitCode === null) {
    svc.child.kill('SIGTERM');
    await svc.exited;
  }
  killStarted();
  for (const dir of made) await rm(dir, { recursive: true, force: true });
});

/** The site's one page: cx.js from the service, the version, and (broken) a script that throws while the page loads. */
const pageOf = (cx: string, version: string, broken: boolean) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${version}</title><script src="${cx}"></script></head><body><p id="version">${version}</p>${
    broken ? `<script>document.getElementById('version').dataset.price = (null).amount;</script>` : ''
  }</body></html>`;

async function deployAndWait(): Promise<string> {
  const deploy = await api(`/v1/projects/${SLUG}/deploys`, { method: 'POST', body: {} });
  expect(deploy.status, JSON.stringify(deploy.body)).toBe(202);
  const id = deploy.body.deploy.id as string;
  const done = await eventually(
    'the build ends',
    async () => {
      const d = (await api(`/v1/projects/${SLUG}/deploys/${id}`)).body.deploy;
      return ['ready', 'failed', 'canceled'].includes(d.status) ? d : undefined;
    },
    120_000,
    250,
  );
  expect(done.status).toBe('ready');
  return id;
}

/** The production host's page (`*.localhost`, which Node does not resolve), on loopback with its host in the Host header. */
function production(): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/', headers: { host: `${SLUG}.localhost:${port}` } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}
const serving = (version: string) =>
  eventually(`the production host serves ${version}`, async () => ((await production()).includes(`<title>${version}</title>`) ? true : undefined), 30_000, 250);

/** Opens the production page in Chromium as a visitor; `throws`: the page throws while loading, and cx.js sends it. */
async function visit(throws: boolean) {
  const page = await (await browser.newContext()).newPage();
  const thrown = throws ? page.waitForEvent('pageerror') : undefined;
  await page.goto(`http://${SLUG}.localhost:${port}/`);
  if (thrown) expect((await thrown).message).toContain('null');
  await page.waitForFunction(() => (window as any).cx?.errors);
  await page.evaluate(() => (window as any).cx.errors.flush());
  await page.context().close();
}

const guardOf = async (id: string) => (await api(`/v1/projects/${SLUG}/deploys/${id}`)).body.deploy.guard;

describe('guarded rollout', () => {
  it('rolls back a deploy whose page throws on load, says why on its page, and leaves a healthy deploy live', { timeout: 420_000 }, async () => {
    const project = await api('/v1/projects', {
      method: 'POST',
      body: { name: 'Guarded', slug: SLUG, environmentHosts: { production: ['*.localhost'], preview: [] } },
    });
    expect(project.status, JSON.stringify(project.body)).toBe(201);
    // Opted in; the broken deploy's window is generous so a loaded machine still judges it inside it.
    const opted = await api(`/v1/projects/${SLUG}`, {
      method: 'PATCH',
      body: { guardedRollout: { autoRollback: true, windowMinutes: 5, thresholds: { minErrorEvents: 5 } } },
    });
    expect(opted.status, JSON.stringify(opted.body)).toBe(200);
    const manifest = (await (await fetch(`${svc.base}/v1/w/manifest.json`)).json()) as { files: Record<string, string> };
    const cx = `${svc.base}${manifest.files['cx.js']}`;

    const repo = gitRepoWith({ 'index.html': pageOf(cx, 'v1', false) });
    made.push(repo);
    const commit = (version: string, broken: boolean) => {
      writeFileSync(path.join(repo, 'index.html'), pageOf(cx, version, broken));
      execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '-am', version], { cwd: repo });
    };
    const settings = await api(`/v1/projects/${SLUG}/deploys/settings`, { method: 'PATCH', body: { repoUrl: repo, buildCommand: '', outputDir: '.' } });
    expect(settings.status, JSON.stringify(settings.body)).toBe(200);

    // v1: healthy, visited once.
    const v1 = await deployAndWait();
    await serving('v1');
    await visit(false);

    // v2: throws while loading; visitors keep coming until the service rolls it back.
    commit('v2', true);
    const v2 = await deployAndWait();
    await serving('v2');
    for (let i = 0; i < 6; i++) await visit(true);
    // The verdict's last write is its build-log line (the status moves first: degraded, then rolled_back).
    const log = await eventually(
      "v2's verdict in its build log",
      async () => {
        const lines = (await api(`/v1/projects/${SLUG}/deploys/${v2}/logs`)).body.lines as Array<{ line: string }>;
        return lines.at(-1)?.line.startsWith('guarded rollout:') ? lines : undefined;
      },
      120_000,
      500,
    );
    const guard = await guardOf(v2);
    expect(guard.status, JSON.stringify(guard)).toBe('rolled_back');
    expect(guard.evidence.rolledBackTo).toBe(v1);
    expect(guard.evidence.current.errorEvents).toBeGreaterThanOrEqual(5);
    expect(guard.evidence.reasons.join(' ')).toMatch(/error events/);
    await serving('v1');
    expect((await api(`/v1/projects/${SLUG}`)).body.project.deploys.live.id).toBe(v1);
    expect(log.at(-1)!.line).toMatch(new RegExp(`^guarded rollout: rolled back automatically to ${v1}: `));

    // v2's console page says why.
    await consolePage.goto(`${svc.base}/projects`);
    await consolePage.getByLabel('Email').fill(OWNER.email);
    await consolePage.getByLabel('Password').fill(OWNER.password);
    await consolePage.getByRole('button', { name: 'Sign in' }).click();
    await consolePage.getByRole('heading', { name: 'Projects' }).waitFor();
    await consolePage.goto(`${svc.base}/projects/${SLUG}/deploys/${v2}`);
    const verdict = consolePage.getByRole('region', { name: 'Guarded rollout' }).getByRole('status');
    await verdict.waitFor();
    expect(await verdict.textContent()).toMatch(new RegExp(`rolled back\\s*Rolled back automatically to ${v1}: \\d+ error events`));
    await consolePage.screenshot({ path: path.join(os.tmpdir(), 'guarded-rollout-rolled-back.png'), fullPage: true });

    // v3: healthy, watched for a one-minute window (the setting applies from the next sweep), stays live.
    expect((await api(`/v1/projects/${SLUG}`, { method: 'PATCH', body: { guardedRollout: { windowMinutes: 1 } } })).status).toBe(200);
    commit('v3', false);
    const v3 = await deployAndWait();
    await serving('v3');
    await visit(false);
    await visit(false);
    const healthy = await eventually(
      'v3 is judged',
      async () => {
        const g = await guardOf(v3);
        return g && g.status !== 'watching' ? g : undefined;
      },
      150_000,
      1000,
    );
    expect(healthy.status, JSON.stringify(healthy)).toBe('healthy');
    expect(healthy.evidence.previous.deployId).toBe(v1);
    // v1's own span: cut where v2 went live, so the errors of v2's time (on the same production host) are not v1's.
    expect(healthy.evidence.previous.errorEvents).toBe(0);
    await serving('v3');
    await consolePage.goto(`${svc.base}/projects/${SLUG}/deploys/${v3}`);
    await consolePage.getByText('Healthy: no threshold passed in its 1-minute window').waitFor();
    await consolePage.getByText(/^checked out /).waitFor();
    await consolePage.screenshot({ path: path.join(os.tmpdir(), 'guarded-rollout-healthy.png'), fullPage: true });
  });
});
