import { rm } from 'node:fs/promises';
import http from 'node:http';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keysRepository } from '../../api/keys/keys-repository.ts';
import { createIngestProject, type IngestProject } from '../support/ingest-fixtures.ts';
import { freePort, launchChromium, startConsoleService, type ConsoleService } from './support/console-service.ts';
import { visitorContext } from './support/posthog-js-page.ts';

/**
 * PostHog's HTML snippet as PostHog documents it (https://posthog.com/docs/error-tracking/installation/web, "HTML
 * snippet"), unchanged but for the project key and `api_host`, on a page of another origin, in Debian's chromium
 * against `npm start`'s single process: the snippet loads `/static/array.js` from the service, posthog-js loads its
 * remote config (`/array/<key>/config.js`) and flags, and sends a pageview and the page's own event. Both are stored,
 * `window.posthog.__loaded` is true, and the page logs no console error, no page error, no failed request and no answer
 * of 400 or more. The same for posthog-js bundled from npm (its module build, as an app's bundler takes it).
 */
const SNIPPET = (key: string, apiHost: string) => `<script>
    !function(t,e){var o,n,p,r;e.__SV||(window.posthog && window.posthog.__loaded)||(window.posthog=e,e._i=[],e.init=function(i,s,a){function g(t,e){var o=e.split(".");2==o.length&&(t=t[o[0]],e=o[1]),t[e]=function(){t.push([e].concat(Array.prototype.slice.call(arguments,0)))}}p||((p=t.createElement("script")).type="text/javascript",p.crossOrigin="anonymous",p.async=!0,p.src=s.api_host.replace(".i.posthog.com","-assets.i.posthog.com")+"/static/array.js",p.onerror=function(){p=null},(r=t.getElementsByTagName("script")[0]).parentNode.insertBefore(p,r));var u=e;for(void 0!==a?u=e[a]=[]:a="posthog",u.people=u.people||[],Object.defineProperty(u,"toString",{configurable:!0,enumerable:!0,writable:!0,value:function(t){var e="posthog";return"posthog"!==a&&(e+="."+a),t||(e+=" (stub)"),e}}),Object.defineProperty(u.people,"toString",{configurable:!0,enumerable:!0,writable:!0,value:function(){return u.toString(1)+".people (stub)"}}),o="init capture register register_once register_for_session unregister unregister_for_session getFeatureFlag getFeatureFlagResult isFeatureEnabled reloadFeatureFlags updateEarlyAccessFeatureEnrollment getEarlyAccessFeatures on onFeatureFlags onSessionId getSurveys getActiveMatchingSurveys renderSurvey canRenderSurvey getNextSurveyStep identify setPersonProperties group resetGroups setPersonPropertiesForFlags resetPersonPropertiesForFlags setGroupPropertiesForFlags resetGroupPropertiesForFlags reset get_distinct_id getGroups get_session_id get_session_replay_url alias set_config startSessionRecording stopSessionRecording sessionRecordingStarted captureException loadToolbar get_property getSessionProperty createPersonProfile opt_in_capturing opt_out_capturing has_opted_in_capturing has_opted_out_capturing clear_opt_in_out_capturing debug".split(" "),n=0;n<o.length;n++)g(u,o[n]);e._i.push([i,s,a])},e.__SV=1)}(document,window.posthog||[]);
    posthog.init('${key}', {
        api_host: '${apiHost}',
        defaults: '2026-05-30',
    })
</script>`;

const snippetPage = (key: string, apiHost: string) => `<!doctype html><html><head><meta charset="utf-8"><title>shop</title>
${SNIPPET(key, apiHost)}
</head><body><h1>Shop</h1>
<script>posthog.capture('snippet_event', { via: 'snippet' });</script>
</body></html>`;

/** An app that bundles posthog-js from npm: `import posthog from 'posthog-js'`, initialised as PostHog's docs show. */
const npmEntry = (key: string, apiHost: string) => `import posthog from 'posthog-js';
window.posthog = posthog;
posthog.init(${JSON.stringify(key)}, { api_host: ${JSON.stringify(apiHost)}, defaults: '2026-05-30' });
posthog.capture('bundled_event', { via: 'npm' });`;

let svc: ConsoleService;
let browser: Browser;
let project: IngestProject;
let apiKey: string;
let site: { origin: string; close(): Promise<void> };

