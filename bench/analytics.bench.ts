/**
 * Analytics and flags benchmark (issue 16, "Tests and numbers"). Loopback only, bounded durations, one run:
 *   1. `POST /v1/analytics/i` on the edge (validation path: a bus that resolves at once, a limiter that always
 *      allows) against a bare uWebSockets.js server reading the same body: peak requests/s, ratio;
 *   2. `GET /v1/flags/i` with 50 flags defined, against a bare uWebSockets.js server answering the same JSON: peak
 *      evaluations/s, ratio; and the latency-bounded rate of each: the highest evenly paced rate whose p99 stays at
 *      or under 15 ms (a search over rates, paced-load.ts), and their ratio;
 *   3. `--e2e`: events per second from the edge into ClickHouse rows, end to end on Kafka: the librdkafka mock
 *      cluster, Postgres, ClickHouse's HTTP interface from chDB, and the ingest and processor roles in processes of
 *      their own, all on this machine. The load offers `--e2e-rate` events/s evenly, in 50-event batches (~300 bytes
 *      an event), for `--e2e-duration` seconds, over enough keys and client IPs that the rate limits never bind;
 *      sustained means the rows keep up (a short drain after the load). The mock keeps only ~5 MB per partition, so a
 *      rate far over the ceiling loses the backlog there: compare the drain, not only the total.
 *
 * `--pin` applies to parts 1 and 2 (the roles of part 3 would inherit this process's CPU): run `--e2e --only-e2e`
 * without it.
 *
 *   npx tsx bench/analytics.bench.ts [--duration 10] [--connections 100] [--pin] [--e2e [--only-e2e] --e2e-duration 20 --e2e-rate 20000]
 * Prints one JSON document on stdout (progress on stderr).
 */
import http from 'node:http';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import uWS from 'uWebSockets.js';
import pg from 'pg';
import { createClient } from '@clickhouse/client';
import { newId, newToken, tokenHash } from '../platform/tokens.ts';
import { TOKEN_PREFIX } from '../schemas/scopes.ts';
import { FlagDefinitionSchema } from '../schemas/flags.ts';
import { startIngestServer } from '../ingest/ingest-server.ts';
import { flagsAnswer, parseFlagQuery } from '../ingest/flags-route.ts';
import { createIngestProject, createRecordingBus } from '../test/support/ingest-fixtures.ts';
import { startKafkaMockProcess } from '../test/support/kafka-mock-process.ts';
import { spawnRole } from '../test/e2e/support/spawn-role.ts';
import { isolatedBus } from '../test/e2e/support/isolated-bus.ts';
import { cannon, edgePlatform, isPinned, log, machine, paced, pinThisProcess, settingsStore } from './support/edge-bench.ts';
import { spawnChdb } from './support/chdb-server-process.ts';
import { cpuSecondsOf, cpuSecondsOfNamed, insertBenchProject, insertBenchUser } from './support/error-load.ts';
import { numberArg, flagArg } from './support/cli-args.ts';

const DURATION = numberArg('duration', 10);
const CONNECTIONS = numberArg('connections', 100);
const P99_BOUND_MS = 15;

/** Stands for the request's number (8 hex digits) in the uuids of analyticsBody(). */
const REQ = 'RRRRRRRR';
const forRequest = (template: string, n: number) => template.replaceAll(REQ, n.toString(16).padStart(8, '0'));

/** 50 events of about 300 bytes each, as a browser SDK batches them; each uuid carries REQ. */
function analyticsBody(): string {
  return JSON.stringify({
    batch: Array.from({ length: 50 }, (_, i) => ({
      event: i % 5 ? 'pageview' : 'button_clicked',
      distinctId: `anon_${(i * 7919).toString(36).padStart(12, '0')}`,
      uuid: `${REQ}-0000-4000-8000-${i.toString(16).padStart(12, '0')}`,
      timestamp: Date.now(),
      sessionId: `ses_${'s'.repeat(24)}`,
      path: `/dashboard/projects/${i}`,
      properties: { plan: i % 3 ? 'free' : 'pro', referrer: 'https://www.example.com/blog/launch', screen: '1280x800', locale: 'en-GB', count: i },
    })),
  });
}

