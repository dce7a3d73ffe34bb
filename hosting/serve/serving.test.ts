import http from 'node:http';
import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { installSiteHosting } from '../../api/sites/site-hosting.ts';
import { addLiveSite, createIngestProject } from '../../test/support/ingest-fixtures.ts';
import { startTestEdge, type TestEdge } from '../../test/support/test-edge.ts';
import { compileSite } from '../build/compile-site.ts';
import { createSiteServer } from './site-server.ts';
import { IMMUTABLE, HTML_CACHE, REVALIDATE, chooseEncoding, parseRange } from './serve-request.ts';

/**
 * Issue 42 "Serving", through real HTTP against the edge (uWebSockets.js) with a real artifact compiled at build end
 * (compileSite): `_redirects` and `_headers` forms, clean URLs and the trailing-slash rule, the SPA fallback (from
 * `_redirects` and from the `spa` setting), validators (304), ranges (206, 416), HEAD, br/gzip/identity with Vary,
 * immutable vs no-cache, and what is never served by path.
 */
let edge: TestEdge;
const hosts: Record<string, string> = {};
const page = (title: string) => `<!doctype html><title>${title}</title><main>${title} ${'lorem ipsum dolor sit amet '.repeat(80)}</main>`;
const js = `export const app = () => ${JSON.stringify('x'.repeat(3000))};\n`;
const binary = Buffer.from(Array.from({ length: 4096 }, (_, i) => i % 251));
const notes: string[] = [];

async function site(files: Record<string, string | Buffer>, spa?: boolean): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hosting-'));
  for (const [rel, body] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
    await writeFile(path.join(dir, rel), body);
  }
  return dir;
}

async function live(name: string, dir: string): Promise<void> {
  const p = await createIngestProject(edge.platform);
  await addLiveSite(edge.platform, p.projectId, dir);
  hosts[name] = `${p.slug}.localhost`;
}

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

