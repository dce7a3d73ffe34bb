import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { createRequire } from 'node:module';
import type { Browser, BrowserContext } from 'playwright-core';
import { freePort } from './console-service.ts';

/**
 * PostHog's browser SDK as a site uses it: its own bundle (posthog-js, unchanged) on a page of another origin, set up
 * with the project's ingest key and the service as `api_host`, in a browser it does not take for a bot.
 */

/** The page's `posthog.init(...)`: autocapture and session recording off, a pageview on load, no pageleave. */
export const posthogInit = (serviceUrl: string, ingestKey: string) =>
  `posthog.init(${JSON.stringify(ingestKey)}, ${JSON.stringify({
    api_host: serviceUrl,
    autocapture: false,
    capture_pageview: true,
    capture_pageleave: false,
    disable_session_recording: true,
    persistence: 'localStorage',
  })});`;

export interface PosthogPageServer {
  /** `http://127.0.0.1:<port>`: another origin than the service's. */
  origin: string;
  close(): Promise<void>;
}

/** A loopback server: `/posthog.js` is posthog-js's bundle, any other path the page `html(path)` makes. */
export async function servePosthogPages(html: (path: string) => string): Promise<PosthogPageServer> {
  const bundle = await readFile(createRequire(import.meta.url).resolve('posthog-js/dist/array.full.no-external.js'), 'utf8');
  const port = await freePort();
  const server = http.createServer((req, res) => {
    if (req.url === '/posthog.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
    res.writeHead(200, { 'content-type': 'text/html' }).end(html(req.url ?? '/'));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { origin: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/**
 * A visitor's browser: posthog-js drops events from what looks like a bot, and headless Chromium names itself in its
 * user agent and a driven browser says navigator.webdriver. A visitor's browser does neither.
 */
export async function visitorContext(browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext({
    userAgent: 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  });
  await context.addInitScript(() => Object.defineProperty(navigator, 'webdriver', { get: () => false }));
  return context;
}
