/**
 * Deploys benchmark (issue 14, "Tests and numbers"). One run, loopback only, bounded durations; prints JSON.
 * Everything runs in the single process on the embedded defaults, except with `--kafka`: then only the hook ->
 * building latency, with the API in this process and a builder process on Postgres (BENCH_DATABASE_URL, default
 * 127.0.0.1:5432/test), the librdkafka mock cluster, ClickHouse's HTTP interface from chDB and Redis.
 *   1. hook calls answered per second with valid tokens: autocannon (child process) on `POST /v1/hooks/:token`
 *      of the single process (`start('all')`, embedded), every call a preview deploy of a project without a
 *      source (queued, then failed at once by the builder as source_missing), so each call queues a deploy.
 *      The per-token and per-IP limits are lifted for the run (a test-only override), so the figure is the
 *      route's cost, not the limit;
 *   2. hook call -> `building` latency at idle, p50/p95 over sequential calls (each production deploy finishes
 *      before the next call);
 *   3. a 10 KB asset served from a site host (the edge answers site hosts itself), against `node:http` serving
 *      the same bytes from memory, in the same run (autocannon, same connections).
 *
 *   npx tsx bench/deploys.bench.ts [--duration 8] [--connections 50] [--latency-calls 40] [--kafka]
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { start, type Running } from '../service/service.ts';
import { allowAllLimiter } from '../test/support/ingest-fixtures.ts';
import { usersRepository } from '../api/accounts/users-repository.ts';
import { numberArg, flagArg } from './support/cli-args.ts';
import { cannon as runCannon, type CannonResult } from './support/autocannon.ts';

const DURATION = numberArg('duration', 8);
const CONNECTIONS = numberArg('connections', 50);
const LATENCY_CALLS = numberArg('latency-calls', 40);
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);

function cannon(url: string, opts: { method: 'GET' | 'POST'; headers?: Record<string, string>; body?: string }): Promise<CannonResult> {
  return runCannon(url, { ...opts, connections: CONNECTIONS, durationSec: DURATION });
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
};

async function signIn(base: string, running: Running): Promise<string> {
  const email = `bench-${Date.now()}@example.test`;
  const password = 'bench-password-1234';
  await usersRepository.createUser(running.platform.db, { email, password });
  const res = await fetch(`${base}/v1/auth/sign-in`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  return res.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .find((c) => c.startsWith('cx_session='))!;
}

async function api(base: string, cookie: string, method: string, url: string, body?: unknown) {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: { cookie, 'sec-fetch-site': 'same-origin', 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.json() as Promise<any>;
}

function git(cwd: string, ...a: string[]) {
  execFileSync('git', ['-c', 'user.email=b@example.com', '-c', 'user.name=b', ...a], { cwd });
}

/** Sequential hook calls to a production deploy that builds in no time: call -> `building`, each finished before the next. */
async function hookToBuilding(
  base: string,
  running: Running,
  token: string,
  calls: number,
): Promise<{ calls: number; p50: number; p95: number; lastReady: string }> {
  const latencies: number[] = [];
  let lastReady = '';
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    const res = await fetch(`${base}/v1/hooks/${token}`, { method: 'POST' });
    const { deployId } = (await res.json()) as { deployId: string };
    for (;;) {
      const r = await running.platform.db.query<{ status: string }>('SELECT status FROM deploys WHERE id = $1', [deployId]);
      if (r.rows[0]?.status !== 'queued') break;
      await new Promise((x) => setTimeout(x, 2));
    }
    latencies.push(performance.now() - t0);
    // A production deploy holds the slot: wait for it to finish before the next call.
    for (;;) {
      const r = await running.platform.db.query<{ status: string }>('SELECT status FROM deploys WHERE id = $1', [deployId]);
      if (r.rows[0]?.status === 'ready' || r.rows[0]?.status === 'failed') {
        if (r.rows[0].status === 'ready') lastReady = deployId;
        break;
      }
      await new Promise((x) => setTimeout(x, 20));
    }
  }
  return { calls: latencies.length, p50: Math.round(quantile(latencies, 0.5)), p95: Math.round(quantile(latencies, 0.95)), lastReady };
}

async function makeRepo(): Promise<string> {
  const repo = await mkdtemp(path.join(os.tmpdir(), 'bench-deploys-repo-'));
  git(repo, 'init', '-q', '-b', 'main');
  await writeFile(path.join(repo, 'index.html'), '<h1>bench</h1>');
  await writeFile(path.join(repo, 'app.0123abcd.js'), ASSET);
  git(repo, 'add', '.');
  git(repo, 'commit', '-q', '-m', 'bench');
  return repo;
}
const ASSET = Buffer.alloc(10 * 1024, 'a');

