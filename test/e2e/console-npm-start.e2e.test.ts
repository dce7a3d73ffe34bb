import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort, launchChromium, sendErrors } from './support/console-service.ts';

/**
 * The README's first command, literally: `npm start` (service/main.ts, every role in one process) on a fresh data
 * dir prints the owner's password and the demo ingest key once; a person opens the console in a browser, signs in
 * with them, and sees an error sent with that key in the demo project's issue list. No test-only option is involved.
 */
const ROOT = path.join(path.dirname(new URL(import.meta.url).pathname), '..', '..');
let child: ChildProcess;
let browser: Browser;
let base: string;
let printed = '';

beforeAll(async () => {
  const port = await freePort();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'npm-start-'));
  base = `http://localhost:${port}`;
  child = spawn('npm', ['start', '--silent'], {
    cwd: ROOT,
    env: { ...process.env, PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdout!.on('data', (b: Buffer) => (printed += b.toString()));
  child.stderr!.on('data', (b: Buffer) => (printed += b.toString()));
  const deadline = Date.now() + 90_000;
  while (!/project API key:/.test(printed)) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error(`npm start did not come up:\n${printed}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  for (;;) {
    const ok = await fetch(`${base}/`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) throw new Error('the console did not answer');
    await new Promise((r) => setTimeout(r, 200));
  }
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  if (child?.pid && child.exitCode === null) {
    process.kill(-child.pid, 'SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
});

it("signs in with what the first start printed and shows the demo project's issues", async () => {
  const signIn = /sign in:\s+POST \S+\s+(\{.*\})/.exec(printed);
  const ingestKey = /ingest key:\s+(cak_live_\S+)/.exec(printed)?.[1];
  expect(signIn, printed).not.toBeNull();
  expect(ingestKey).toBeDefined();
  const { email, password } = JSON.parse(signIn![1]!) as { email: string; password: string };

  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await page.goto(`${base}/`);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('link', { name: /demo/ }).click();
  await page.getByRole('link', { name: 'Issues', exact: true }).click();
  await page.getByText('No unresolved issues.').waitFor();

  await sendErrors(base, ingestKey!, [{ name: 'TypeError', message: 'x is undefined', stack: 'TypeError: x\n    at load (src/app.ts:3:9)' }]);
  await expect
    .poll(
      async () => {
        await page.reload();
        await page.waitForSelector('.issue-list, .empty');
        return page.locator('.issue-row .issue-title').allInnerTexts();
      },
      { timeout: 20_000 },
    )
    .toEqual(['TypeError x is undefined']);
  // A quiet start (issue 23): the browsing above made dozens of requests, and none of them is a line of output; the
  // credentials box is the last thing the start printed before them.
  expect(printed).not.toMatch(/incoming request|request completed/);
  const lines = printed.trimEnd().split('\n');
  const box = lines.findIndex((l) => l.includes('first start: save these now'));
  expect(lines.slice(box).some((l) => l.startsWith('{'))).toBe(false);
});
