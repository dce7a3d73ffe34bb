import { readFileSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { IngestProject } from '../../test/support/ingest-fixtures.ts';
import { prng } from '../../test/support/prng.ts';
import { startEdgeWithSite, type TestEdge } from '../../test/support/test-edge.ts';
import { POSTHOG_JS_VERSION, POSTHOG_REMOTE_CONFIG, POSTHOG_SCRIPTS, posthogFiles, posthogRemoteConfigScript, serviceHostOf } from './posthog-assets.ts';

/**
 * What PostHog's snippet and posthog-js load from the service (posthog-assets.ts): posthog-js's own files under
 * `/static/` from the installed package (allowed names only, ETag, gzip, CORS), its remote config as JSON and as the
 * script posthog-js loads, and a site's own `/static/` files left to the site.
 */
const require = createRequire(import.meta.url);
const DIST = path.join(path.dirname(require.resolve('posthog-js/package.json')), 'dist');
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));

let edge: TestEdge;
let p: IngestProject;
beforeAll(async () => {
  ({ edge, project: p } = await startEdgeWithSite());
});
afterAll(async () => edge?.close());

/** One request with exactly these headers (a Host of ours included); the answer's headers and raw bytes. */
function request(method: string, url: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${edge.base}${url}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.setTimeout(15_000, () => req.destroy(new Error(`no answer: ${method} ${url}`)));
    req.on('error', reject);
    req.end();
  });
}
const get = (url: string, headers: Record<string, string> = {}, method = 'GET') => request(method, url, headers);

