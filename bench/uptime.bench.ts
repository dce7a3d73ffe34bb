/**
 * Uptime (issue 26), two figures, printed as JSON:
 *   schedule  1,000 monitors at a 30 s interval on one monitor process (embedded store, or `--postgres`), their due
 *             times spread over the interval as monitors made over time are. Checks go to a loopback HTTPS target in a
 *             child process. Aim: every check starts within 1 s of when it was due, and the process uses under half
 *             a core.
 *   status    `GET /v1/status/:slug` (the cached answer) against a bare `node:http` server that answers the same bytes
 *             and headers, autocannon in a child process. Aim: at least 0.5x.
 *
 *   npx tsx bench/uptime.bench.ts [--monitors 1000] [--seconds 95] [--duration 8] [--connections 50] [--postgres]
 */
import { fork } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { buildApiApp } from '../api/app.ts';
import pg from 'pg';
import * as projectEvents from '../schemas/bus/project-events.ts';
import { createTestOutboundGuard } from '../platform/adapters/outbound/test-guard.ts';
import { newId } from '../platform/tokens.ts';
import { startUptimeMonitor } from '../processor/uptime/uptime-monitor.ts';
import { allowAllLimiter } from '../test/support/ingest-fixtures.ts';
import { makeSelfSignedCert } from '../test/support/https-receiver.ts';
import { createTestPlatform } from '../test/support/platform.ts';
import { inertMailer } from '../test/support/stubs.ts';
import { insertProject } from '../test/support/webhook-platform.ts';
import { cannon } from './support/autocannon.ts';
import { numberArg } from './support/cli-args.ts';

const MONITORS = numberArg('monitors', 1000);
const SECONDS = numberArg('seconds', 95);
const DURATION = numberArg('duration', 8);
const CONNECTIONS = numberArg('connections', 50);
const INTERVAL_SEC = 30;
const log = (s: string) => process.stderr.write(`${s}\n`);

/** The target: a loopback HTTPS server in a child process of its own (its CPU is not the monitor's). */
async function startTarget(cert: { key: string; cert: string }): Promise<{ port: number; stop(): void }> {
  const child = fork(fileURLToPath(import.meta.url), ['--target'], { stdio: ['ignore', 'ignore', 'inherit', 'ipc'], execArgv: ['--import', 'tsx'] });
  child.send(cert);
  process.once('exit', () => child.kill('SIGKILL'));
  const port = await new Promise<number>((resolve) => child.once('message', (m) => resolve(Number(m))));
  return { port, stop: () => child.kill('SIGKILL') };
}

