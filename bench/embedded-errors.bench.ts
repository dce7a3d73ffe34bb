/**
 * Errors through `npm start`'s single process on its embedded defaults (PGlite, chDB, the in-process bus), issue 29:
 * the 202's latency at a sustained rate, and how long after the load every accepted event is visible in the API.
 *
 * The service is spawned as `npm start` runs it (service/start.sh, a fresh data dir, the owner's password set so the
 * bench can sign in, TRUST_PROXY so X-Forwarded-For spreads the per key-and-IP limit). Through the API: `--projects`
 * projects with production domains, `--keys` ingest keys in all. The load, from this process: 10-event batches
 * (~5 KB) with the project's production Origin, evenly paced at `--rate` events/s for `--duration` seconds over every
 * key, open loop (a slow answer does not slow the load), on kept-alive connections; each 202's latency recorded.
 * Then the API is polled until the issues' counts add up to every event accepted.
 *
 *   npx tsx bench/embedded-errors.bench.ts [--rate 10000] [--duration 20] [--projects 20] [--keys 1000] [--cpu-prof] [--node] [--tsx]
 * Prints one JSON document on stdout (progress on stderr). `--cpu-prof` writes the service's CPU profile to
 * bench/.tmp/.
 */
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { errorBatchBody } from './support/error-load.ts';
import { flagArg, numberArg } from './support/cli-args.ts';
import { freePort } from '../test/e2e/support/console-service.ts';
import { machine } from './support/edge-bench.ts';
import { keepAliveRequester } from './support/http-request.ts';

const RATE = numberArg('rate', 10_000);
const DURATION = numberArg('duration', 20);
const PROJECTS = numberArg('projects', 20);
const KEYS = numberArg('keys', 1_000);
const EVENTS_PER_BATCH = 10;
const OWNER = { email: 'bench@example.com', password: 'bench-password-embedded' };
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);

const request = keepAliveRequester(256);

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? +s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!.toFixed(1) : Number.NaN;
};