function get(name: string, p: string, headers: Record<string, string> = {}, method = 'GET'): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${edge.base}${p}`, { method, headers: { host: hosts[name]!, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  edge = await startTestEdge({}, { sites: true });
  const main = await site({
    'index.html': page('home'),
    'about.html': page('about'),
    'docs/index.html': page('docs'),
    'assets/index-4PKGQX7N.js': js,
    'assets/logo.svg': `<svg xmlns="http://www.w3.org/2000/svg">${'<g/>'.repeat(400)}</svg>`,
    'data.bin': binary,
    'robots.txt': 'User-agent: *',
    'custom-cache.txt': 'cache me briefly',
    'forced.html': page('forced'),
    'hidden.html': page('hidden'),
    'existing.js.gz': 'the build wrote this one itself',
    'existing.js': js,
    'assets/index-4PKGQX7N.js.map': JSON.stringify({ version: 3, sources: ['src/secret.ts'], sourcesContent: ['const key = 1;'.repeat(200)] }),
    '404.html': page('not found'),
    _redirects: [
      '/old /about 301',
      '/blog/:slug /posts/:slug 302',
      '/ext/* https://example.com/docs/:splat 307',
      '/robots.txt /about 301',
      '/forced.html /about 302!',
      '/secret/* /hidden.html 404',
      '/proxy/* https://evil.example/:splat 200',
      '/* /index.html 200',
    ].join('\n'),
    _headers: [
      '/assets/*',
      '  X-Asset: yes',
      '/*',
      '  X-Frame-Options: DENY',
      '/custom-cache.txt',
      '  Cache-Control: public, max-age=60',
      '  Set-Cookie: a=1',
    ].join('\n'),
  });
  await compileSite(main, { note: (t) => notes.push(t) });
  await live('main', main);

  const spa = await site({ 'index.html': page('spa shell'), 'assets/app-1a2b3c4d.js': js });
  await compileSite(spa, { spa: true, note: () => undefined });
  await live('spa', spa);

  // A deploy from before build-end compilation: no .cx/site.json, served as it was.
  const old = await site({ 'index.html': page('old'), 'about.html': page('old about'), _redirects: '/* /index.html 200', 'app.js': js });
  await live('old', old);
});
afterAll(async () => edge?.close());

describe('build end: the rules compiled and reported', () => {
  it('says how many rules it kept and which lines it ignored, with why', () => {
    expect(notes).toContain('hosting: 7 redirect rules, 3 header rules; 10 files precompressed');
    expect(notes).toContain("hosting: _redirects line 7 ignored: a 200 rule must stay on the site: another origin is only a redirect's target (no proxying)");
    expect(notes).toContain('hosting: _headers line 7 ignored: Set-Cookie is set by the server, not by _headers');
  });
});

describe('_redirects through HTTP', () => {
  it('redirects with each status, placeholders and splats, keeping the query string', async () => {
    expect(await get('main', '/old?x=1')).toMatchObject({ status: 301, headers: { location: '/about?x=1' } });
    expect(await get('main', '/blog/hello-world')).toMatchObject({ status: 302, headers: { location: '/posts/hello-world' } });
    expect(await get('main', '/ext/a/b')).toMatchObject({ status: 307, headers: { location: 'https://example.com/docs/a/b' } });
  });

  it('a file shadows a rule unless forced (!)', async () => {
    const robots = await get('main', '/robots.txt');
    expect([robots.status, robots.body.toString()]).toEqual([200, 'User-agent: *']);
    expect(await get('main', '/forced.html')).toMatchObject({ status: 302, headers: { location: '/about' } });
  });

  it('a 404 rule serves its target with 404; a refused proxy rule is not there (the SPA fallback answers)', async () => {
    const secret = await get('main', '/secret/anything');
    expect(secret.status).toBe(404);
    expect(secret.body.toString()).toContain('hidden');
    const proxied = await get('main', '/proxy/x');
    expect(proxied.status).toBe(200);
    expect(proxied.body.toString()).toContain('home');
  });

  it('a client-routed deep link serves /index.html with 200 (from `/* /index.html 200`, and from the spa setting)', async () => {
    for (const name of ['main', 'spa']) {
      const deep = await get(name, '/users/42');
      expect(deep.status, name).toBe(200);
      expect(deep.headers['content-type'], name).toBe('text/html; charset=utf-8');
      expect(deep.headers['cache-control'], name).toBe(HTML_CACHE);
    }
    expect((await get('spa', '/users/42')).body.toString()).toContain('spa shell');
    // Real files still win over the fallback.
    expect((await get('spa', '/assets/app-1a2b3c4d.js')).headers['content-type']).toBe('text/javascript; charset=utf-8');
  });
});

describe('_headers through HTTP', () => {
  it('applies every matching rule, may override Cache-Control, never sets a refused header', async () => {
    const asset = await get('main', '/assets/index-4PKGQX7N.js');
    expect(asset.headers).toMatchObject({ 'x-asset': 'yes', 'x-frame-options': 'DENY' });
    const custom = await get('main', '/custom-cache.txt');
    expect(custom.headers['cache-control']).toBe('public, max-age=60');
    expect(custom.headers['set-cookie']).toBeUndefined();
    expect((await get('main', '/about')).headers['x-asset']).toBeUndefined();
  });
});

describe('clean URLs and the trailing-slash rule', () => {
  it('/about serves about.html; /about/ redirects to /about; /docs redirects to /docs/ which serves docs/index.html', async () => {
    const about = await get('main', '/about');
    expect([about.status, about.body.toString().includes('about')]).toEqual([200, true]);
    expect(await get('main', '/about/?q=1')).toMatchObject({ status: 308, headers: { location: '/about?q=1' } });
    expect(await get('main', '/docs')).toMatchObject({ status: 308, headers: { location: '/docs/' } });
    const docs = await get('main', '/docs/');
    expect([docs.status, docs.body.toString().includes('docs')]).toEqual([200, true]);
    expect((await get('main', '/about.html')).status).toBe(200);
  });
});

describe('HTTP as browsers and CDNs expect', () => {
  it('a strong ETag and Last-Modified; If-None-Match and If-Modified-Since answer 304 without a body', async () => {
    const first = await get('main', '/data.bin');
    expect(first.status).toBe(200);
    expect(first.headers.etag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(first.headers['last-modified']).toBeTruthy();
    const again = await get('main', '/data.bin', { 'if-none-match': first.headers.etag! });
    expect([again.status, again.body.length, again.headers.etag]).toEqual([304, 0, first.headers.etag]);
    expect((await get('main', '/data.bin', { 'if-none-match': '"other", W/' + first.headers.etag })).status).toBe(304);
    expect((await get('main', '/data.bin', { 'if-none-match': '"other"' })).status).toBe(200);
    expect((await get('main', '/data.bin', { 'if-modified-since': first.headers['last-modified']! })).status).toBe(304);
    expect((await get('main', '/data.bin', { 'if-modified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' })).status).toBe(200);
    // A changed file (a new deploy) has another ETag: the build-end hash, not a date.
    expect(first.headers.etag).not.toBe((await get('main', '/robots.txt')).headers.etag);
  });

  it('Range: one range is 206 with Content-Range; past the end 416 with bytes */size; several ranges are answered whole', async () => {
    const part = await get('main', '/data.bin', { range: 'bytes=100-199' });
    expect([part.status, part.headers['content-range'], part.body.equals(binary.subarray(100, 200))]).toEqual([206, 'bytes 100-199/4096', true]);
    const suffix = await get('main', '/data.bin', { range: 'bytes=-10' });
    expect([suffix.status, suffix.body.equals(binary.subarray(4086))]).toEqual([206, true]);
    const open = await get('main', '/data.bin', { range: 'bytes=4000-' });
    expect([open.status, open.headers['content-range'], open.body.length]).toEqual([206, 'bytes 4000-4095/4096', 96]);
    const past = await get('main', '/data.bin', { range: 'bytes=5000-6000' });
    expect([past.status, past.headers['content-range']]).toEqual([416, 'bytes */4096']);
    const multi = await get('main', '/data.bin', { range: 'bytes=0-1,5-6' });
    expect([multi.status, multi.body.length]).toEqual([200, 4096]);
    // If-Range with another ETag: the whole file.
    expect((await get('main', '/data.bin', { range: 'bytes=0-1', 'if-range': '"stale"' })).status).toBe(200);
    // A range of a compressible file is of its identity bytes, never of the compressed sibling.
    const textPart = await get('main', '/assets/index-4PKGQX7N.js', { range: 'bytes=0-5', 'accept-encoding': 'br, gzip' });
    expect([textPart.status, textPart.headers['content-encoding'], textPart.body.toString()]).toEqual([206, undefined, js.slice(0, 6)]);
  });

  it('HEAD: the headers and length of GET, no body', async () => {
    const head = await get('main', '/data.bin', {}, 'HEAD');
    expect([head.status, head.headers['content-length'], head.body.length, head.headers.etag]).toEqual([
      200,
      '4096',
      0,
      (await get('main', '/data.bin')).headers.etag,
    ]);
  });

  it('br, gzip or identity by Accept-Encoding, always with Vary: Accept-Encoding; q=0 refuses one', async () => {
    const br = await get('main', '/assets/index-4PKGQX7N.js', { 'accept-encoding': 'gzip, deflate, br' });
    expect([br.headers['content-encoding'], br.headers.vary]).toEqual(['br', 'Accept-Encoding']);
    expect(zlib.brotliDecompressSync(br.body).toString()).toBe(js);
    const gz = await get('main', '/assets/index-4PKGQX7N.js', { 'accept-encoding': 'gzip, br;q=0' });
    expect(gz.headers['content-encoding']).toBe('gzip');
    expect(zlib.gunzipSync(gz.body).toString()).toBe(js);
    const plain = await get('main', '/assets/index-4PKGQX7N.js');
    expect([plain.headers['content-encoding'], plain.headers.vary, plain.body.toString()]).toEqual([undefined, 'Accept-Encoding', js]);
    // Each representation has its own ETag, and its own 304.
    expect(new Set([br.headers.etag, gz.headers.etag, plain.headers.etag]).size).toBe(3);
    expect((await get('main', '/assets/index-4PKGQX7N.js', { 'accept-encoding': 'br', 'if-none-match': br.headers.etag! })).status).toBe(304);
    // A small or binary file is not compressed and does not vary.
    const small = await get('main', '/robots.txt', { 'accept-encoding': 'br' });
    expect([small.headers['content-encoding'], small.headers.vary]).toEqual([undefined, undefined]);
    // An HTML page and an SVG are compressed too.
    expect((await get('main', '/about', { 'accept-encoding': 'br' })).headers['content-encoding']).toBe('br');
    expect((await get('main', '/assets/logo.svg', { 'accept-encoding': 'gzip' })).headers['content-encoding']).toBe('gzip');
  });

  it('immutable for content-hashed names, no-cache for HTML, revalidation for the rest; types from mime-types', async () => {
    expect((await get('main', '/assets/index-4PKGQX7N.js')).headers['cache-control']).toBe(IMMUTABLE);
    expect((await get('main', '/')).headers['cache-control']).toBe(HTML_CACHE);
    expect((await get('main', '/about')).headers['cache-control']).toBe(HTML_CACHE);
    const svg = await get('main', '/assets/logo.svg');
    expect([svg.headers['cache-control'], svg.headers['content-type']]).toEqual([REVALIDATE, 'image/svg+xml']);
    expect((await get('main', '/data.bin')).headers['content-type']).toBe('application/octet-stream');
  });

  it('never serves .cx/, the compressed siblings it wrote, or the rule files by path; a sibling the build wrote is its own', async () => {
    for (const p of ['/.cx/site.json', '/assets/index-4PKGQX7N.js.br', '/assets/index-4PKGQX7N.js.gz', '/_redirects', '/_headers']) {
      const res = await get('main', p);
      // The SPA fallback answers whatever has no file: the page, never the hidden bytes.
      expect(res.body.toString(), p).toContain('home');
    }
    // A source map's compressed siblings are no way around its opt-in.
    for (const p of ['/assets/index-4PKGQX7N.js.map', '/assets/index-4PKGQX7N.js.map.br', '/assets/index-4PKGQX7N.js.map.gz']) {
      const res = await get('main', p, { 'accept-encoding': 'br' });
      const body = res.headers['content-encoding'] === 'br' ? zlib.brotliDecompressSync(res.body).toString() : res.body.toString();
      expect(body, p).toContain('home');
      expect(body, p).not.toContain('secret');
    }
    expect((await get('main', '/existing.js.gz')).body.toString()).toBe('the build wrote this one itself');
    expect((await get('main', '/existing.js', { 'accept-encoding': 'gzip' })).headers['content-encoding']).toBeUndefined();
  });

  it('a deploy from before build-end compilation serves as it did: no rules, an ETag from its bytes, clean URLs', async () => {
    expect((await get('old', '/users/42')).status).toBe(404);
    const about = await get('old', '/about');
    expect([about.status, about.body.toString().includes('old about')]).toEqual([200, true]);
    const app = await get('old', '/app.js', { 'accept-encoding': 'br' });
    expect([app.headers['content-encoding'], app.headers.etag]).toEqual([undefined, expect.stringMatching(/^"[0-9a-f]{32}"$/)]);
    expect((await get('old', '/app.js', { 'if-none-match': app.headers.etag! })).status).toBe(304);
    expect((await get('old', '/_redirects')).body.toString()).toBe('/* /index.html 200');
  });

  it('rewrites stay inside the deploy: an encoded .. in a splat cannot leave it', async () => {
    for (const p of ['/%2e%2e/%2e%2e/etc/passwd', '/..%2f..%2fetc%2fpasswd', '/secret/..%2f..%2f..%2fetc%2fpasswd']) {
      const res = await get('main', p);
      expect(res.body.toString(), p).not.toMatch(/root:/);
    }
  });
});

