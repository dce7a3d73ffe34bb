/**
 * Console benchmark (issue 17): how long a person waits for the issue list of a project with 2,000 open issues, measured
 * in a real browser (Debian's chromium, playwright-core) against the whole service as `npm start` runs it (one process,
 * embedded engines, fresh data dir). Loopback only, bounded; prints JSON.
 *
 * The 2,000 issues arrive through the edge like any client's (100 batches of 20 distinct errors). Then, `--rounds`
 * times each:
 *   - cold: a new browser context (empty cache, signed in by cookie) opens /projects/<slug>/errors;
 *   - warm: the same page reloaded (bundle from cache, revalidated index.html);
 *   - last seen: the list sorted by last seen (another query plan);
 *   - next page: a click on "Next page" until the new rows show.
 * "Shown" is the console's `issues-rendered` performance mark, set once the first page's rows are in the DOM and
 * painted; times are from the navigation's start (or the click). Also printed: the JavaScript the page loaded, gzipped.
 *
 *   npx tsx bench/console.bench.ts [--issues 2000] [--rounds 5]
 */
import type { Page } from 'playwright-core';
import { launchChromium, OWNER, sendErrors, startConsoleService } from '../test/e2e/support/console-service.ts';
import { numberArg } from './support/cli-args.ts';

const ISSUES = numberArg('issues', 2000);
const ROUNDS = numberArg('rounds', 5);
const log = (m: string) => process.stderr.write(`${m}\n`);

/** Distinct words without digits: the fingerprint strips numbers from messages. */
const word = (n: number) => {
  let s = '';
  do {
    s = String.fromCharCode(97 + (n % 26)) + s;
    n = Math.floor(n / 26);
  } while (n > 0);
  return s;
};

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return { runs: s.length, minMs: Math.round(s[0]!), medianMs: Math.round(q(0.5)), maxMs: Math.round(s[s.length - 1]!) };
};

async function shownAfterNavigation(page: Page): Promise<number> {
  await page.waitForFunction(() => performance.getEntriesByName('issues-rendered').length > 0, undefined, { timeout: 30_000 });
  return page.evaluate(() => performance.getEntriesByName('issues-rendered')[0]!.startTime);
}

async function main() {
  const svc = await startConsoleService();
  try {
    const signIn = await fetch(`${svc.base}/v1/auth/sign-in`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(OWNER) });
    const cookie = signIn.headers
      .getSetCookie()
      .map((c) => c.split(';')[0]!)
      .find((c) => c.startsWith('cx_session='))!;
    const session = { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' };
    const key = await (
      await fetch(`${svc.base}/v1/projects/demo/keys`, { method: 'POST', headers: session, body: JSON.stringify({ kind: 'ingest', name: 'bench' }) })
    ).json();
    const ingestKey = key.key.token as string;

    log(`sending ${ISSUES} distinct errors through the edge`);
    const t0 = Date.now();
    const events = Array.from({ length: ISSUES }, (_, i) => ({
      name: ['TypeError', 'RangeError', 'ReferenceError', 'SyntaxError'][i % 4],
      message: `failure in ${word(i)} while loading the ${word(i * 7 + 3)} panel`,
      stack: `Error: x\n    at handle_${word(i)} (src/features/${word(i)}.ts:12:5)\n    at dispatch (node_modules/framework/index.js:1:1)`,
      path: `/${word(i % 50)}`,
      runtime: i % 2 ? 'node' : 'browser',
      extra: { attempt: i % 5 },
    }));
    for (let b = 0; b < events.length; b += 20) await sendErrors(svc.base, ingestKey, events.slice(b, b + 20), { ip: `198.51.100.${(b / 20) % 250}` });
    for (;;) {
      const r = await (await fetch(`${svc.base}/v1/projects/demo`, { headers: { cookie } })).json();
      if (r.project.errors.open >= ISSUES) break;
      if (Date.now() - t0 > 120_000) throw new Error(`only ${r.project.errors.open} issues after 2 minutes`);
      await new Promise((res) => setTimeout(res, 250));
    }
    log(`${ISSUES} issues stored in ${Date.now() - t0} ms`);

    const browser = await launchChromium();
    const url = `${svc.base}/projects/demo/errors`;
    const cold: number[] = [];
    const warm: number[] = [];
    const lastSeen: number[] = [];
    const nextPage: number[] = [];
    let jsGzipBytes = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      await context.addCookies([{ name: 'cx_session', value: cookie.split('=')[1]!, url: svc.base }]);
      const page = await context.newPage();
      let js = 0;
      page.on('response', async (res) => {
        if (res.url().endsWith('.js')) js += Number((await res.headerValue('content-length')) ?? (await res.body()).length);
      });
      await page.goto(url);
      cold.push(await shownAfterNavigation(page));
      jsGzipBytes = js;
      const rows = await page.locator('.issue-row').count();
      if (rows !== 25) throw new Error(`first page shows ${rows} rows`);
      await page.reload();
      warm.push(await shownAfterNavigation(page));
      await page.goto(`${url}?sort=lastSeen`);
      lastSeen.push(await shownAfterNavigation(page));
      const first = await page.locator('.issue-row .issue-title').first().innerText();
      const started = await page.evaluate(() => performance.now());
      await page.getByRole('button', { name: 'Next page' }).click();
      await page.waitForFunction(
        (f) =>
          document.querySelector('.issue-row .issue-title')?.textContent !== f && document.querySelector('.issue-list')?.getAttribute('aria-busy') === 'false',
        first.replace(/\n/g, ' '),
      );
      nextPage.push((await page.evaluate(() => performance.now())) - started);
      await context.close();
    }
    await browser.close();
    const result = {
      bench: 'console',
      issues: ISSUES,
      firstPageShown: { cold: stats(cold), warm: stats(warm), sortedByLastSeen: stats(lastSeen), nextPageClick: stats(nextPage) },
      budgetMs: 1000,
      javascriptLoadedGzipBytes: jsGzipBytes,
      node: process.version,
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await svc.running.stop();
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
