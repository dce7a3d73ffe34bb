import http from 'node:http';
import { mkdir, mkdtemp, open, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createIngestProject, addLiveSite } from '../../test/support/ingest-fixtures.ts';
import { startTestEdge, type TestEdge } from '../../test/support/test-edge.ts';
import { addressKey, createSiteServer, MISS_CACHE_MAX, UNKNOWN_HOST_LOOKUPS } from './site-server.ts';
import type { Queryable } from '../../platform/ports/relational-store.ts';
import { createMemoryLimiter } from '../../platform/adapters/rate-limit/memory-limiter.ts';
import { ManualClock } from '../../platform/clock.ts';

/**
 * Rows 3, 6 and 7 of issue 22: a link in an artifact (from before artifacts were copied link-free) is never
 * followed; files larger than the in-memory limit are streamed from an open descriptor; misses are cached within
 * the same bounds as hits.
 */
const noDb = { query: async () => ({ rows: [] }) } as unknown as Queryable;
let root: string;

beforeAll(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'site-root-'));
  await writeFile(path.join(root, 'index.html'), '<h1>home</h1>');
  await mkdir(path.join(root, 'docs'));
  await writeFile(path.join(root, 'docs', 'index.html'), 'docs');
  await symlink('/etc/passwd', path.join(root, 'passwd.txt'));
  await symlink('/proc/self/environ', path.join(root, 'environ'));
  await symlink('/', path.join(root, 'rootlink'));
  await symlink('index.html', path.join(root, 'alias.html'));
  const big = await open(path.join(root, 'big.bin'), 'w');
  await big.truncate(64 * 1024 * 1024); // sparse: 64 MB on the wire, nothing on disk
  await big.close();
});