/** `--kafka`: hook -> building on Postgres + Kafka + ClickHouse with a builder process. */
async function kafkaLatency(): Promise<void> {
  const { startKafkaMockProcess } = await import('../test/support/kafka-mock-process.ts');
  const { startChdbHttpServer } = await import('../test/support/chdb-http-server.ts');
  const { spawnRole } = await import('../test/e2e/support/spawn-role.ts');
  const { isolatedBus } = await import('../test/e2e/support/isolated-bus.ts');
  const { TOPICS } = await import('../schemas/topics.ts');
  const kafka = await startKafkaMockProcess({ dataPath: 'direct' });
  const ch = await startChdbHttpServer({ dataDir: await mkdtemp(path.join(os.tmpdir(), 'bench-deploys-chdb-')) });
  const env = {
    DATA_DIR: await mkdtemp(path.join(os.tmpdir(), 'bench-deploys-')),
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
    ALLOW_LOCAL_REPOS: 'true',
    PUBLIC_BASE_URL: 'http://localhost:8080',
    DATABASE_URL: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
    CLICKHOUSE_URL: ch.url,
    KAFKA_BROKERS: kafka.brokers,
    REDIS_URL: process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379',
    ...isolatedBus('bench-deploys'),
  };
  const running = await start('api', loadConfig(env), createLogger('silent', 'bench'));
  await running.platform.bus.publish(TOPICS.deployRequests, [{ key: 'warm-up', value: Buffer.from('{}') }]);
  const builder = await spawnRole('builder', env);
  try {
    const base = `http://127.0.0.1:${running.port}`;
    const cookie = await signIn(base, running);
    const repo = await makeRepo();
    const slug = `kafka-${Date.now()}`;
    await api(base, cookie, 'POST', '/v1/projects', { name: 'kafka', slug });
    await api(base, cookie, 'PATCH', `/v1/projects/${slug}/deploys/settings`, { repoUrl: repo, buildCommand: '', outputDir: '.' });
    const hook = (await api(base, cookie, 'POST', `/v1/projects/${slug}/deploys/hooks`, { name: 'prod', branch: 'main' })).hook;
    log('hook -> building latency on Kafka');
    const { lastReady: _, ...latency } = await hookToBuilding(base, running, hook.token, LATENCY_CALLS);
    process.stdout.write(
      `${JSON.stringify({ machine: { nproc: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version }, hookToBuildingMs: { kafka: latency } }, null, 2)}\n`,
    );
  } finally {
    await builder.kill();
    await running.stop();
    await ch.stop();
    await kafka.stop();
  }
}

async function main() {
  if (flagArg('kafka')) return kafkaLatency();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'bench-deploys-'));
  const repo = await makeRepo();
  const asset = ASSET;

  const env = { DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', ALLOW_LOCAL_REPOS: 'true' };
  // The first start prints its credentials on stdout; this script's stdout is its JSON alone.
  const stdoutWrite = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => process.stderr.write(chunk)) as typeof process.stdout.write;
  const running = await start('all', loadConfig(env), createLogger('silent', 'bench'), { testing: { overrides: { limiter: allowAllLimiter } } }).finally(() => {
    process.stdout.write = stdoutWrite;
  });
  const base = `http://127.0.0.1:${running.port}`;
  const cookie = await signIn(base, running);
  const results: Record<string, unknown> = {
    machine: { nproc: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version },
    settings: { durationSec: DURATION, connections: CONNECTIONS },
  };

  // 1. hook calls per second (embedded)
  const bare = await api(base, cookie, 'POST', '/v1/projects', { name: 'hooks', slug: `hooks-${Date.now()}` });
  const hook = await api(base, cookie, 'POST', `/v1/projects/${bare.project.slug}/deploys/hooks`, { name: 'bench', branch: 'preview-branch' });
  log('hook calls per second');
  const calls = await cannon(`${base}/v1/hooks/${hook.hook.token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  results.hookCallsPerSecond = {
    rps: Math.round(calls.requests.average),
    p50ms: calls.latency.p50,
    p99ms: calls.latency.p99,
    accepted2xx: calls['2xx'],
    non2xx: calls.non2xx,
    errors: calls.errors,
  };

  // 2. hook -> building latency at idle (embedded)
  const site = await api(base, cookie, 'POST', '/v1/projects', { name: 'site', slug: `site-${Date.now()}` });
  const slug = site.project.slug;
  await api(base, cookie, 'PATCH', `/v1/projects/${slug}/deploys/settings`, { repoUrl: repo, buildCommand: '', outputDir: '.' });
  const prodHook = (await api(base, cookie, 'POST', `/v1/projects/${slug}/deploys/hooks`, { name: 'prod', branch: 'main' })).hook;
  log('hook -> building latency');
  const { lastReady, ...embedded } = await hookToBuilding(base, running, prodHook.token, LATENCY_CALLS);
  results.hookToBuildingMs = { embedded };

  // 3. static 10 KB asset vs node:http from memory
  log('static serving');
  const mem = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'public, max-age=31536000, immutable' });
    res.end(asset);
  });
  await new Promise<void>((r) => mem.listen(0, '127.0.0.1', () => r()));
  const memPort = (mem.address() as { port: number }).port;
  const nodeHttp = await cannon(`http://127.0.0.1:${memPort}/app.0123abcd.js`, { method: 'GET' });
  const ours = await cannon(`${base}/app.0123abcd.js`, { method: 'GET', headers: { host: `${slug}.localhost` } });
  mem.close();
  results.static10kb = {
    liveDeploy: lastReady,
    nodeHttpFromMemory: { rps: Math.round(nodeHttp.requests.average), p99ms: nodeHttp.latency.p99, non2xx: nodeHttp.non2xx },
    siteHost: { rps: Math.round(ours.requests.average), p99ms: ours.latency.p99, non2xx: ours.non2xx },
    ratio: Number((ours.requests.average / nodeHttp.requests.average).toFixed(3)),
    target: 0.8,
  };

  await running.stop();
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
