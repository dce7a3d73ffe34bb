import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApi, createProject, sessionHeaders, signUpAndSignIn } from '../../test/support/accounts.ts';
import { prng } from '../../test/support/prng.ts';
import { consoleBundle } from './console-assets.ts';
import { CONSOLE_PAGES } from './console-routes.ts';

/**
 * How the console is served (api/console): its pages and bundle, the JavaScript budget (issue 17: at most 100 KB
 * gzipped before the first screen), and the console's new API surface under random input.
 */
let t: Awaited<ReturnType<typeof buildTestApi>>;
let cookie: string;
let slug: string;

beforeAll(async () => {
  t = await buildTestApi();
  cookie = (await signUpAndSignIn(t.app, t.platform)).cookie;
  slug = (await createProject(t.app, cookie)).slug;
});
afterAll(async () => t?.close());

const JS_BUDGET_GZIP_BYTES = 100 * 1024;

describe('the console is served by the API', () => {
  it('answers every console page with index.html, never cached, under a strict CSP', async () => {
    for (const url of [
      '/',
      '/sign-in',
      '/cli/device?user_code=ABCD-EFGH',
      '/projects',
      `/projects/${slug}/errors`,
      `/projects/${slug}/errors/grp_1`,
      '/projects/x/deploys/dep_1',
    ]) {
      const res = await t.app.inject({ url });
      expect(res.statusCode, url).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
      expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(res.body).toMatch(/<script type="module" src="\/console\/assets\/console\.[0-9a-f]{12}\.js"><\/script>/);
    }
    // The API's own 404 stays JSON for what is not a console page.
    const other = await t.app.inject({ url: '/elsewhere' });
    expect([other.statusCode, other.json().error]).toEqual([404, 'not_found']);
    expect(CONSOLE_PAGES).toContain('/projects/*');
  });

  it('serves the hashed bundle for a year, gzip when asked, HEAD too; an unknown file is a JSON 404', async () => {
    const html = (await t.app.inject({ url: '/' })).body;
    const files = [...html.matchAll(/\/console\/assets\/[^"]+/g)].map((m) => m[0]);
    expect(files.some((f) => f.endsWith('.css'))).toBe(true);
    for (const f of files) {
      const plain = await t.app.inject({ url: f });
      expect(plain.statusCode).toBe(200);
      expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable');
      expect(plain.headers['content-type']).toMatch(f.endsWith('.js') ? /^text\/javascript/ : /^text\/css/);
      const gz = await t.app.inject({ url: f, headers: { 'accept-encoding': 'gzip, br' } });
      expect(gz.headers['content-encoding']).toBe('gzip');
      expect(gunzipSync(gz.rawPayload).equals(plain.rawPayload)).toBe(true);
      const head = await t.app.inject({ method: 'HEAD', url: f });
      expect([head.statusCode, head.body]).toEqual([200, '']);
    }
    const missing = await t.app.inject({ url: '/console/assets/console.000000000000.js' });
    expect([missing.statusCode, missing.json().error]).toEqual([404, 'not_found']);
  });

  it('keeps the JavaScript a first visit loads within 100 KB gzipped', async () => {
    const bundle = await consoleBundle();
    expect(bundle.entryScript.gzip.length).toBeLessThanOrEqual(JS_BUDGET_GZIP_BYTES);
    // One script: nothing else is fetched before the first screen.
    expect([...bundle.assets.keys()].filter((n) => n.endsWith('.js'))).toEqual([bundle.entryScript.name]);
  });

  it('needs no credential for its pages, and the pages hold no data: every datum comes from /v1 with the session', async () => {
    const res = await t.app.inject({ url: `/projects/${slug}/errors` });
    expect(res.statusCode).toBe(200);
    expect(res.body).not.toContain(slug);
  });
});

describe('the console routes and its API additions under random input', () => {
  it('never answer 5xx, and answer JSON errors with a code', async () => {
    const rnd = prng(17);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const text = (n: number) => Array.from({ length: n }, () => String.fromCharCode(Math.floor(rnd() * 0x2fff))).join('');
    const seen = new Map<number, number>();
    for (let i = 0; i < 300; i++) {
      const method = pick<'GET' | 'HEAD' | 'POST' | 'PUT' | 'DELETE'>(['GET', 'GET', 'HEAD', 'POST', 'PUT', 'DELETE']);
      const asset = await t.app.inject({
        method,
        url: `/console/assets/${pick([encodeURIComponent(text(12)), '..%2F..%2Fpackage.json', 'console.js', '%00', 'a'.repeat(400)])}`,
      });
      const pageRes = await t.app.inject({
        method,
        url: `/projects/${encodeURIComponent(text(8))}/${pick(['errors', 'deploys/x', encodeURIComponent(text(5))])}?${pick(['', `q=${encodeURIComponent(text(10))}`, '%%%'])}`,
      });
      const list = await t.app.inject({
        url: `/v1/projects/${slug}/errors?${pick(['sort=', 'sort=lastSeen', 'sort=' + encodeURIComponent(text(4)), ''])}&${pick(['query=' + encodeURIComponent(text(Math.floor(rnd() * 260))), 'query=%25_%5C', 'cursor=' + encodeURIComponent(text(20)), 'cursor=WzEsImEiXQ', 'cursor=WyJ4IiwiYSJd', ''])}`,
        headers: sessionHeaders(cookie),
      });
      const bulk = await t.app.inject({
        method: 'POST',
        url: `/v1/projects/${slug}/errors/bulk`,
        headers: { ...sessionHeaders(cookie), 'content-type': 'application/json' },
        payload: pick([
          JSON.stringify({
            action: pick(['resolve', 'ignore', 'reopen', text(5)]),
            groupIds: Array.from({ length: Math.floor(rnd() * 120) }, () => pick(['grp_1', text(10), '', 'x'.repeat(70)])),
          }),
          JSON.stringify({ action: 'resolve' }),
          JSON.stringify([1, 2]),
          text(40),
          '{"action":"resolve","groupIds":[1,null]}',
        ]),
      });
      for (const res of [asset, pageRes, list, bulk]) {
        seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1);
        expect(res.statusCode, `${res.body.slice(0, 200)}`).toBeLessThan(500);
        if (res.statusCode >= 400 && method !== 'HEAD') expect(typeof res.json().error).toBe('string');
      }
    }
    expect(seen.get(200)).toBeGreaterThan(0);
    expect(seen.get(400)).toBeGreaterThan(0);
  });
});