describe('the site server', () => {
  it('never follows a link out of the artifact (files, /proc, a link to /)', async () => {
    const sites = createSiteServer(noDb, 'localhost');
    for (const p of ['/passwd.txt', '/environ', '/rootlink/etc/passwd', '/rootlink/', '/rootlink/proc/self/environ']) {
      const res = await sites.serve(root, 'GET', p);
      expect(res.status, p).toBe(404);
      expect('body' in res && res.body.toString()).not.toMatch(/root:|PATH=/);
    }
    expect((await sites.serve(root, 'GET', '/docs/')).status).toBe(200);
  });

  it("never serves a build's source maps: a .map answers exactly as a missing file", async () => {
    const site = await mkdtemp(path.join(os.tmpdir(), 'site-maps-'));
    await writeFile(path.join(site, 'main-4PKGQX7N.js'), 'console.log(1)\n//# sourceMappingURL=main-4PKGQX7N.js.map');
    await writeFile(path.join(site, 'main-4PKGQX7N.js.map'), JSON.stringify({ version: 3, sources: ['src/secret.ts'], sourcesContent: ['const key = 1'] }));
    await writeFile(path.join(site, 'styles.css.MAP'), '{}');
    await writeFile(path.join(site, '404.html'), '<h1>no such page</h1>');
    const sites = createSiteServer(noDb, 'localhost');
    const missing = await sites.serve(site, 'GET', '/no-such-file.js');
    expect(missing.status).toBe(404);
    for (const p of ['/main-4PKGQX7N.js.map', '/main-4PKGQX7N.js%2Emap', '/main-4PKGQX7N.js.map?v=1', '/styles.css.MAP']) {
      const res = await sites.serve(site, 'GET', p);
      expect([res.status, 'body' in res && res.body.toString()], p).toEqual([404, 'body' in missing && missing.body.toString()]);
      expect(res.headers, p).toEqual(missing.headers);
    }
    expect((await sites.serve(site, 'HEAD', '/main-4PKGQX7N.js.map')).status).toBe(404);
    expect((await sites.serve(site, 'GET', '/main-4PKGQX7N.js')).status).toBe(200);

    // Opted in (projects.serve_source_maps): served, revalidated rather than cached for a year; opted out again: the
    // same 404 as before, though the map now sits in the file cache.
    const optedIn = await sites.serve(site, 'GET', '/main-4PKGQX7N.js.map', { serveSourceMaps: true });
    expect([optedIn.status, 'body' in optedIn && JSON.parse(optedIn.body.toString()).sources]).toEqual([200, ['src/secret.ts']]);
    expect(optedIn.headers).toContainEqual(['cache-control', 'public, max-age=0, must-revalidate']);
    const optedOut = await sites.serve(site, 'GET', '/main-4PKGQX7N.js.map', { serveSourceMaps: false });
    expect([optedOut.status, 'body' in optedOut && optedOut.body.toString(), optedOut.headers]).toEqual([
      404,
      'body' in missing && missing.body.toString(),
      missing.headers,
    ]);
  });

  it('streams files over the in-memory limit instead of reading them whole', async () => {
    const sites = createSiteServer(noDb, 'localhost');
    const res = await sites.serve(root, 'GET', '/big.bin');
    expect(res.status).toBe(200);
    expect('file' in res).toBe(true);
    if ('file' in res) {
      expect(res.size).toBe(64 * 1024 * 1024);
      await res.file.close();
    }
    expect(sites.cacheStats.bytes).toBeLessThan(1024 * 1024);
  });

  it('serves a stored artifact directory relative to DATA_DIR, wherever the data directory now is', async () => {
    // A data directory restored at another path: the row says `artifacts/<deployId>` (migration 0025), not where it was.
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'site-data-'));
    await mkdir(path.join(dataDir, 'artifacts', 'dep_moved'), { recursive: true });
    await writeFile(path.join(dataDir, 'artifacts', 'dep_moved', 'index.html'), '<h1>moved</h1>');
    const db = { query: async () => ({ rows: [{ project_id: 'prj_moved', artifact_dir: 'artifacts/dep_moved' }] }) } as unknown as Queryable;
    const sites = createSiteServer(db, { sitesDomain: 'localhost', dataDir });
    const site = await sites.lookup('dep-moved.localhost');
    expect(site).toEqual({ projectId: 'prj_moved', dir: path.join(dataDir, 'artifacts', 'dep_moved'), serveSourceMaps: false });
    const res = await sites.serve(site!.dir, 'GET', '/');
    expect(res.status).toBe(200);
    expect('body' in res && res.body.toString()).toBe('<h1>moved</h1>');
  });

  it('bounds its cache by entries and bytes, misses included', async () => {
    const sites = createSiteServer(noDb, 'localhost');
    for (let i = 0; i < 30_000; i++) await sites.serve(root, 'GET', `/missing-${i}-${'x'.repeat(200)}`);
    expect(sites.cacheStats.entries).toBeLessThanOrEqual(20_000);
    expect(sites.cacheStats.bytes).toBeLessThanOrEqual(64 * 1024 * 1024);
  });
});

describe('through the edge (uWebSockets.js) and real HTTP', () => {
  let edge: TestEdge;
  let slug: string;
  beforeAll(async () => {
    edge = await startTestEdge({}, { sites: true });
    const p = await createIngestProject(edge.platform);
    slug = p.slug;
    await addLiveSite(edge.platform, p.projectId, root);
  });
  afterAll(async () => edge?.close());

  const get = (p: string, method = 'GET') =>
    new Promise<{ status: number; bytes: number; length: string | undefined }>((resolve, reject) => {
      const req = http.request(`${edge.base}${p}`, { method, headers: { host: `${slug}.localhost` } }, (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () => resolve({ status: res.statusCode!, bytes, length: res.headers['content-length'] }));
      });
      req.on('error', reject);
      req.end();
    });

  it("reads the project's source map opt-in with the site's row: on, off again, each within SITE_CACHE_MS (2 s)", async () => {
    await writeFile(path.join(root, 'app-4PKGQX7N.js.map'), '{"version":3,"mappings":""}');
    const sites = createSiteServer(edge.platform.db, 'localhost');
    const host = `${slug}.localhost`;
    const map = async () => {
      const site = (await sites.lookup(host))!;
      return (await sites.serve(site.dir, 'GET', '/app-4PKGQX7N.js.map', site)).status;
    };
    const setOptIn = (on: boolean) => edge.platform.db.query('UPDATE projects SET serve_source_maps = $2 WHERE slug = $1', [slug, on]);
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      expect(await map()).toBe(404);
      await setOptIn(true);
      vi.setSystemTime(Date.now() + 2_001);
      expect(await map()).toBe(200);
      await setOptIn(false);
      vi.setSystemTime(Date.now() + 2_001);
      expect(await map()).toBe(404);
    } finally {
      vi.useRealTimers();
    }
    // Through the edge (its own site server): the flag travels with the site it looked up.
    await setOptIn(true);
    await vi.waitFor(async () => expect((await get('/app-4PKGQX7N.js.map')).status).toBe(200), { timeout: 10_000, interval: 100 });
    await setOptIn(false);
    await vi.waitFor(async () => expect((await get('/app-4PKGQX7N.js.map')).status).toBe(404), { timeout: 10_000, interval: 100 });
  });

  it('serves a 64 MB file whole, three at once, HEAD with its length; links are 404', async () => {
    const all = await Promise.all([get('/big.bin'), get('/big.bin'), get('/big.bin')]);
    for (const r of all) expect(r).toMatchObject({ status: 200, bytes: 64 * 1024 * 1024 });
    expect(await get('/big.bin', 'HEAD')).toMatchObject({ status: 200, bytes: 0, length: String(64 * 1024 * 1024) });
    expect((await get('/passwd.txt')).status).toBe(404);
    expect((await get('/')).status).toBe(200);
  });
});