describe('behind a reverse proxy: the API answers site hosts the same way (api/sites/site-hosting.ts)', () => {
  it('passes the request headers and streams a range of a large file from its start', async () => {
    const big = Buffer.from(Array.from({ length: 3 * 1024 * 1024 }, (_, i) => i % 253));
    const dir = await site({ 'big.bin': big, 'app.js': js });
    await compileSite(dir, { note: () => undefined });
    await live('proxied', dir);
    const app = Fastify();
    installSiteHosting(app, edge.platform, createSiteServer(edge.platform.db, 'localhost'));
    try {
      const host = hosts.proxied!;
      const part = await app.inject({ method: 'GET', url: '/big.bin', headers: { host, range: 'bytes=2000000-2000099' } });
      expect([part.statusCode, part.headers['content-range'], part.rawPayload.equals(big.subarray(2_000_000, 2_000_100))]).toEqual([
        206,
        'bytes 2000000-2000099/3145728',
        true,
      ]);
      const whole = await app.inject({ method: 'GET', url: '/big.bin', headers: { host } });
      expect([whole.statusCode, whole.rawPayload.length]).toEqual([200, big.length]);
      const br = await app.inject({ method: 'GET', url: '/app.js', headers: { host, 'accept-encoding': 'br' } });
      expect([br.headers['content-encoding'], zlib.brotliDecompressSync(br.rawPayload).toString()]).toEqual(['br', js]);
      const again = await app.inject({ method: 'GET', url: '/app.js', headers: { host, 'accept-encoding': 'br', 'if-none-match': String(br.headers.etag) } });
      expect(again.statusCode).toBe(304);
      const head = await app.inject({ method: 'HEAD', url: '/app.js', headers: { host } });
      expect([head.statusCode, head.headers['content-length'], head.rawPayload.length]).toEqual([200, String(js.length), 0]);
    } finally {
      await app.close();
    }
  });
});