describe("posthog-js's files", () => {
  it('come from the pinned posthog-js of dependencies (in the production image), each allowed name present in its dist', () => {
    expect(pkg.dependencies['posthog-js']).toBe(POSTHOG_JS_VERSION);
    expect(pkg.devDependencies?.['posthog-js']).toBeUndefined();
    const dist = new Set(readdirSync(DIST));
    for (const name of POSTHOG_SCRIPTS) {
      expect(dist.has(name), name).toBe(true);
      expect(dist.has(`${name}.map`), `${name}.map`).toBe(true);
    }
  });

  it('name every extension posthog-js loads by kind (`/static/<kind>.js`)', () => {
    // The kinds the SDK's code passes to loadExternalDependency (lib/src), the web-vitals flavours and the integrations.
    const src = path.join(DIST, '..', 'lib', 'src');
    const kinds = new Set<string>();
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const f = path.join(dir, e.name);
        if (e.isDirectory()) walk(f);
        else if (e.name.endsWith('.js')) {
          const text = readFileSync(f, 'utf8');
          for (const m of text.matchAll(/loadExternalDependency\)?(?:\.call)?\([^,]+(?:,[^,]+)?, '([a-z0-9-]+)'/g)) kinds.add(m[1]!);
          for (const m of text.matchAll(/'(web-vitals[a-z-]*|[a-z-]+-integration|lazy-recorder|posthog-recorder)'/g)) kinds.add(m[1]!);
        }
      }
    };
    walk(src);
    kinds.delete('remote-config'); // `/array/<key>/config.js`
    kinds.delete('toolbar'); // PostHog's app: the service has none
    expect(kinds.size).toBeGreaterThan(8);
    expect([...kinds].filter((k) => !(POSTHOG_SCRIPTS as readonly string[]).includes(`${k}.js`))).toEqual([]);
  });

  it('serve array.js as the snippet loads it: JavaScript, any origin, ETag and 304, gzip', async () => {
    const res = await get('/static/array.js', { origin: 'http://shop.example' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    expect(res.headers['cache-control']).toBe('public, max-age=300, must-revalidate');
    expect(res.body.equals(readFileSync(path.join(DIST, 'array.js')))).toBe(true);
    const etag = res.headers.etag as string;
    expect(etag).toMatch(/^"[0-9a-f]{16}"$/);
    const again = await get('/static/array.js?v=1.0.0', { 'if-none-match': `W/${etag}` });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    const gz = await get('/static/surveys.js?v=1', { 'accept-encoding': 'gzip, br' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(gz.body).equals(readFileSync(path.join(DIST, 'surveys.js')))).toBe(true);
    const map = await get('/static/array.js.map');
    expect(map.headers['content-type']).toBe('application/json');
    const head = await get('/static/array.js', {}, 'HEAD');
    expect(head.status).toBe(200);
    expect(Number(head.headers['content-length'])).toBe(res.body.length);
    expect((await get('/static/array.js', {}, 'POST')).status).toBe(405);
  });

  it('serve the versioned path: immutable at the installed version, revalidated at another', async () => {
    const exact = await get(`/static/${POSTHOG_JS_VERSION}/lazy-recorder.js`);
    expect(exact.status).toBe(200);
    expect(exact.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    const other = await get('/static/1.2.3/lazy-recorder.js');
    expect(other.status).toBe(200);
    expect(other.headers['cache-control']).toMatch(/max-age=300/);
    expect(other.body.equals(exact.body)).toBe(true);
  });

  it('never read a name outside the list: traversal, other dist files and other versions go on to the next route', async () => {
    for (const url of [
      '/static/module.js',
      '/static/..%2Fpackage.json',
      '/static/../package.json',
      '/static/%2e%2e/%2e%2e/package.json',
      '/static/x/array.js',
      '/static/array.js%00',
      '/static/ARRAY.JS',
      '/static/toolbar.js',
    ]) {
      const res = await get(url);
      expect(res.status, url).toBe(404);
      expect(res.body.toString(), url).not.toContain('posthog');
    }
  });

  it("leave a site's own /static/ files to the site", async () => {
    const site = await get('/static/array.js', { host: `${p.slug}.localhost` });
    expect(site.body.toString()).not.toContain('__PosthogExtensions__');
    const own = await get('/static/array.js', { host: 'localhost:8080' });
    expect(own.body.toString()).toContain('__PosthogExtensions__');
    const ours = serviceHostOf({ PUBLIC_BASE_URL: 'https://errors.example.com', PORT: 8080, SITES_DOMAIN: 'sites.example.com' });
    expect(['errors.example.com', 'errors.example.com:443', 'localhost:8080', '127.0.0.1:1', '[::1]:8080'].map(ours)).toEqual([true, true, true, true, true]);
    expect(['shop.sites.example.com', 'shop.example.org'].map(ours)).toEqual([false, false]);
  });

  it('read a file once, however many ask at once', async () => {
    const files = posthogFiles();
    const [a, b] = [files.get('web-vitals.js'), files.get('web-vitals.js')];
    expect(a).toBe(b);
    expect((await a)!.body.length).toBeGreaterThan(1000);
    expect(files.get('../package.json')).toBeUndefined();
    expect(await posthogFiles(DIST, ['missing.js']).get('missing.js')).toBeNull();
  });
});

describe("posthog-js's remote config", () => {
  it('is the script posthog-js loads first, which sets the config with what the service lacks switched off', async () => {
    const res = await get(`/array/${p.ingestKey}/config.js`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(res.headers['access-control-allow-origin']).toBe('*');
    const window: Record<string, any> = {};
    vm.runInNewContext(res.body.toString(), { window });
    const set = window._POSTHOG_REMOTE_CONFIG[p.ingestKey];
    expect(set.siteApps).toEqual([]);
    expect(set.config).toMatchObject({ sessionRecording: false, surveys: false, heatmaps: false, autocaptureExceptions: false, hasFeatureFlags: true });
    expect(set.config).toEqual(POSTHOG_REMOTE_CONFIG(p.ingestKey));
  });

  it('is JSON at /array/<key>/config; a key no project has is 404 on both', async () => {
    const res = await get(`/array/${p.ingestKey}/config`, { origin: 'http://shop.example' });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString())).toEqual(POSTHOG_REMOTE_CONFIG(p.ingestKey));
    expect(res.headers['access-control-allow-origin']).toBe('http://shop.example');
    for (const url of ['/array/cak_live_nope/config', '/array/cak_live_nope/config.js', '/array/phc_x/config.js']) {
      const missing = await get(url);
      expect(missing.status, url).toBe(404);
      expect(JSON.parse(missing.body.toString()).error).toBe('not_found');
    }
  });

  it('cannot be broken out of by the key it embeds', () => {
    const script = posthogRemoteConfigScript('cak_</script><script>alert(1)//\u2028');
    expect(script).not.toContain('</script>');
    const window: Record<string, any> = {};
    vm.runInNewContext(script, { window });
    expect(Object.keys(window._POSTHOG_REMOTE_CONFIG)).toEqual(['cak_</script><script>alert(1)//\u2028']);
  });
});

describe('the routes under random input', () => {
  it('never answer 5xx and keep serving', async () => {
    const rnd = prng(40);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const ascii = (n: number) => Array.from({ length: n }, () => String.fromCharCode(33 + Math.floor(rnd() * 93))).join('');
    const segment = () => pick([...POSTHOG_SCRIPTS, `${pick([...POSTHOG_SCRIPTS])}.map`, ascii(8).replace(/[/?#]/g, 'x'), '..', '%2e%2e', '']);
    for (let i = 0; i < 200; i++) {
      const url = pick([
        () => `/static/${segment()}`,
        () => `/static/${pick([POSTHOG_JS_VERSION, '1.0.0', ascii(6).replace(/[/?#]/g, 'x'), '1.2.3-beta.1'])}/${segment()}`,
        () => `/array/${pick([p.ingestKey, ascii(10).replace(/[/?#]/g, 'x')])}/${pick(['config', 'config.js'])}`,
      ])();
      const headers: Record<string, string> = {};
      if (rnd() < 0.5) headers.host = pick(['localhost', `${p.slug}.localhost`, ascii(12).replace(/[/?#@\\:]/g, 'x'), '127.0.0.1:9']);
      if (rnd() < 0.3) headers['if-none-match'] = pick(['*', ascii(20), '"x", W/"y"']);
      if (rnd() < 0.3) headers['accept-encoding'] = pick(['gzip', ascii(10), '']);
      const res = await request(pick(['GET', 'GET', 'HEAD', 'POST', 'OPTIONS', 'DELETE']), `${url}${pick(['', '?v=1', `?${ascii(5)}`])}`, headers);
      expect(res.status, url).toBeLessThan(500);
    }
    expect((await get('/static/array.js')).status).toBe(200);
  });
});
