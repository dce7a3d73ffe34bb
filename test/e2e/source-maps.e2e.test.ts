import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { gitRepoWith } from '../support/git-repo.ts';
import { buildApp, builtFile, sentryCli, sentryUpload } from '../support/sentry-cli.ts';
import { launchChromium } from './support/console-service.ts';
import { eventually } from './support/http-client.ts';
import { json, killStarted, ROOT, signIn, startService, type Started } from './support/service-process.ts';

/**
 * Issue 37's "done when", as a user meets it, against `npm start`'s real command:
 * - an app bundled at deploy time by esbuild (minified, `[name]-[hash]` names, external maps), built in the build
 *   sandbox from a local repository, deployed twice with an unrelated change (new hashes). The same error thrown in
 *   Chromium through cx.js on each deploy's own host and on the production host, and through the real
 *   `@sentry/browser` on a page of the same site, is ONE issue, counted once a throw, whose top frame is the original
 *   `src/…` file and function with its context lines; the minified stack is kept; no `.map` is served.
 * - an app built elsewhere, given debug ids and uploaded by the real `sentry-cli sourcemaps inject` + `upload`,
 *   served from a plain static server on loopback: `@sentry/browser`'s events resolve by debug id with no release.
 */
const SLUG = 'shop';
const MESSAGE = 'price is not a number: abc';

let svc: Started;
let port: string;
let session: Record<string, string>;
let browser: Browser;
const pages: Page[] = [];
/** Folders this file made, removed at the end. */
const made: string[] = [];

/** `@sentry/browser` as one IIFE file (`window.Sentry`), as a site vendors it. */
async function sentryBundle(): Promise<Uint8Array> {
  const out = await build({
    stdin: { contents: "import * as Sentry from '@sentry/browser'; window.Sentry = Sentry;", resolveDir: ROOT },
    bundle: true,
    minify: true,
    format: 'iife',
    write: false,
    logLevel: 'silent',
  });
  return out.outputFiles[0]!.contents;
}

const api = (route: string, init: { method?: string; body?: unknown } = {}) => json(svc.base, route, session, init);

async function newPage(): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  pages.push(page);
  return page;
}

async function issuesOf(slug: string): Promise<Array<{ id: string; message: string; count: number }>> {
  const list = await api(`/v1/projects/${slug}/errors?status=unresolved&limit=100`);
  expect(list.status).toBe(200);
  return list.body.data;
}

/** Waits for the project's issues to add up to `total` occurrences, then answers them. */
function occurrences(slug: string, total: number) {
  return eventually(
    `${total} occurrences in ${slug}`,
    async () => {
      const list = await issuesOf(slug);
      return list.reduce((n, i) => n + i.count, 0) >= total ? list : undefined;
    },
    90_000,
    250,
  );
}

beforeAll(async () => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'e2e-source-maps-'));
  made.push(dataDir);
  svc = await startService(dataDir);
  port = new URL(svc.base).port;
  session = await signIn(svc.base);
  browser = await launchChromium();
});

afterEach(async (ctx) => {
  if (ctx.task.result?.state !== 'fail') return;
  for (const [i, page] of pages.entries())
    await page.screenshot({ path: path.join(os.tmpdir(), `source-maps-failed-${i}.png`), fullPage: true }).catch(() => undefined);
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

/** The app: a throw in src/price.ts reached through cart.ts and checkout.ts; banner.ts is the unrelated module. */
const APP_SOURCES: Record<string, string> = {
  'src/price.ts': [
    '/** A price as the page lists it. */',
    'export function parsePrice(text: string): number {',
    '  const value = Number(text);',
    '  if (!Number.isFinite(value)) {',
    '    throw new Error(`price is not a number: ${text}`);',
    '  }',
    '  return value;',
    '}',
    '',
  ].join('\n'),
  'src/cart.ts': [
    "import { parsePrice } from './price';",
    '',
    'export function cartTotal(prices: string[]): number {',
    '  let total = 0;',
    '  for (const p of prices) total += parsePrice(p);',
    '  return total;',
    '}',
    '',
  ].join('\n'),
  'src/checkout.ts': [
    "import { cartTotal } from './cart';",
    '',
    'export function renderCheckout(root: HTMLElement): void {',
    "  const prices = (root.dataset.prices ?? '').split(',');",
    '  root.textContent = `Total: ${cartTotal(prices)}`;',
    '}',
    '',
  ].join('\n'),
  'src/banner.ts': "export const BANNER = 'Spring sale';\n",
  'src/main.ts': [
    "import { BANNER } from './banner';",
    "import { renderCheckout } from './checkout';",
    '',
    'document.title = BANNER;',
    "renderCheckout(document.getElementById('checkout')!);",
    '',
  ].join('\n'),
};

/** The build: the committed esbuild binary, then the pages naming the hashed bundle. */
const BUILD_SH = `set -eu
rm -rf out
./tools/esbuild src/main.ts --bundle --minify --sourcemap '--entry-names=[name]-[hash]' --outdir=out/assets
node pages.mjs
`;

/**
 * index.html: cx.js from the service, then the bundle, which throws while the page loads. sentry.html: the vendored
 * @sentry/browser with the project's DSN, then the same bundle.
 */
const PAGES_MJS = `import { copyFileSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
const site = JSON.parse(readFileSync('site.json', 'utf8'));
const bundle = readdirSync('out/assets').find((n) => n.endsWith('.js'));
const body = '<div id="checkout" data-prices="12.50,abc,3"></div><script src="/assets/' + bundle + '"></script>';
writeFileSync('out/index.html', '<!doctype html><html><head><meta charset="utf-8"><title>shop</title><script src="' + site.cx + '"></script></head><body>' + body + '</body></html>');
mkdirSync('out/vendor');
copyFileSync('vendor/sentry.js', 'out/vendor/sentry.js');
writeFileSync('out/sentry.html', '<!doctype html><html><head><meta charset="utf-8"><title>shop</title><script src="/vendor/sentry.js"></script><script>Sentry.init({ dsn: ' + JSON.stringify(site.dsn) + ', tracesSampleRate: 0 });</script></head><body>' + body + '</body></html>');
`;

function git(repo: string, ...args: string[]) {
  execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: repo });
}

