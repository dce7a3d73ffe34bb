/**
 * Site serving after the streaming change (issue 22). One run, loopback only, prints JSON:
 *   1. a 10 KB asset from a site host on the edge (uWebSockets.js, the single process's front door) against
 *      `node:http` serving the same bytes from memory, same connections, same run (autocannon, a child process);
 *   2. a 1 GB file (sparse: no disk needed) downloaded three times at once from the site host, with this process's
 *      RSS sampled every 50 ms before and during: a file streamed from disk costs no more memory than a small one;
 *   3. (issue 42) the same 10 KB asset revalidated: `If-None-Match` with its ETag, answered 304, against the 200s
 *      of step 1 (a 304 must be cheaper).
 * The site is compiled as a build's end compiles it (hosting/build/compile-site.ts): `--rules` redirect rules that
 * do not match the asset, a `/* /index.html 200` fallback after them and a `_headers` rule for every path, so the
 * rules are evaluated on every request of steps 1 and 3.
 *
 *   npx tsx bench/sites.bench.ts [--duration 8] [--connections 50] [--gigabytes 1] [--rules 50]
 */
import http from 'node:http';
import { mkdtemp, open, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { addLiveSite, createIngestProject } from '../test/support/ingest-fixtures.ts';
import { startTestEdge } from '../test/support/test-edge.ts';
import { numberArg } from './support/cli-args.ts';
import { cannon as runCannon } from './support/autocannon.ts';
import { compileSite } from '../hosting/build/compile-site.ts';

const DURATION = numberArg('duration', 8);
const CONNECTIONS = numberArg('connections', 50);
const GB = numberArg('gigabytes', 1);
const RULES = numberArg('rules', 50);
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);

/**
 * A load run, and the server's CPU per request: this process's CPU time (every thread: the server's, and an idle
 * database worker's) over the requests answered. The load generator is a child process, so its CPU is not counted:
 * this figure holds on a busy machine where requests per second do not.
 */
async function cannon(url: string, headers: Record<string, string> = {}) {
  const before = process.cpuUsage();
  const r = await runCannon(url, { connections: CONNECTIONS, durationSec: DURATION, headers });
  const used = process.cpuUsage(before);
  const total = (r as unknown as { requests: { total: number } }).requests.total;
  return { ...r, cpuUsPerRequest: Number(((used.user + used.system) / Math.max(1, total)).toFixed(1)) };
}

function download(base: string, host: string, p: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(`${base}${p}`, { headers: { host } }, (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () => resolve(bytes));
      })
      .on('error', reject);
  });
}

async function main() {
  const root = await mkdtemp(path.join(os.tmpdir(), 'bench-site-'));
  const asset = Buffer.alloc(10 * 1024, 'a');
  await writeFile(path.join(root, 'app.0123abcd.js'), asset);
  await writeFile(path.join(root, 'index.html'), '<!doctype html><title>bench</title>');
  const redirects = Array.from({ length: RULES }, (_, i) => `/old-${i}/:slug /new-${i}/:slug 301`);
  await writeFile(path.join(root, '_redirects'), [...redirects, '/* /index.html 200'].join('\n'));
  await writeFile(path.join(root, '_headers'), '/*\n  X-Frame-Options: DENY\n  Referrer-Policy: same-origin\n');
  await compileSite(root, { note: (t) => log(t) });
  // After the compile: the sparse file is not hashed (its ETag is then a weak one from size and time).
  const big = await open(path.join(root, 'big.bin'), 'w');
  await big.truncate(Math.round(GB * 1024 ** 3));
  await big.close();

  const edge = await startTestEdge({ LOG_LEVEL: 'silent' }, { sites: true });
  const p = await createIngestProject(edge.platform);
  await addLiveSite(edge.platform, p.projectId, root);
  const host = `${p.slug}.localhost`;
  const results: Record<string, unknown> = {
    machine: { nproc: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version },
    settings: { durationSec: DURATION, connections: CONNECTIONS, redirectRules: RULES + 1 },
  };

  // 1. 10 KB
  log('10 KB asset: node:http from memory, then the site host');
  const mem = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=31536000, immutable' });
    res.end(asset);
  });
  await new Promise<void>((r) => mem.listen(0, '127.0.0.1', () => r()));
  const nodeHttp = await cannon(`http://127.0.0.1:${(mem.address() as { port: number }).port}/app.0123abcd.js`);
  mem.close();
  const ours = await cannon(`${edge.base}/app.0123abcd.js`, { host });
  results.static10kb = {
    nodeHttpFromMemory: { rps: Math.round(nodeHttp.requests.average), p99ms: nodeHttp.latency.p99, non2xx: nodeHttp.non2xx },
    siteHost: { rps: Math.round(ours.requests.average), p99ms: ours.latency.p99, non2xx: ours.non2xx },
    ratio: Number((ours.requests.average / nodeHttp.requests.average).toFixed(3)),
    target: 0.8,
    cpuUsPerRequest: { nodeHttpFromMemory: nodeHttp.cpuUsPerRequest, siteHost: ours.cpuUsPerRequest },
    cpuRatio: Number((nodeHttp.cpuUsPerRequest / ours.cpuUsPerRequest).toFixed(3)),
  };

  // 3. 304s: the same asset revalidated with its ETag
  const etag = await new Promise<string>((resolve, reject) =>
    http
      .get(`${edge.base}/app.0123abcd.js`, { headers: { host } }, (res) => {
        res.resume();
        resolve(String(res.headers.etag));
      })
      .on('error', reject),
  );
  log(`10 KB asset revalidated (If-None-Match: ${etag}): 304s`);
  const notModified = await cannon(`${edge.base}/app.0123abcd.js`, { host, 'if-none-match': etag });
  results.notModified304 = {
    rps: Math.round(notModified.requests.average),
    p99ms: notModified.latency.p99,
    versus200: Number((notModified.requests.average / ours.requests.average).toFixed(3)),
    cpuUsPerRequest: notModified.cpuUsPerRequest,
    cpuVersus200: Number((ours.cpuUsPerRequest / notModified.cpuUsPerRequest).toFixed(3)),
    target: '> 1 (a 304 is cheaper than a 200)',
  };

  // 2. 1 GB x 3 at once, RSS sampled
  log(`${GB} GB file, three downloads at once`);
  global.gc?.();
  const rssBefore = process.memoryUsage().rss;
  let peak = rssBefore;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 50);
  const t0 = performance.now();
  const sizes = await Promise.all([download(edge.base, host, '/big.bin'), download(edge.base, host, '/big.bin'), download(edge.base, host, '/big.bin')]);
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  results.largeFile = {
    bytesEach: GB * 1024 ** 3,
    complete: sizes.every((s) => s === GB * 1024 ** 3),
    seconds: Number(seconds.toFixed(1)),
    mbPerSecondTotal: Math.round((3 * GB * 1024) / seconds),
    rssMb: { before: Math.round(rssBefore / 1024 ** 2), peak: Math.round(peak / 1024 ** 2), growth: Math.round((peak - rssBefore) / 1024 ** 2) },
    note: 'server and downloads share this process: the growth includes the client side',
  };
  await edge.close();
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
