import { mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileSite } from '../../hosting/build/compile-site.ts';
import { addLiveSite, createIngestProject } from '../support/ingest-fixtures.ts';
import { launchChromium } from './support/console-service.ts';
import { startTestEdge, type TestEdge } from '../support/test-edge.ts';

/**
 * Issue 42 "Serving" in a real browser (Debian's chromium, driven by playwright-core): a client-routed app (a tiny
 * history.pushState router, no framework) deployed with `_redirects`' `/* /index.html 200`, and another with the
 * `spa` option instead: a deep link `/users/42` loads, survives a reload, navigates on the client and back; its
 * hashed script arrives brotli-compressed and immutable, its HTML no-cache.
 */
const INDEX = `<!doctype html><html><head><meta charset="utf-8"><title>app</title>
<script type="module" src="/assets/router-1a2b3c4d.js"></script></head>
<body><nav><a href="/about-us" data-link>about</a> <a href="/users/7" data-link>user 7</a></nav><main id="view">loading</main></body></html>`;

/** The router: the view is the path; a data-link click is a pushState, never a page load. */
const ROUTER = `${'// a client-side router, padded past the compression threshold\n'.repeat(30)}
const view = document.getElementById('view');
window.loads = (window.loads || 0) + 1;
function render() {
  const p = location.pathname;
  const user = /^\\/users\\/(\\d+)$/.exec(p);
  view.textContent = user ? 'user ' + user[1] : p === '/about-us' ? 'about us' : p === '/' ? 'home' : 'no route ' + p;
}
document.addEventListener('click', (e) => {
  const a = e.target.closest('a[data-link]');
  if (!a) return;
  e.preventDefault();
  history.pushState(null, '', a.getAttribute('href'));
  render();
});
window.addEventListener('popstate', render);
render();
`;

let edge: TestEdge;
let browser: Browser;
const sites: Record<string, string> = {};

async function deploy(name: string, files: Record<string, string>, spa: boolean): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'e2e-spa-'));
  for (const [rel, body] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), body);
  }
  await compileSite(dir, { spa, note: () => undefined });
  const p = await createIngestProject(edge.platform);
  await addLiveSite(edge.platform, p.projectId, dir);
  sites[name] = `http://${p.slug}.localhost:${new URL(edge.base).port}`;
}

beforeAll(async () => {
  edge = await startTestEdge({}, { sites: true });
  await deploy('redirects', { 'index.html': INDEX, 'assets/router-1a2b3c4d.js': ROUTER, _redirects: '/* /index.html 200\n' }, false);
  await deploy('spa option', { 'index.html': INDEX, 'assets/router-1a2b3c4d.js': ROUTER }, true);
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
  await edge?.close();
});

describe('a client-routed app in Chromium', () => {
  for (const name of ['redirects', 'spa option']) {
    it(`deep link, reload, client navigation and back (fallback from ${name})`, async () => {
      const context = await browser.newContext();
      const tab = await context.newPage();
      const assets: Array<{ url: string; encoding?: string; cache?: string }> = [];
      tab.on('response', (r) => {
        if (r.url().includes('/assets/')) assets.push({ url: r.url(), encoding: r.headers()['content-encoding'], cache: r.headers()['cache-control'] });
      });
      const first = await tab.goto(`${sites[name]}/users/42`);
      expect(first?.status()).toBe(200);
      expect(first?.headers()['cache-control']).toBe('no-cache');
      await tab.waitForFunction(() => document.getElementById('view')?.textContent === 'user 42');

      await tab.reload();
      await tab.waitForFunction(() => document.getElementById('view')?.textContent === 'user 42');
      expect(tab.url()).toBe(`${sites[name]}/users/42`);

      await tab.click('a[href="/about-us"]');
      await tab.waitForFunction(() => document.getElementById('view')?.textContent === 'about us');
      expect(tab.url()).toBe(`${sites[name]}/about-us`);
      expect(await tab.evaluate(() => (window as unknown as { loads: number }).loads)).toBe(1); // no page load

      await tab.goBack();
      await tab.waitForFunction(() => document.getElementById('view')?.textContent === 'user 42');

      // A deep link that was never visited, opened directly.
      await tab.goto(`${sites[name]}/about-us`);
      await tab.waitForFunction(() => document.getElementById('view')?.textContent === 'about us');

      expect(assets[0]).toMatchObject({ encoding: 'br', cache: 'public, max-age=31536000, immutable' });
      await context.close();
    });
  }
});