describe('the pure parts', () => {
  it('chooses an encoding by q-value, br first at equal q', () => {
    expect(chooseEncoding('gzip, br', ['br', 'gzip'])).toBe('br');
    expect(chooseEncoding('br;q=0.5, gzip', ['br', 'gzip'])).toBe('gzip');
    expect(chooseEncoding('*', ['br', 'gzip'])).toBe('br');
    expect(chooseEncoding('*;q=0, identity', ['br', 'gzip'])).toBeUndefined();
    expect(chooseEncoding('identity', ['br', 'gzip'])).toBeUndefined();
    expect(chooseEncoding(undefined, ['br'])).toBeUndefined();
    expect(chooseEncoding('gzip', ['br'])).toBeUndefined();
  });

  it('parses one byte range', () => {
    expect(parseRange('bytes=0-0', 10)).toEqual({ start: 0, end: 0 });
    expect(parseRange('bytes=5-100', 10)).toEqual({ start: 5, end: 9 });
    expect(parseRange('bytes=-0', 10)).toBe('unsatisfiable');
    expect(parseRange('bytes=10-', 10)).toBe('unsatisfiable');
    expect(parseRange('bytes=0-', 0)).toBe('unsatisfiable');
    expect(parseRange('bytes=5-1', 10)).toBeUndefined();
    expect(parseRange('items=0-1', 10)).toBeUndefined();
    expect(parseRange('bytes=0-1,3-4', 10)).toBeUndefined();
  });
});

it('keeps the precompressed siblings beside the files and the manifest in .cx/', async () => {
  const dir = await site({ 'a.css': `body{color:red}\n${'.x{margin:0}\n'.repeat(200)}` });
  const manifest = await compileSite(dir, { note: () => undefined });
  expect(manifest?.files['a.css']?.enc).toEqual(['br', 'gzip']);
  expect(zlib.gunzipSync(await readFile(path.join(dir, 'a.css.gz'))).toString()).toContain('body{color:red}');
  expect(JSON.parse(await readFile(path.join(dir, '.cx', 'site.json'), 'utf8')).version).toBe(1);
});