async function deployAndWait(): Promise<{ id: string; url: string }> {
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
  if (done.status !== 'ready') {
    const log = await api(`/v1/projects/${SLUG}/deploys/${id}/log`);
    throw new Error(`deploy ${id} ${done.status}: ${JSON.stringify(log.body).slice(0, 4000)}`);
  }
  return { id, url: done.url as string };
}

/** GET a site URL (`*.localhost`, which Node does not resolve) on loopback, with its host in the Host header. */
function get(url: string): Promise<{ status: number; type: string | undefined; body: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port: u.port, path: u.pathname + u.search, headers: { host: u.host } }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body }));
      })
      .on('error', reject);
  });
}

/** The hashed bundle a host's page loads. */
async function bundleOf(host: string): Promise<string> {
  return /\/assets\/(main-[A-Z0-9]+\.js)/.exec((await get(host)).body)![1]!;
}

/** Opens `url`, lets the bundle throw, and has the client send at once. */
async function throwIn(url: string, client: 'cx' | 'sentry') {
  const page = await newPage();
  const thrown = page.waitForEvent('pageerror');
  await page.goto(url);
  expect((await thrown).message).toContain(MESSAGE);
  if (client === 'cx') {
    await page.waitForFunction(() => (window as any).cx?.errors);
    await page.evaluate(() => (window as any).cx.errors.flush());
  } else {
    expect(await page.evaluate(() => (window as any).Sentry.flush(10_000))).toBe(true);
  }
  await page.context().close();
}

