import dns from 'node:dns';
import { mkdtemp } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { loadConfig } from '../../../platform/config.ts';
import { createLogger } from '../../../platform/logger.ts';
import { start, type Running } from '../../../service/service.ts';
import { createTestOutboundGuard } from '../../../platform/adapters/outbound/test-guard.ts';

/**
 * The whole service as `npm start` runs it (every role in one process, embedded engines, a fresh data dir), for the
 * console's browser tests, its screenshots and its bench. Two differences from `npm start`, both test-only: the owner's
 * password is set (OWNER_PASSWORD) so a browser can sign in, and webhooks may reach a loopback HTTPS receiver (the
 * `testing` allowance configuration cannot turn on), whose retry sweep runs every second instead of every minute. Local repositories are allowed (ALLOW_LOCAL_REPOS) for deploys.
 */
export const OWNER = { email: 'owner@example.com', password: 'console-e2e-password' };

export const CHROMIUM = '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** A port free on loopback now (to pass as PORT, so the URLs the service prints are the ones to use). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

export interface ConsoleService {
  running: Running;
  base: string;
  dataDir: string;
}

/**
 * `txt`: DNS TXT records the service sees (custom domain verification, DKIM keys); none by default. `hosts`: names the
 * outbound guard resolves to the addresses given, without DNS (github.com for a connected repository's clone URL).
 */
export async function startConsoleService(
  opts: { webhookCa?: string; env?: Record<string, string>; txt?: Map<string, string[]>; hosts?: Record<string, string> } = {},
): Promise<ConsoleService> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'console-'));
  // A known port (not 0), so the URLs the service prints and returns (DSNs, hook URLs) are the ones to use.
  const port = await freePort();
  const config = loadConfig({
    PORT: String(port),
    HOST: '127.0.0.1',
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    SETTINGS_REFRESH_MS: '250',
    OWNER_EMAIL: OWNER.email,
    OWNER_PASSWORD: OWNER.password,
    ALLOW_LOCAL_REPOS: 'true',
    ...opts.env,
  });
  const running = await start('all', config, createLogger('silent', 'console'), {
    testing: {
      overrides: {
        outbound: createTestOutboundGuard({
          ca: opts.webhookCa,
          resolve: async (host) => {
            const address = opts.hosts?.[host];
            return address ? [{ address, family: 4 }] : dns.promises.lookup(host, { all: true, verbatim: true });
          },
        }),
        txt: { resolveTxt: async (name) => opts.txt?.get(name) ?? [] },
      },
      webhookSweepIntervalMs: 1_000,
      quietFirstStart: true,
    },
  });
  return { running, base: `http://127.0.0.1:${running.port}`, dataDir };
}

/**
 * Error events posted to the edge as a client would (one request per 20 events; `ip` spreads the per key-and-IP limit;
 * `origin` is the browser page's, which stamps the environment, §7.4).
 * A key made a moment ago is refused until the edge's next settings refresh (SETTINGS_REFRESH_MS): that 401 is retried.
 */
export async function sendErrors(
  base: string,
  ingestKey: string,
  events: Array<Record<string, unknown>>,
  opts: { ip?: string; origin?: string } = {},
): Promise<void> {
  for (let i = 0; i < events.length; i += 20) {
    const deadline = Date.now() + 5_000;
    for (;;) {
      const res = await fetch(`${base}/v1/errors/i`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${ingestKey}`,
          'content-type': 'application/json',
          'x-service-client-ip': opts.ip ?? '198.51.100.7',
          ...(opts.origin ? { origin: opts.origin } : {}),
        },
        body: JSON.stringify({ batch: events.slice(i, i + 20) }),
      });
      if (res.status === 202 || res.status === 200) break;
      if (res.status === 401 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 100));
        continue;
      }
      throw new Error(`error ingest answered ${res.status}: ${await res.text()}`);
    }
  }
}

/**
 * The owner signed in twice: a session cookie for API calls (`api`: JSON in and out, as the console sends it) and a
 * browser page (1280×800) signed in through the form, on the projects page.
 */
export async function signedInOwner(
  svc: ConsoleService,
  browser: Browser,
): Promise<{ page: Page; cookie: string; api: (url: string, init?: RequestInit) => Promise<Record<string, unknown>> }> {
  const signIn = await fetch(`${svc.base}/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OWNER) });
  const cookie = signIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0]!)
    .find((c) => c.startsWith('cx_session='))!;
  const api = async (url: string, init: RequestInit = {}) =>
    (await fetch(`${svc.base}${url}`, { ...init, headers: { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' } })).json() as Promise<
      Record<string, unknown>
    >;
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  await page.goto(`${svc.base}/projects`);
  await page.getByLabel('Email').fill(OWNER.email);
  await page.getByLabel('Password').fill(OWNER.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
  return { page, cookie, api };
}