/** 50 flags of the kinds a product has: plain, rolled out, multivariate, with conditions. */
function fiftyFlags() {
  return Array.from({ length: 50 }, (_, i) =>
    FlagDefinitionSchema.parse({
      key: `flag-${i}`,
      enabled: i % 10 !== 0,
      rolloutPercentage: (i * 7) % 101,
      variants:
        i % 4 === 0
          ? [
              { key: 'control', weight: 50 },
              { key: 'test', weight: 50 },
            ]
          : [],
      payload: i % 5 === 0 ? { color: 'green', limit: i } : undefined,
      conditions:
        i % 3 === 0
          ? [
              { environments: ['production'], properties: [{ key: 'plan', operator: 'eq', value: 'pro' }], rolloutPercentage: 100 },
              { environments: ['preview'] },
            ]
          : [],
    }),
  );
}

function bareServer(route: { method: 'post' | 'get'; path: string; answer: string; status: string }): Promise<{ port: number; close(): void }> {
  const app = uWS.App();
  if (route.method === 'post') {
    app.post(route.path, (res) => {
      let aborted = false;
      const chunks: Buffer[] = [];
      res.onAborted(() => (aborted = true));
      res.onData((chunk, isLast) => {
        chunks.push(Buffer.from(new Uint8Array(chunk)));
        if (isLast && !aborted) {
          Buffer.concat(chunks);
          res.cork(() => res.writeStatus(route.status).writeHeader('Content-Type', 'application/json').end(route.answer));
        }
      });
    });
  } else {
    app.get(route.path, (res) => {
      res.cork(() => res.writeStatus(route.status).writeHeader('Content-Type', 'application/json').end(route.answer));
    });
  }
  return new Promise((resolve, reject) =>
    app.listen('127.0.0.1', 0, (ls) =>
      ls
        ? resolve({ port: uWS.us_socket_local_port(ls as unknown as uWS.us_socket), close: () => uWS.us_listen_socket_close(ls) })
        : reject(new Error('bare server could not listen')),
    ),
  );
}

/** The highest evenly paced rate (of `rates`, ascending) whose p99 is at most P99_BOUND_MS, searched by halving. */
async function latencyBoundedRate(
  port: number,
  urlPath: string,
  headers: Record<string, string>,
  hi: number,
): Promise<{ rate: number; p99ms: number; tried: Array<{ rate: number; p99ms: number; achieved: number }> }> {
  const tried: Array<{ rate: number; p99ms: number; achieved: number }> = [];
  let lo = 0;
  let best = { rate: 0, p99ms: Number.NaN };
  let top = hi;
  for (let step = 0; step < 6; step++) {
    const rate = Math.round((lo + top) / 2);
    const r = await paced(port, urlPath, undefined, headers, { duration: 4, rate, connections: 200 });
    const ok = r.latencyMs.p99 <= P99_BOUND_MS && r.errors === 0 && r.achievedRps >= rate * 0.95;
    tried.push({ rate, p99ms: r.latencyMs.p99, achieved: r.achievedRps });
    log(`paced GET ${rate}/s: p99 ${r.latencyMs.p99} ms, achieved ${r.achievedRps}/s ${ok ? 'ok' : 'over'}`);
    if (ok) {
      lo = rate;
      best = { rate, p99ms: r.latencyMs.p99 };
    } else top = rate;
  }
  return { ...best, tried };
}

