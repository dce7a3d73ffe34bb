import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, OWNER, startConsoleService, type ConsoleService } from './support/console-service.ts';

/**
 * The consent and device-login pages as a stranger's victim sees them (issue 38, row 8), in a real browser against the
 * whole service as `npm start` runs it. A client that registered itself under a famous name is marked Unverified and
 * the host its code goes to is shown large; a CLI login's page says where (address, program) and when it started, and
 * a code that came in a link is not approved in one click: the person ticks that it is theirs, or types the code.
 * Pictures go to SCREENSHOTS_DIR when set (`SCREENSHOTS_DIR=docs/screenshots`), else to the temp dir.
 */
let svc: ConsoleService;
let browser: Browser;
let page: Page;
const shots = process.env.SCREENSHOTS_DIR ?? os.tmpdir();
const CLI_AGENT = 'cx-cli/0.1 (linux x64; node 20.20.0)';

beforeAll(async () => {
  svc = await startConsoleService();
  browser = await launchChromium();
  page = await (await browser.newContext({ viewport: { width: 900, height: 640 } })).newPage();
  await page.goto(`${svc.base}/projects`);
  await page.getByLabel('Email').fill(OWNER.email);
  await page.getByLabel('Password').fill(OWNER.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('heading', { name: 'Projects' }).waitFor();
});

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail' && page)
    await page.screenshot({ path: path.join(os.tmpdir(), `console-oauth-device-failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, '-')}.png`) });
});

afterAll(async () => {
  await browser?.close();
  await svc?.running.stop();
});

async function startCliLogin(): Promise<{ device_code: string; user_code: string; verification_uri_complete: string }> {
  const r = await fetch(`${svc.base}/v1/cli/device`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'user-agent': CLI_AGENT },
    body: JSON.stringify({ client_name: 'cx on build-box' }),
  });
  return r.json() as never;
}
const pollStatus = async (device_code: string) =>
  (await fetch(`${svc.base}/v1/cli/device/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ device_code }) }))
    .status;

describe('consent and device login pages', () => {
  it('consent marks a self-registered client Unverified and shows the host its code goes to', async () => {
    const redirect = 'https://collector.attacker.example/oauth/cb';
    const client = await (
      await fetch(`${svc.base}/v1/oauth/register`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_name: 'Claude Desktop', redirect_uris: [redirect] }),
      })
    ).json();
    const ask = new URLSearchParams({
      response_type: 'code',
      client_id: client.client_id,
      redirect_uri: redirect,
      code_challenge: 'c'.repeat(43),
      code_challenge_method: 'S256',
      state: 's',
    });
    await page.goto(`${svc.base}/oauth/authorize?${ask}`);
    await page.locator('.client-name').waitFor();
    expect(await page.locator('.client-name').innerText()).toBe('Claude Desktop');
    expect(await page.locator('.badge.unverified').innerText()).toMatch(/unverified/i);
    expect(await page.locator('.client-who').innerText()).toMatch(/anyone can register a client under any name/);
    expect(await page.locator('.redirect-host strong').innerText()).toBe('collector.attacker.example');
    expect(await page.locator('.redirect-uri').innerText()).toBe(redirect);
    await page.screenshot({ path: path.join(shots, 'oauth-consent-unverified.png') });
  });

  it('a CLI login from a link shows where and when it started and approves nothing until the person confirms the code', async () => {
    const s = await startCliLogin();
    await page.goto(s.verification_uri_complete.replace(/^https?:\/\/[^/]+/, svc.base));
    await page.locator('.device-login').waitFor();
    expect(await page.locator('.user-code').innerText()).toBe(s.user_code);
    expect(await page.locator('.login-ip').innerText()).toBe('127.0.0.1');
    expect(await page.locator('.login-agent').innerText()).toBe(CLI_AGENT);
    const started = Date.parse((await page.locator('.login-started time').getAttribute('datetime'))!);
    expect(Math.abs(Date.now() - started)).toBeLessThan(10 * 60_000);
    // No one-click approval: the button is off until the person ticks that the code is theirs.
    const approve = page.getByRole('button', { name: 'Approve this CLI login' });
    expect(await approve.isDisabled()).toBe(true);
    await page.screenshot({ path: path.join(shots, 'cli-device-confirm.png') });
    expect(await pollStatus(s.device_code)).toBe(428);
    await page.getByLabel(/This code is the one my terminal shows/).check();
    await approve.click();
    await page.getByText(/Approved: cx on build-box/).waitFor();
    expect(await pollStatus(s.device_code)).toBe(200);
  });

  it('a code the person types is shown with its origin and approved without the tick', async () => {
    const s = await startCliLogin();
    await page.goto(`${svc.base}/cli/device`);
    const input = page.getByLabel('Code');
    expect(await input.inputValue()).toBe('');
    await input.fill(s.user_code.toLowerCase());
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.locator('.device-login').waitFor();
    expect(await page.locator('.login-agent').innerText()).toBe(CLI_AGENT);
    expect(await page.locator('.confirm-code').count()).toBe(0);
    await page.getByRole('button', { name: 'Approve this CLI login' }).click();
    await page.getByText(/Approved: cx on build-box/).waitFor();
    expect(await pollStatus(s.device_code)).toBe(200);
  });

  it('a code that is not pending says so, and nothing is shown to approve', async () => {
    await page.goto(`${svc.base}/cli/device?user_code=ZZZZ-ZZZZ`);
    await expect.poll(() => page.getByRole('alert').innerText()).toMatch(/no pending login/);
    expect(await page.locator('.device-login').count()).toBe(0);
  });
});