beforeAll(async () => {
  svc = await startConsoleService();
  const platform = svc.running.platform;
  project = await createIngestProject(platform);
  apiKey = (await keysRepository.createKey(platform.db, { projectId: project.projectId, kind: 'live', scopes: ['analytics:read'], now: Date.now() })).token;
  const bundled = await build({
    stdin: { contents: npmEntry(project.ingestKey, svc.base), resolveDir: process.cwd(), loader: 'js' },
    bundle: true,
    format: 'iife',
    write: false,
    logLevel: 'silent',
  });
  const app = Buffer.from(bundled.outputFiles[0]!.contents);
  const port = await freePort();
  const server = http.createServer((req, res) => {
    if (req.url === '/favicon.ico') return void res.writeHead(204).end();
    if (req.url === '/app.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(app);
    if (req.url === '/bundled')
      return void res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>app</title><h1>App</h1><script src="/app.js"></script>');
    res.writeHead(200, { 'content-type': 'text/html' }).end(snippetPage(project.ingestKey, svc.base));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  site = { origin: `http://127.0.0.1:${port}`, close: () => new Promise((resolve) => server.close(() => resolve())) };
  browser = await launchChromium();
  // The edge knows the new key at its next settings refresh.
  for (let i = 0; i < 100 && (await fetch(`${svc.base}/array/${project.ingestKey}/config`)).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));
});

afterAll(async () => {
  await browser?.close();
  await site?.close();
  await svc?.running.stop();
  if (svc) await rm(svc.dataDir, { recursive: true, force: true });
});

async function storedEvents(names: string[]): Promise<Array<Record<string, any>>> {
  const end = Date.now() + 30_000;
  for (;;) {
    const r = await fetch(`${svc.base}/v1/projects/${project.slug}/analytics/events?from=${Date.now() - 3_600_000}&to=${Date.now() + 60_000}&limit=100`, {
      headers: { authorization: `Bearer ${apiKey}` },
    });
    const rows = r.status === 200 ? ((await r.json()).data as Array<Record<string, any>>) : [];
    if (names.every((n) => rows.some((x) => x.event === n))) return rows;
    if (Date.now() > end) throw new Error(`timed out waiting for ${names.join(', ')}: stored ${rows.map((x) => x.event).join(', ')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Everything a page says went wrong: console errors, uncaught errors, failed requests, answers of 400 or more. */
function watch(page: Page) {
  const problems: string[] = [];
  const served: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    if (r.status() >= 400) problems.push(`${r.status()}: ${r.url()}`);
    if (r.url().startsWith(svc.base)) served.push(`${r.status()} ${new URL(r.url()).pathname}`);
  });
  return { problems, served };
}

describe("PostHog's snippet, as PostHog documents it", () => {
  it('loads posthog-js from the service, sends events, and the page logs no error', async () => {
    const context = await visitorContext(browser);
    const page = await context.newPage();
    const { problems, served } = watch(page);
    await page.goto(`${site.origin}/shop`);
    await page.waitForFunction(() => (window as unknown as { posthog?: { __loaded?: boolean } }).posthog?.__loaded === true, undefined, { timeout: 20_000 });
    const rows = await storedEvents(['$pageview', 'snippet_event']);
    expect(rows.find((r) => r.event === 'snippet_event')!.properties).toMatchObject({ via: 'snippet' });
    expect(rows.find((r) => r.event === '$pageview')!.path).toBe('/shop');
    // posthog-js went the whole way: its bundle, its remote config script, flags, capture.
    expect(served).toEqual(expect.arrayContaining(['200 /static/array.js', `200 /array/${project.ingestKey}/config.js`]));
    expect(served.some((s) => /^200 \/flags/.test(s))).toBe(true);
    expect(
      await page.evaluate(() => (window as unknown as { _POSTHOG_REMOTE_CONFIG: Record<string, { config: { surveys: boolean } }> })._POSTHOG_REMOTE_CONFIG),
    ).toMatchObject({
      [project.ingestKey]: { config: { surveys: false, sessionRecording: false } },
    });
    expect(problems).toEqual([]);
    await context.close();
  });

  it('bundled from npm, posthog-js loads its config and extensions without a 404 or an error', async () => {
    const context = await visitorContext(browser);
    const page = await context.newPage();
    const { problems, served } = watch(page);
    await page.goto(`${site.origin}/bundled`);
    await page.waitForFunction(() => (window as unknown as { posthog?: { __loaded?: boolean } }).posthog?.__loaded === true, undefined, { timeout: 20_000 });
    await storedEvents(['bundled_event']);
    expect(served).toEqual(expect.arrayContaining([`200 /array/${project.ingestKey}/config.js`]));
    expect(problems).toEqual([]);
    await context.close();
  });
});
