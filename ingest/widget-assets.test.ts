import { gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestEdge, type TestEdge } from '../test/support/test-edge.ts';
import { bundleBrowserScript, CX_SESSIONS_SOURCE, CX_SOURCE } from './widget-assets.ts';

/**
 * cx.js as the edge serves it (§4.2 `/v1/w/*`): its size budget, a versioned immutable URL, ETag / 304, gzip; and its
 * sessions add-on cx-sessions.js (issue 40), served the same way within a budget of its own.
 */
let edge: TestEdge;
beforeAll(async () => {
  edge = await startTestEdge();
});
afterAll(async () => edge?.close());

describe('cx.js, the browser client', () => {
  it('is at most 3 KB gzipped (the build is deterministic)', async () => {
    const bundle = await bundleBrowserScript(CX_SOURCE);
    expect(gzipSync(bundle, { level: 9 }).length).toBeLessThanOrEqual(3 * 1024);
  });

  it('is served at a versioned, immutable URL named by the manifest, and at cx.js revalidated by ETag', async () => {
    const manifest = await (await fetch(`${edge.base}/v1/w/manifest.json`)).json();
    const versioned: string = manifest.files['cx.js'];
    expect(versioned).toMatch(/^\/v1\/w\/cx\.[0-9a-f]{12}\.js$/);

    const res = await fetch(`${edge.base}${versioned}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const etag = res.headers.get('etag')!;
    expect(versioned).toContain(etag.replace(/"/g, ''));
    const code = await res.text();
    expect(code).toContain('/service/v1/');
    expect(code).toContain('errors/i');

    const latest = await fetch(`${edge.base}/v1/w/cx.js`);
    expect(latest.headers.get('cache-control')).toMatch(/max-age=300/);
    expect(await latest.text()).toBe(code);
    const again = await fetch(`${edge.base}/v1/w/cx.js`, { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');
  });

  it('is sent gzipped to clients that take it; other names are a JSON 404 and writes a 405', async () => {
    const raw = await new Promise<{ encoding: string | undefined; body: Buffer }>((resolve, reject) => {
      void import('node:http').then(({ get }) =>
        get(`${edge.base}/v1/w/cx.js`, { headers: { 'accept-encoding': 'gzip' } }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => resolve({ encoding: res.headers['content-encoding'], body: Buffer.concat(chunks) }));
        }).on('error', reject),
      );
    });
    expect(raw.encoding).toBe('gzip');
    expect(gunzipSync(raw.body).toString()).toContain('/service/v1/');
    const missing = await fetch(`${edge.base}/v1/w/nope.js`);
    expect(missing.status).toBe(404);
    expect((await missing.json()).error).toBe('not_found');
    expect((await fetch(`${edge.base}/v1/w/cx.js`, { method: 'POST' })).status).toBe(405);
    const head = await fetch(`${edge.base}/v1/w/cx.js`, { method: 'HEAD', headers: { 'accept-encoding': 'identity' } });
    expect(head.status).toBe(200);
    expect(Number(head.headers.get('content-length'))).toBe((await bundleBrowserScript(CX_SOURCE)).length);
  });
});

describe('cx-sessions.js, the sessions add-on (issue 40)', () => {
  it('is at most 1.5 KB gzipped, and holds sessions where cx.js does not', async () => {
    const bundle = await bundleBrowserScript(CX_SESSIONS_SOURCE);
    expect(gzipSync(bundle, { level: 9 }).length).toBeLessThanOrEqual(1.5 * 1024);
    expect(bundle.toString()).toContain('sessions/i');
    expect((await bundleBrowserScript(CX_SOURCE)).toString()).not.toContain('sessions/i');
  });

  it('is named by the manifest at a versioned, immutable URL, and served at cx-sessions.js revalidated by ETag, gzipped', async () => {
    const manifest = await (await fetch(`${edge.base}/v1/w/manifest.json`)).json();
    const versioned: string = manifest.files['cx-sessions.js'];
    expect(versioned).toMatch(/^\/v1\/w\/cx-sessions\.[0-9a-f]{12}\.js$/);
    expect(versioned).not.toBe(manifest.files['cx.js']);
    const res = await fetch(`${edge.base}${versioned}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    const etag = res.headers.get('etag')!;
    expect(versioned).toContain(etag.replace(/"/g, ''));
    const code = await res.text();
    expect(code).toBe((await bundleBrowserScript(CX_SESSIONS_SOURCE)).toString());

    const latest = await fetch(`${edge.base}/v1/w/cx-sessions.js`);
    expect(latest.headers.get('cache-control')).toMatch(/max-age=300/);
    expect(await latest.text()).toBe(code);
    expect((await fetch(`${edge.base}/v1/w/cx-sessions.js`, { headers: { 'if-none-match': etag } })).status).toBe(304);
    const gz = await new Promise<{ encoding: string | undefined; body: Buffer }>((resolve, reject) => {
      void import('node:http').then(({ get }) =>
        get(`${edge.base}/v1/w/cx-sessions.js`, { headers: { 'accept-encoding': 'gzip' } }, (r) => {
          const chunks: Buffer[] = [];
          r.on('data', (c) => chunks.push(c));
          r.on('end', () => resolve({ encoding: r.headers['content-encoding'], body: Buffer.concat(chunks) }));
        }).on('error', reject),
      );
    });
    expect(gz.encoding).toBe('gzip');
    expect(gunzipSync(gz.body).toString()).toBe(code);
  });
});