async function edgeParts(result: Record<string, unknown>): Promise<void> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'bench-analytics-'));
  const bodyFile = path.join(tmp, 'batch.json');
  const body = forRequest(analyticsBody(), 0);
  await writeFile(bodyFile, body);

  // 1. analytics ingest: bare vs edge (validation path)
  const bareA = await bareServer({ method: 'post', path: '/v1/analytics/i', answer: '{"ingested":50,"rejected":[]}', status: '202 Accepted' });
  const bareIngest = await cannon(
    `http://127.0.0.1:${bareA.port}/v1/analytics/i`,
    bodyFile,
    { 'content-type': 'application/json' },
    { duration: DURATION, connections: CONNECTIONS },
  );
  bareA.close();
  const platform = await edgePlatform(createRecordingBus({ record: false }));
  const project = await createIngestProject(platform);
  for (const f of fiftyFlags())
    await platform.db.query(`INSERT INTO feature_flags (id, project_id, key, definition) VALUES ($1, $2, $3, $4::jsonb)`, [
      newId('flg_'),
      project.projectId,
      f.key,
      JSON.stringify(f),
    ]);
  const edge = await startIngestServer(platform, { port: 0, host: '127.0.0.1' });
  const auth = { authorization: `Bearer ${project.ingestKey}` };
  const edgeIngest = await cannon(
    `http://127.0.0.1:${edge.port}/v1/analytics/i`,
    bodyFile,
    { 'content-type': 'application/json', ...auth },
    { duration: DURATION, connections: CONNECTIONS },
  );
  log(
    `analytics ingest: bare ${Math.round(bareIngest.requests.average)} req/s, edge ${Math.round(edgeIngest.requests.average)} req/s (non2xx ${edgeIngest.non2xx})`,
  );
  result.analyticsIngest = {
    bodyBytes: Buffer.byteLength(body),
    eventsPerBatch: 50,
    bare: { rps: Math.round(bareIngest.requests.average), p99ms: bareIngest.latency.p99 },
    edge: {
      rps: Math.round(edgeIngest.requests.average),
      eventsPerS: Math.round(edgeIngest.requests.average * 50),
      p99ms: bareIngest.latency.p99 && edgeIngest.latency.p99,
      non2xx: edgeIngest.non2xx,
    },
    ratio: Number((edgeIngest.requests.average / bareIngest.requests.average).toFixed(3)),
  };

  // 2. flags: the same JSON from a bare server, then the edge evaluating 50 flags
  const flagPath = `/v1/flags/i?distinctId=anon_123456789&properties=${encodeURIComponent('{"plan":"pro"}')}`;
  const q = parseFlagQuery(flagPath.split('?')[1]!);
  if ('reason' in q) throw new Error('bad flag query');
  // In the edge's order (by key), so the bare server answers byte for byte the same JSON.
  const flags = new Map(
    fiftyFlags()
      .sort((a, b) => (a.key < b.key ? -1 : 1))
      .map((f) => [f.key, f]),
  );
  const sameJson = flagsAnswer(flags, q, 'unknown').body;
  const bareF = await bareServer({ method: 'get', path: '/v1/flags/i', answer: sameJson, status: '200 OK' });
  const bareFlags = await cannon(`http://127.0.0.1:${bareF.port}${flagPath}`, undefined, {}, { duration: DURATION, connections: CONNECTIONS });
  const edgeFlags = await cannon(`http://127.0.0.1:${edge.port}${flagPath}`, undefined, auth, { duration: DURATION, connections: CONNECTIONS });
  log(`flags: bare ${Math.round(bareFlags.requests.average)} req/s, edge ${Math.round(edgeFlags.requests.average)} req/s (non2xx ${edgeFlags.non2xx})`);
  const check = await (await fetch(`http://127.0.0.1:${edge.port}${flagPath}`, { headers: auth })).text();
  const bareBounded = await latencyBoundedRate(bareF.port, flagPath, {}, Math.round(bareFlags.requests.average * 1.2));
  const edgeBounded = await latencyBoundedRate(edge.port, flagPath, auth, Math.round(edgeFlags.requests.average * 1.2));
  bareF.close();
  // The cost of an answer not cached (a distinctId asking for the first time), in this process, no HTTP.
  const N = 20_000;
  const t0 = performance.now();
  for (let i = 0; i < N; i++) {
    const one = parseFlagQuery(`distinctId=anon_${i}&properties=${encodeURIComponent('{"plan":"pro"}')}`);
    if (!('reason' in one)) flagsAnswer(flags, one, 'unknown');
  }
  const uncachedUs = ((performance.now() - t0) * 1000) / N;
  result.flags = {
    uncachedAnswerMicroseconds: Number(uncachedUs.toFixed(1)),
    flagsDefined: 50,
    answerBytes: Buffer.byteLength(sameJson),
    edgeAnswersTheSameJson: check === sameJson,
    peak: {
      bare: { rps: Math.round(bareFlags.requests.average), p99ms: bareFlags.latency.p99 },
      edge: { rps: Math.round(edgeFlags.requests.average), p99ms: edgeFlags.latency.p99, non2xx: edgeFlags.non2xx },
      ratio: Number((edgeFlags.requests.average / bareFlags.requests.average).toFixed(3)),
    },
    latencyBounded: {
      p99BoundMs: P99_BOUND_MS,
      bare: bareBounded,
      edge: edgeBounded,
      ratio: bareBounded.rate ? Number((edgeBounded.rate / bareBounded.rate).toFixed(3)) : null,
    },
  };
  await edge.close();
  await platform.close();
  await rm(tmp, { recursive: true, force: true });
}