describe('source maps kept from our own builds', () => {
  it('the same error through cx.js on every deploy host and through @sentry/browser is one issue with original frames; no map is served', {
    timeout: 170_000,
  }, async () => {
    const project = await api('/v1/projects', {
      method: 'POST',
      body: { name: 'Shop', slug: SLUG, environmentHosts: { production: ['*.localhost'], preview: [] } },
    });
    expect(project.status, JSON.stringify(project.body)).toBe(201);
    // Every deploy host is opened below: a new project's previews are protected by default (issue 42).
    expect((await api(`/v1/projects/${SLUG}`, { method: 'PATCH', body: { previewProtection: { enabled: false } } })).status).toBe(200);
    const ingest = await api(`/v1/projects/${SLUG}/keys`, { method: 'POST', body: { kind: 'ingest', name: 'site' } });
    expect(ingest.status).toBe(201);
    const manifest = (await (await fetch(`${svc.base}/v1/w/manifest.json`)).json()) as { files: Record<string, string> };

    // The repository: sources, the esbuild binary committed as a tool, the vendored Sentry SDK, the build.
    const repo = mkdtempSync(path.join(os.tmpdir(), 'repo-maps-'));
    made.push(repo);
    for (const [name, text] of Object.entries(APP_SOURCES)) {
      mkdirSync(path.dirname(path.join(repo, name)), { recursive: true });
      writeFileSync(path.join(repo, name), text);
    }
    mkdirSync(path.join(repo, 'tools'));
    copyFileSync(path.join(ROOT, 'node_modules/@esbuild/linux-x64/bin/esbuild'), path.join(repo, 'tools/esbuild'));
    chmodSync(path.join(repo, 'tools/esbuild'), 0o755);
    mkdirSync(path.join(repo, 'vendor'));
    writeFileSync(path.join(repo, 'vendor/sentry.js'), await sentryBundle());
    gitRepoWith(
      {
        'build.sh': BUILD_SH,
        'pages.mjs': PAGES_MJS,
        'site.json': JSON.stringify({ cx: `${svc.base}${manifest.files['cx.js']}`, dsn: ingest.body.key.dsn }),
      },
      repo,
    );
    const settings = await api(`/v1/projects/${SLUG}/deploys/settings`, {
      method: 'PATCH',
      body: { repoUrl: repo, buildCommand: 'sh build.sh', outputDir: 'out' },
    });
    expect(settings.status, JSON.stringify(settings.body)).toBe(200);

    // Two deploys, the second after an unrelated change: every bundle name moves.
    const first = await deployAndWait();
    writeFileSync(path.join(repo, 'src/banner.ts'), "export const BANNER = 'Summer sale, everything must go';\n");
    git(repo, 'commit', '-q', '-am', 'banner');
    const second = await deployAndWait();
    const production = `http://${SLUG}.localhost:${port}/`;
    const firstBundle = await bundleOf(first.url);
    const secondBundle = await bundleOf(second.url);
    expect(firstBundle).not.toBe(secondBundle);
    await eventually(
      'the production host serves the second deploy',
      async () => ((await bundleOf(production)) === secondBundle ? true : undefined),
      30_000,
      250,
    );

    // The same throw, one page at a time: each deploy's own host and production through cx.js, then @sentry/browser.
    const throws: Array<[string, 'cx' | 'sentry']> = [
      [first.url, 'cx'],
      [second.url, 'cx'],
      [production, 'cx'],
      [`${production}sentry.html`, 'sentry'],
    ];
    for (const [i, [url, client]] of throws.entries()) {
      await throwIn(url, client);
      await occurrences(SLUG, i + 1);
    }

    // One issue for all four, counted once a throw.
    const list = await issuesOf(SLUG);
    expect(list.map((i) => [i.message, i.count])).toEqual([[MESSAGE, throws.length]]);
    const issue = (await api(`/v1/projects/${SLUG}/errors/${list[0]!.id}`)).body.issue;
    // Its stack reads like the source: the top frame is the throwing function in its original file.
    const top = issue.stack.split('\n').find((l: string) => l.trim().startsWith('at '));
    expect(top).toMatch(/^\s+at parsePrice \(src\/price\.ts:5:\d+\)$/);
    expect(issue.culprit).toContain('parsePrice');
    expect(issue.stack).toMatch(/at cartTotal \(src\/cart\.ts:5:\d+\)/);
    expect(issue.stack).toMatch(/at renderCheckout \(src\/checkout\.ts:5:\d+\)/);

    // The newest sample (@sentry/browser's): original frames, the failing line among its context lines.
    const newest = issue.samples[0];
    expect(newest.path).toBe('/sentry.html');
    const frame = newest.frames[0];
    expect(frame.original).toMatchObject({ fn: 'parsePrice', file: 'src/price.ts', line: 5 });
    expect(frame.inApp).toBe(true);
    expect(frame.resolution).toMatchObject({ status: 'resolved', deployId: second.id, mapName: `assets/${secondBundle}.map` });
    expect(frame.context.lines[frame.context.errorIndex]).toBe('    throw new Error(`price is not a number: ${text}`);');
    expect(frame.context.firstLine + frame.context.errorIndex).toBe(5);
    expect(frame.context.lines).toContain('export function parsePrice(text: string): number {');
    // The stack as the browser gave it is kept beside: the hashed bundle, minified.
    expect(newest.minifiedStack).toContain(`/assets/${secondBundle}:1:`);
    expect(newest.minifiedStack).not.toContain('src/price.ts');
    expect(frame.minified.file).toBe(`${production}assets/${secondBundle}`);

    // Each throw resolved through the map of the deploy that served its bundle: a deploy's own host names it, so the
    // first deploy's page still resolves against the first build's map after the second went live.
    const byHost = (url: string) =>
      issue.samples
        .filter((s: any) => s.originHost === new URL(url).host)
        .map((s: any) => ({ original: s.frames[0].original, resolution: s.frames[0].resolution }));
    const resolvedBy = (deployId: string, bundle: string) => ({ deployId, mapName: `assets/${bundle}.map` });
    expect(byHost(first.url)).toEqual([
      { original: frame.original, resolution: { status: 'resolved', match: 'deploy', ...resolvedBy(first.id, firstBundle) } },
    ]);
    expect(byHost(second.url)).toEqual([
      { original: frame.original, resolution: { status: 'resolved', match: 'deploy', ...resolvedBy(second.id, secondBundle) } },
    ]);
    const fromProduction = byHost(production);
    expect(fromProduction).toHaveLength(2);
    for (const s of fromProduction)
      expect(s).toMatchObject({ original: frame.original, resolution: { status: 'resolved', ...resolvedBy(second.id, secondBundle) } });

    // No host serves a map: each answers exactly as a file that is not there.
    const missing = (host: string) => get(new URL('/assets/no-such-file.js', host).href);
    for (const [host, bundle] of [
      [first.url, firstBundle],
      [second.url, secondBundle],
      [production, secondBundle],
    ] as const) {
      const js = await get(new URL(`/assets/${bundle}`, host).href);
      expect(js.status).toBe(200);
      expect(js.body).toContain(`//# sourceMappingURL=${bundle}.map`);
      const map = await get(new URL(`/assets/${bundle}.map`, host).href);
      expect(map).toEqual(await missing(host));
      expect(map.status).toBe(404);
    }
  });
});