/**
 * Row 9 of issue 38: every request with a Host of the caller's choosing was a query (GET /v1/ went from 15 ms to
 * 60-370 ms under a flood of random Hosts). Now Hosts that are no site are cached as misses in a bounded cache, and
 * queries for Hosts not known as sites are limited per client address; known sites are never charged.
 */
describe('a flood of Hosts that are no site', () => {
  /** A Queryable that counts what reaches it: a project's site for `shop.example.com`, nothing else. */
  function countingDb() {
    const asked: string[] = [];
    const db = {
      query: async (_sql: string, params: unknown[]) => {
        asked.push(String(params[0]));
        return { rows: params[0] === 'shop.example.com' ? [{ project_id: 'prj_shop', artifact_dir: '/srv/shop', serve_source_maps: false }] : [] };
      },
    } as unknown as Queryable;
    return { db, asked };
  }
  const reserved = (h: string) => (h === 'localhost' || /^[\d.]+$/.test(h) ? 'reserved' : undefined);
  const randomHost = (i: number) => `r${i}-${Math.random().toString(36).slice(2, 8)}.example.net`;

  it('N distinct unknown Hosts from one address cost at most UNKNOWN_HOST_LOOKUPS queries per window; past it 429 with no query', async () => {
    const clock = new ManualClock();
    const { db, asked } = countingDb();
    const sites = createSiteServer(db, { sitesDomain: 'localhost', reserved, limiter: createMemoryLimiter(clock) });
    const N = 500;
    const answers = [];
    for (let i = 0; i < N; i++) answers.push(await sites.lookup(randomHost(i), '203.0.113.7'));
    expect(asked.length).toBe(UNKNOWN_HOST_LOOKUPS.perAddress);
    expect(answers.filter((a) => a === undefined)).toHaveLength(UNKNOWN_HOST_LOOKUPS.perAddress);
    const limited = answers.filter((a) => a?.limited);
    expect(limited).toHaveLength(N - UNKNOWN_HOST_LOOKUPS.perAddress);
    expect(sites.hostStats).toMatchObject({ queries: UNKNOWN_HOST_LOOKUPS.perAddress, limited: N - UNKNOWN_HOST_LOOKUPS.perAddress });
    // The answer past the limit: 429 in the spec's error shape, with Retry-After.
    const res = await sites.serve('', 'GET', '/', limited[0]);
    expect(res.status).toBe(429);
    expect('body' in res && JSON.parse(res.body.toString())).toMatchObject({ error: 'rate_limited' });
    expect(Number(res.headers.find(([k]) => k === 'retry-after')?.[1])).toBeGreaterThan(0);
    // Another address has its own allowance; the same /64 shares one.
    await sites.lookup(randomHost(N), '198.51.100.9');
    expect(asked.length).toBe(UNKNOWN_HOST_LOOKUPS.perAddress + 1);
    const sixtyFour = createSiteServer(db, { sitesDomain: 'localhost', reserved, limiter: createMemoryLimiter(clock) });
    const before = asked.length;
    for (let i = 0; i < 200; i++) await sixtyFour.lookup(randomHost(i), `2001:db8:1:2:${i.toString(16)}::1`);
    expect(asked.length - before).toBe(UNKNOWN_HOST_LOOKUPS.perAddress);
    // The next window: the address may look up again, as many and no more.
    clock.advance(UNKNOWN_HOST_LOOKUPS.windowMs + 1_000);
    for (let i = 0; i < N; i++) await sites.lookup(randomHost(N + 1 + i), '203.0.113.7');
    expect(asked.length).toBe(before + 2 * UNKNOWN_HOST_LOOKUPS.perAddress);
  });

  it('a known site is never charged: an address past its limit still gets it, refreshed after SITE_CACHE_MS', async () => {
    const clock = new ManualClock();
    const { db, asked } = countingDb();
    const sites = createSiteServer(db, { sitesDomain: 'localhost', reserved, limiter: createMemoryLimiter(clock) });
    expect((await sites.lookup('shop.example.com', '203.0.113.7'))?.projectId).toBe('prj_shop');
    for (let i = 0; i < 100; i++) await sites.lookup(randomHost(i), '203.0.113.7');
    expect((await sites.lookup(randomHost(101), '203.0.113.7'))?.limited).toBeDefined();
    vi.useFakeTimers({ toFake: ['Date'] });
    try {
      vi.setSystemTime(Date.now() + 2_001);
      const queries = asked.length;
      expect(await sites.lookup('shop.example.com', '203.0.113.7')).toMatchObject({ projectId: 'prj_shop', dir: '/srv/shop' });
      expect(asked.length).toBe(queries + 1);
    } finally {
      vi.useRealTimers();
    }
    // The service's own hosts and IP addresses are no site by rule: no query, no charge.
    const queries = asked.length;
    for (const h of ['localhost', '127.0.0.1:8080', '10.0.0.1', 'x.y.localhost', `${'a'.repeat(300)}.example.com`, 'a b.example', 'a_b.example'])
      expect(await sites.lookup(h, '192.0.2.1')).toBeUndefined();
    expect(sites.hostStats.misses).toBe(UNKNOWN_HOST_LOOKUPS.perAddress - 1); // the lookups that ran; none of these
    expect(asked.length).toBe(queries);
  });

  it('a miss is cached: the same unknown Host again, or a burst of it at once, is one query', async () => {
    const { db, asked } = countingDb();
    const sites = createSiteServer(db, { sitesDomain: 'localhost', reserved, limiter: createMemoryLimiter(new ManualClock()) });
    await Promise.all(Array.from({ length: 50 }, () => sites.lookup('nobody.example.org', '203.0.113.7')));
    for (let i = 0; i < 50; i++) await sites.lookup('NOBODY.example.org:443', `198.51.100.${i}`);
    expect(asked).toEqual(['nobody.example.org']);
  });

  it('the Host caches stay bounded: a flood of distinct names evicts its own misses, never the known sites', async () => {
    const { db, asked } = countingDb();
    // No limiter: the bound must hold even when every lookup is allowed (many addresses).
    const sites = createSiteServer(db, { sitesDomain: 'localhost', reserved });
    await sites.lookup('shop.example.com', '192.0.2.1');
    for (let i = 0; i < MISS_CACHE_MAX * 3; i++) await sites.lookup(`flood-${i}.example.net`);
    expect(sites.hostStats.misses).toBe(MISS_CACHE_MAX);
    expect(sites.hostStats.known).toBe(1);
    expect(sites.hostStats.inflight).toBe(0);
    const queries = asked.length;
    expect((await sites.lookup('shop.example.com'))?.projectId).toBe('prj_shop');
    expect(asked.length).toBe(queries); // still cached: the flood did not push it out
  });

  it('keys IPv6 clients by their /64 and IPv4 (mapped or not) by address', () => {
    expect(addressKey('203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe(addressKey('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'));
    expect(addressKey('2001:db8:1:2::1')).not.toBe(addressKey('2001:db8:1:3::1'));
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
  });
});