/** 3. Edge -> Kafka -> processor -> ClickHouse rows, every part a process of its own on this machine. */
async function endToEnd(result: Record<string, unknown>): Promise<void> {
  const seconds = numberArg('e2e-duration', 20);
  const rate = numberArg('e2e-rate', 20_000);
  const KEYS = 64;
  const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const cleanups: Array<() => Promise<void>> = [];
  try {
    const kafka = await startKafkaMockProcess({ dataPath: 'direct' });
    cleanups.push(kafka.stop);
    const chDir = await mkdtemp(path.join(os.tmpdir(), 'bench-chdb-'));
    cleanups.push(() => rm(chDir, { recursive: true, force: true }));
    const ch = await spawnChdb(chDir);
    cleanups.push(ch.stop);
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'bench-analytics-e2e-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));
    const env = {
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      PUBLIC_BASE_URL: 'http://localhost:8080',
      DATABASE_URL,
      CLICKHOUSE_URL: ch.url,
      KAFKA_BROKERS: kafka.brokers,
      REDIS_URL: 'redis://127.0.0.1:6379',
      SMTP_URL: 'smtp://127.0.0.1:1',
      TRUST_PROXY: 'true',
      ...isolatedBus('bench-analytics'),
    };
    // BENCH_PROFILE=processor (or ingest): that role's CPU profile, written to profiles/ when it stops.
    const profileOf = (role: string) => (process.env.BENCH_PROFILE === role ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve('profiles')}`] : []);
    const processor = await spawnRole('processor', env, {}, 120_000, profileOf('processor'));
    cleanups.push(() => processor.stop());
    const ingest = await spawnRole('ingest', env, {}, 120_000, profileOf('ingest'));
    cleanups.push(() => ingest.stop());

    const db = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
    cleanups.push(() => db.end());
    const userId = await insertBenchUser(db);
    const { id: projectId } = await insertBenchProject(db, userId, 'bench-analytics');
    cleanups.push(async () => {
      await db.query('DELETE FROM analytics_batches_consumed WHERE project_id = $1', [projectId]);
      await db.query('DELETE FROM projects WHERE owner_id = $1', [userId]);
      await db.query('DELETE FROM users WHERE id = $1', [userId]);
    });
    const tokens: string[] = [];
    for (let k = 0; k < KEYS; k++) {
      const t = newToken(TOKEN_PREFIX.ingestKey);
      await db.query(`INSERT INTO api_keys (id, project_id, kind, hint, token_hash) VALUES ($1, $2, 'ingest', 'bench', $3)`, [
        newId('key_'),
        projectId,
        tokenHash(t),
      ]);
      tokens.push(t);
    }
    await new Promise((r) => setTimeout(r, 3_000)); // the edge's settings refresh
    const clickhouse = createClient({ url: ch.url });
    cleanups.push(() => clickhouse.close());
    const stored = async () =>
      Number(
        (
          (await (
            await clickhouse.query({
              query: `SELECT count() AS n FROM analytics_events WHERE project_id = {p:String}`,
              query_params: { p: projectId },
              format: 'JSONEachRow',
            })
          ).json()) as Array<{ n: string }>
        )[0]!.n,
      );

    // The load: evenly paced (every 10 ms its share of the rate), keep-alive connections, each request with its own
    // key and client IP (pairs stay under the limits), a fresh uuid per event.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
    const template = analyticsBody();
    const requestsPerS = rate / 50;
    let accepted = 0;
    let refused = 0;
    let n = 0;
    const inFlight = new Set<Promise<void>>();
    const post = (i: number) =>
      new Promise<void>((resolve) => {
        const req = http.request(
          {
            host: '127.0.0.1',
            port: ingest.port,
            path: '/v1/analytics/i',
            method: 'POST',
            agent,
            headers: {
              'content-type': 'application/json',
              authorization: `Bearer ${tokens[i % KEYS]}`,
              'x-forwarded-for': `10.1.${(i >> 8) & 255}.${i & 255}`,
            },
          },
          (res) => {
            res.resume();
            res.on('end', () => {
              if (res.statusCode === 202) accepted += 50;
              else refused++;
              resolve();
            });
          },
        );
        req.on('error', () => {
          refused++;
          resolve();
        });
        req.end(forRequest(template, i));
      });
    // CPU seconds of each part over the run, to tell what bounds the rate (everything shares two cores).
    const cpu = async () => ({
      ingest: await cpuSecondsOf(ingest.child.pid!),
      processor: await cpuSecondsOf(processor.child.pid!),
      clickhouseFromChdb: await cpuSecondsOf(ch.pid),
      kafkaMock: await cpuSecondsOfNamed('kcat'),
      postgres: await cpuSecondsOfNamed('postgres'),
      loadGenerator: process.cpuUsage().user / 1e6 + process.cpuUsage().system / 1e6,
    });
    const cpuBefore = await cpu();
    const start = performance.now();
    while (performance.now() < start + seconds * 1000) {
      const due = Math.floor(((performance.now() - start) / 1000) * requestsPerS);
      while (n < due && inFlight.size < 512) {
        const p = post(n++).then(() => void inFlight.delete(p));
        inFlight.add(p);
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    await Promise.all(inFlight);
    const cpuAtLoadEnd = await cpu();
    const storedAtLoadEnd = await stored();
    const loadEnd = performance.now();
    log(
      `e2e load: ${accepted} events accepted in ${seconds} s (${Math.round(accepted / seconds)}/s offered ${rate}/s), ${refused} requests refused, ${storedAtLoadEnd} rows stored meanwhile`,
    );
    // Until every accepted event is a row, or no row came for 10 s (the mock dropped a backlog it could not hold).
    let rows = 0;
    let lastChange = performance.now();
    for (;;) {
      const now = await stored();
      if (now !== rows) lastChange = performance.now();
      rows = now;
      if (rows >= accepted || performance.now() - lastChange > 10_000) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const end = performance.now();
    const wall = (loadEnd - start) / 1000;
    const cpuShare = Object.fromEntries(
      Object.entries(cpuAtLoadEnd).map(([k, v]) => [k, Number(((v - cpuBefore[k as keyof typeof cpuBefore]) / wall).toFixed(2))]),
    );
    result.endToEnd = {
      cpuCoresUsedByPartWhileLoading: cpuShare,
      offeredEventsPerS: rate,
      offeredSeconds: seconds,
      storedWhileLoading: storedAtLoadEnd,
      storedEventsPerSWhileLoading: Math.round(storedAtLoadEnd / wall),
      behindAtLoadEnd: accepted - storedAtLoadEnd,
      acceptedEvents: accepted,
      refusedRequests: refused,
      storedRows: rows,
      edgeAcceptedEventsPerS: Math.round(accepted / ((loadEnd - start) / 1000)),
      storedEventsPerS: Math.round(rows / ((end - start) / 1000)),
      drainSecondsAfterLoad: Number(((end - loadEnd) / 1000).toFixed(1)),
    };
    log(`e2e: ${rows} rows in ${((end - start) / 1000).toFixed(1)} s: ${Math.round(rows / ((end - start) / 1000))} events/s stored`);
  } finally {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  }
}

await main();

async function main(): Promise<void> {
  if (flagArg('pin')) pinThisProcess();
  const result: Record<string, unknown> = { machine: machine(), settings: { durationSec: DURATION, connections: CONNECTIONS, pinned: isPinned() } };
  try {
    if (!flagArg('only-e2e')) {
      await edgeParts(result);
      result.settingsStore = settingsStore;
    }
    if (flagArg('e2e')) await endToEnd(result);
    process.stdout.write(JSON.stringify(result, null, 2) + '\n');
    process.exit(0);
  } catch (err) {
    process.stderr.write(`bench failed: ${(err as Error)?.stack ?? err}\n`);
    process.exit(1);
  }
}