describe("sentry-cli's upload for an app built elsewhere", () => {
  it('inject + upload, then @sentry/browser in Chromium: frames resolve by debug id with no release set', { timeout: 120_000 }, async () => {
    const project = await api('/v1/projects', {
      method: 'POST',
      body: { name: 'Uploaded', slug: 'uploaded', environmentHosts: { production: ['*.localhost'], preview: [] } },
    });
    expect(project.status, JSON.stringify(project.body)).toBe(201);
    const ingest = await api('/v1/projects/uploaded/keys', { method: 'POST', body: { kind: 'ingest', name: 'site' } });
    const writer = await api('/v1/projects/uploaded/keys', { method: 'POST', body: { kind: 'live', name: 'ci', scopes: ['sourcemaps:write'] } });
    expect([ingest.status, writer.status]).toEqual([201, 201]);

    // Built elsewhere, as a CI does: bundle, inject, upload. Nothing of it is deployed here.
    const app = await buildApp('elsewhere');
    made.push(app.root);
    const inject = await sentryCli(['sourcemaps', 'inject', app.dist], { cwd: app.root });
    expect(inject.code, inject.stderr).toBe(0);
    const built = await builtFile(app.dist);
    expect(built.debugId).toMatch(/^[0-9a-f-]{36}$/);
    const upload = await sentryUpload(svc.base, writer.body.key.token, 'uploaded', app.dist);
    expect(upload.code, upload.stdout + upload.stderr).toBe(0);

    // Served by a plain static server on loopback, the maps with it (it is not ours to hide them).
    await writeFile(path.join(app.dist, 'sentry.js'), await sentryBundle());
    await writeFile(
      path.join(app.dist, 'index.html'),
      `<!doctype html><html><head><meta charset="utf-8"><title>elsewhere</title><script src="/sentry.js"></script>
<script>Sentry.init({ dsn: ${JSON.stringify(ingest.body.key.dsn)}, tracesSampleRate: 0 });</script>
<script src="${built.servedPath}"></script></head><body><script>checkout();</script></body></html>`,
    );
    const files = new Map<string, Buffer>();
    for (const name of ['index.html', 'sentry.js']) files.set(`/${name}`, await readFile(path.join(app.dist, name)));
    for (const name of await readdir(path.join(app.dist, 'assets'))) files.set(`/assets/${name}`, await readFile(path.join(app.dist, 'assets', name)));
    const server = http.createServer((req, res) => {
      const p = req.url === '/' ? '/index.html' : (req.url ?? '');
      const body = files.get(p);
      if (!body) return res.writeHead(404).end();
      res.writeHead(200, { 'content-type': p.endsWith('.html') ? 'text/html; charset=utf-8' : 'text/javascript' }).end(body);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    try {
      const site = `http://app.localhost:${(server.address() as { port: number }).port}/`;
      const page = await newPage();
      const thrown = page.waitForEvent('pageerror');
      await page.goto(site);
      expect((await thrown).message).toContain('payment failed elsewhere');
      expect(await page.evaluate(() => (window as any).Sentry.flush(10_000))).toBe(true);
      await page.context().close();
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }

    const [only] = await occurrences('uploaded', 1);
    const issue = (await api(`/v1/projects/uploaded/errors/${only!.id}`)).body.issue;
    expect(issue.message).toBe('payment failed elsewhere');
    const sample = issue.samples[0];
    expect(sample.release ?? sample.gitSha ?? null).toBeNull();
    const frame = sample.frames[0];
    expect(frame.original).toMatchObject({ fn: 'chargeCard', file: 'src/lib.js', line: 2 });
    expect(frame.resolution).toMatchObject({ status: 'resolved', match: 'debug_id', deployId: null, debugId: built.debugId });
    expect(frame.context.lines[frame.context.errorIndex]).toContain("throw new Error('payment failed elsewhere')");
    expect(issue.stack).toMatch(/at chargeCard \(src\/lib\.js:2:\d+\)/);
  });
});