async function main(): Promise<void> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'bench-embedded-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const profDir = path.resolve('bench/.tmp');
  await mkdir(profDir, { recursive: true });
  // npm start's own command (service/start.sh: the build, glibc's malloc thresholds, node on the compiled service;
  // its pid is the service's), or node itself: with --cpu-prof, or --node (the compiled service without start.sh's
  // settings), or --tsx (the source under tsx, as npm start ran before issue 44).
  const prof = flagArg('cpu-prof') ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [];
  const [command, args] = flagArg('tsx')
    ? [process.execPath, [...prof, '--import', 'tsx', 'service/main.ts']]
    : prof.length || flagArg('node')
      ? [process.execPath, [...prof, '--enable-source-maps', 'dist/service/main.js']]
      : ['sh', ['service/start.sh']];
  if (command === process.execPath && !flagArg('tsx'))
    await new Promise((resolve) => spawn(process.execPath, ['service/build.mjs'], { stdio: 'inherit' }).once('exit', resolve));
  const child = spawn(command, args, {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      OWNER_EMAIL: OWNER.email,
      OWNER_PASSWORD: OWNER.password,
      TRUST_PROXY: 'true',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  /** The service's CPU seconds (utime + stime of /proc/<pid>/stat, in 100 Hz ticks). */
  const cpuOf = async () => {
    const stat = (await readFile(`/proc/${child.pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
    return (Number(stat[11]) + Number(stat[12])) / 100;
  };
  try {
    for (let i = 0; ; i++) {
      if (i > 600) throw new Error('the service did not start');
      const ok = await request(base, 'GET', '/v1/', {}).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    const signIn = await request(base, 'POST', '/v1/auth/sign-in', { 'content-type': 'application/json' }, JSON.stringify(OWNER));
    if (signIn.status !== 200) throw new Error(`sign-in: ${signIn.status} ${signIn.body}`);
    const cookie = (signIn.headers['set-cookie'] ?? []).map((c) => c.split(';')[0]).join('; ');
    const session = { cookie, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' };
    const keys: Array<{ key: string; origin: string; slug: string }> = [];
    for (let p = 0; p < PROJECTS; p++) {
      const slug = `bench-${p}`;
      const domain = `shop-${p}.example.com`;
      const created = await request(
        base,
        'POST',
        '/v1/projects',
        session,
        JSON.stringify({ name: slug, slug, environmentHosts: { production: [domain], preview: [] } }),
      );
      if (created.status !== 201) throw new Error(`project: ${created.status} ${created.body}`);
      for (let k = 0; k < Math.ceil(KEYS / PROJECTS); k++) {
        const r = await request(base, 'POST', `/v1/projects/${slug}/keys`, session, JSON.stringify({ kind: 'ingest', name: `k${k}` }));
        if (r.status !== 201) throw new Error(`key: ${r.status} ${r.body}`);
        keys.push({ key: JSON.parse(r.body).key.token, origin: `https://${domain}`, slug });
      }
    }
    log(`${PROJECTS} projects, ${keys.length} ingest keys; waiting for the edge to know them`);
    for (;;) {
      const last = keys[keys.length - 1]!;
      const r = await request(
        base,
        'POST',
        '/v1/errors/i',
        { authorization: `Bearer ${last.key}`, 'content-type': 'application/json', origin: last.origin, 'x-forwarded-for': '10.9.9.9' },
        errorBatchBody(0, 1),
      );
      if (r.status === 202) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    let accepted = 1;
    const bodies = Array.from({ length: 64 }, (_, n) => errorBatchBody(n, EVENTS_PER_BATCH));
    const latencies: number[] = [];
    const statuses: Record<number, number> = {};
    const perSecond = RATE / EVENTS_PER_BATCH;
    const total = Math.round(perSecond * DURATION);
    const cpu0 = await cpuOf();
    const t0 = performance.now();
    const pending: Array<Promise<void>> = [];
    log(`load: ${RATE} events/s for ${DURATION} s (${total} requests)`);
    for (let n = 0; n < total; n++) {
      const due = t0 + (n * 1000) / perSecond;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const k = keys[n % keys.length]!;
      const started = performance.now();
      pending.push(
        request(
          base,
          'POST',
          '/v1/errors/i',
          {
            authorization: `Bearer ${k.key}`,
            'content-type': 'application/json',
            origin: k.origin,
            'x-forwarded-for': `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`,
          },
          bodies[n % bodies.length],
        ).then(
          (r) => {
            statuses[r.status] = (statuses[r.status] ?? 0) + 1;
            if (r.status === 202) {
              accepted += EVENTS_PER_BATCH;
              latencies.push(performance.now() - started);
            }
          },
          () => void (statuses[0] = (statuses[0] ?? 0) + 1),
        ),
      );
    }
    const offeredFor = (performance.now() - t0) / 1000;
    await Promise.all(pending);
    const loadEnd = performance.now();
    const cpu = (await cpuOf()) - cpu0;
    log(`accepted ${accepted} events; waiting until every one is visible`);
    // Visible: the issues' counts (every project's) add up to every event accepted.
    let visibleAfterMs = Number.NaN;
    let counted = 0;
    for (;;) {
      counted = 0;
      for (let p = 0; p < PROJECTS; p++) {
        const r = await request(base, 'GET', `/v1/projects/bench-${p}/errors?status=unresolved&limit=100`, { cookie });
        for (const issue of JSON.parse(r.body).data as Array<{ count: number }>) counted += issue.count;
      }
      if (counted >= accepted) {
        visibleAfterMs = Math.round(performance.now() - loadEnd);
        break;
      }
      if (performance.now() - loadEnd > 120_000) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    console.log(
      JSON.stringify(
        {
          machine: machine(),
          settings: { rate: RATE, durationSec: DURATION, projects: PROJECTS, keys: keys.length, eventsPerBatch: EVENTS_PER_BATCH },
          offeredEventsPerS: Math.round((total * EVENTS_PER_BATCH) / offeredFor),
          statuses,
          acceptedEvents: accepted,
          latencyMs: { p50: pct(latencies, 50), p90: pct(latencies, 90), p99: pct(latencies, 99), max: pct(latencies, 100) },
          allVisibleAfterLoadMs: visibleAfterMs,
          counted,
          serviceCpuSecondsDuringLoad: +cpu.toFixed(1),
        },
        null,
        2,
      ),
    );
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
    request.destroy();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