async function runTarget() {
  const https = await import('node:https');
  process.once('message', (cert: { key: string; cert: string }) => {
    const server = https.createServer({ ...cert, keepAlive: true }, (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
    server.listen(0, '127.0.0.1', () => process.send!((server.address() as AddressInfo).port));
  });
}

async function main() {
  const cert = makeSelfSignedCert();
  const target = await startTarget(cert);
  // --postgres: a database of this run's own, so no other monitors (tests' leftovers) are checked with these.
  let databaseUrl: string | undefined;
  if (process.argv.includes('--postgres')) {
    const admin = new pg.Client({ connectionString: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' });
    await admin.connect();
    await admin.query('DROP DATABASE IF EXISTS uptime_bench_test');
    await admin.query('CREATE DATABASE uptime_bench_test');
    await admin.end();
    const u = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
    u.pathname = '/uptime_bench_test';
    databaseUrl = u.href;
  }
  const platform = await createTestPlatform({
    env: databaseUrl ? { DATABASE_URL: databaseUrl } : {},
    overrides: { outbound: createTestOutboundGuard({ ca: cert.cert }), mailer: inertMailer, limiter: allowAllLimiter },
  });
  const { projectId } = await insertProject(platform);
  const slug = (await platform.db.query<{ slug: string }>('SELECT slug FROM projects WHERE id = $1', [projectId])).rows[0]!.slug;
  // Due times spread over one interval, starting 2 s from now.
  const start = Date.now() + 2000;
  const url = `https://127.0.0.1:${target.port}/health`;
  for (let i = 0; i < MONITORS; i += 200) {
    const n = Math.min(200, MONITORS - i);
    const values = Array.from({ length: n }, (_, k) => `($${k * 3 + 1}, $${k * 3 + 2}, $${k * 3 + 3})`).join(', ');
    const params = Array.from({ length: n }, (_, k) => [
      newId('mon_'),
      `m${i + k}`,
      new Date(start + Math.floor(((i + k) / MONITORS) * INTERVAL_SEC * 1000)),
    ]).flat();
    await platform.db.query(
      `INSERT INTO uptime_monitors (id, project_id, name, url, interval_sec, timeout_ms, public, next_check_at, created_at, updated_at)
       SELECT v.id, '${projectId}', v.name, '${url}', ${INTERVAL_SEC}, 10000, v.name = 'm0', v.due::timestamptz, now(), now() FROM (VALUES ${values}) AS v(id, name, due)`,
      params,
    );
  }
  log(`${MONITORS} monitors at ${INTERVAL_SEC} s; checking for ${SECONDS} s`);

  // A stand-in for the webhook fan-out: it keeps the events the checks publish under what the bus lets wait.
  await platform.bus.subscribe(projectEvents.TOPIC, 'uptime-bench-events', async () => {});
  // 1. schedule
  const monitor = await startUptimeMonitor(platform);
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  await new Promise((r) => setTimeout(r, SECONDS * 1000));
  const cpu = process.cpuUsage(cpu0);
  const wallMs = performance.now() - wall0;
  const s = monitor.stats();
  await monitor.stop();
  const expected = Math.floor(MONITORS * ((SECONDS - 2) / INTERVAL_SEC));
  const schedule = {
    monitors: MONITORS,
    intervalSec: INTERVAL_SEC,
    seconds: SECONDS,
    checks: s.checks,
    checksExpectedAbout: expected,
    failures: s.failures,
    lateMsMax: s.lateMs.max,
    checksLateOver1s: s.lateMs.over1s,
    cores: +((cpu.user + cpu.system) / 1000 / wallMs).toFixed(3),
  };
  log(`schedule: ${JSON.stringify(schedule)}`);

  // 2. status: the API's cached answer against node:http serving the same bytes
  const app = await buildApiApp(platform);
  const apiBase = await app.listen({ port: 0, host: '127.0.0.1' });
  const first = await fetch(`${apiBase}/v1/status/${slug}`);
  const bytes = await first.text();
  if (first.status !== 200) throw new Error(`status page answered ${first.status}: ${bytes}`);
  const headers = {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': first.headers.get('cache-control')!,
    etag: first.headers.get('etag')!,
    'access-control-allow-origin': '*',
  };
  const bare = http.createServer((_req, res) => {
    res.writeHead(200, headers);
    res.end(bytes);
  });
  await new Promise<void>((r) => bare.listen(0, '127.0.0.1', () => r()));
  const bareBase = `http://127.0.0.1:${(bare.address() as AddressInfo).port}`;
  const rounds = [];
  for (let round = 1; round <= 3; round++) {
    const api = await cannon(`${apiBase}/v1/status/${slug}`, { connections: CONNECTIONS, durationSec: DURATION });
    const raw = await cannon(`${bareBase}/v1/status/${slug}`, { connections: CONNECTIONS, durationSec: DURATION });
    const r = {
      round,
      api: { rps: Math.round(api.requests.average), p99ms: api.latency.p99, non2xx: api.non2xx },
      nodeHttp: { rps: Math.round(raw.requests.average), p99ms: raw.latency.p99 },
      ratio: +(api.requests.average / raw.requests.average).toFixed(2),
    };
    log(`status round ${round}: ${JSON.stringify(r)}`);
    rounds.push(r);
  }
  await app.close();
  bare.close();
  target.stop();
  await platform.close();
  console.log(
    JSON.stringify(
      {
        bench: 'uptime',
        machine: { nproc: os.cpus().length, cpu: os.cpus()[0]?.model, node: process.version },
        store: platform.db.adapter,
        schedule,
        status: { bytes: Buffer.byteLength(bytes), connections: CONNECTIONS, durationSec: DURATION, rounds },
      },
      null,
      2,
    ),
  );
  process.exit(0);
}

if (process.argv.includes('--target')) void runTarget();
else
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
