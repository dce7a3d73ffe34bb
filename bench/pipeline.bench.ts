/**
 * Whole-path benchmark (issue 3, "Tests and numbers"): HTTP 202 at the edge -> Kafka -> processor ->
 * group row in Postgres and occurrence row in ClickHouse -> the count visible in the API.
 * Everything on this machine, loopback only, Kafka mode:
 *   - Kafka: the librdkafka mock cluster (kcat, test/support/kafka-mock.ts);
 *   - Postgres 127.0.0.1:5432/test, Redis 127.0.0.1:6379 (the running servers);
 *   - ClickHouse: its HTTP interface served from chDB in a child process (the @clickhouse/client path);
 *   - ingest, processor and api: one child process each (test/e2e/support/role-process.ts), configured
 *     from the environment like `service/main.ts <role>`.
 * This process is the load: 10-event batches (~4 KB) at an open-loop target rate for `--duration`
 * seconds, spread over enough ingest keys (and client IPs through the trusted proxy header) that the
 * production rate limits never bind. Every 100 ms a marker event with a fingerprint of its own is posted
 * and the API is polled until its issue shows; the 202-to-visible latency is recorded.
 *
 *   npx tsx bench/pipeline.bench.ts [--duration 30] [--rate 15000] [--projects 120] [--keys 16]
 * Prints one JSON document on stdout (progress on stderr).
 */
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createClient } from '@clickhouse/client';
import { newId, newToken, tokenHash } from '../platform/tokens.ts';
import { TOKEN_PREFIX } from '../schemas/scopes.ts';
import { computeFingerprint, groupIdFor } from '../processor/errors/fingerprint.ts';
import { startKafkaMockProcess } from '../test/support/kafka-mock-process.ts';
import { spawnRole, type RoleProcess } from '../test/e2e/support/spawn-role.ts';
import { spawnChdb } from './support/chdb-server-process.ts';
import { isolatedBus } from '../test/e2e/support/isolated-bus.ts';
import { TOPICS } from '../schemas/topics.ts';
import { cpuSecondsOf, errorBatchBody, insertBenchProject, insertBenchUser, pidsByName } from './support/error-load.ts';
import { loadKafkajs } from '../platform/adapters/bus/kafkajs-runtime.ts';
import { numberArg, flagArg } from './support/cli-args.ts';
import { inertMailer } from '../test/support/stubs.ts';

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

await main();

async function main(): Promise<void> {
  const DURATION_S = numberArg('duration', 30);
  const RATE = numberArg('rate', 15_000); // events per second offered
  // The load has no Origin, so its events are `unknown`, which counts against the preview cap (5,000 per
  // project and month, §7.5): 120 projects keep a 30 s run at 15,000 events/s (450,000) under the caps,
  // which would otherwise drop the tail and make the pipeline look slower than it is.
  const PROJECTS = numberArg('projects', 120);
  const KEYS_PER_PROJECT = numberArg('keys', 16);
  const EVENTS_PER_BATCH = 10;
  const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';

  const cleanups: Array<() => Promise<void>> = [];
  const cleanup = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  };
  process.on('SIGINT', () => void cleanup().then(() => process.exit(130)));

  try {
    const machine = {
      nproc: os.cpus().length,
      cpu: os.cpus()[0]?.model,
      node: process.version,
      loadAverageAtStart: os.loadavg().map((x) => Number(x.toFixed(2))),
    };
    log(`machine ${JSON.stringify(machine)}`);

    // The mock cluster and its metadata-fixing proxy in a process of their own, so their CPU is counted apart.
    // Clients talk to the brokers directly (only bootstrap goes through the proxy) unless --kafka-proxied.
    const kafka = await startKafkaMockProcess({ dataPath: flagArg('kafka-proxied') ? 'proxied' : 'direct' });
    cleanups.push(kafka.stop);
    const chDir = await mkdtemp(path.join(os.tmpdir(), 'bench-chdb-'));
    cleanups.push(() => rm(chDir, { recursive: true, force: true }));
    // BENCH_PROFILE=chdb: the chDB server's V8 CPU profile (its JS; the engine's native time shows as program).
    const ch = await spawnChdb(chDir, process.env.BENCH_PROFILE === 'chdb' ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve('profiles')}`] : []);
    cleanups.push(ch.stop);
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'bench-pipeline-'));
    cleanups.push(() => rm(dataDir, { recursive: true, force: true }));

    const env: Record<string, string> = {
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      PUBLIC_BASE_URL: 'http://localhost:8080',
      DATABASE_URL,
      CLICKHOUSE_URL: ch.url,
      KAFKA_BROKERS: kafka.brokers,
      REDIS_URL,
      // The bench's fake SMTP target is never reached: alerts need production origins, which the load has none of.
      SMTP_URL: 'smtp://127.0.0.1:1',
      // Client IPs come from X-Forwarded-For, as behind the reverse proxy of the distributed setup.
      TRUST_PROXY: 'true',
      ...isolatedBus('bench'),
    };
    const id = randomUUID();
    const roles: Record<string, RoleProcess> = {};
    for (const role of ['processor', 'api', 'ingest'] as const) {
      // BENCH_PROFILE=processor (or ingest, api) writes that role's V8 CPU profile to ./profiles at exit.
      const profile = process.env.BENCH_PROFILE === role ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve('profiles')}`] : [];
      roles[role] = await spawnRole(role, env, {}, 120_000, profile);
      cleanups.push(() => roles[role]!.stop());
    }
    const ingestUrl = { host: '127.0.0.1', port: roles.ingest!.port! };
    const apiPort = roles.api!.port!;
    log(`roles up: ingest :${ingestUrl.port}, api :${apiPort}, processor pid ${roles.processor!.child.pid}`);

    // Projects and keys straight into Postgres (as the fixtures do); the edge picks them up on refresh.
    const db = new pg.Pool({ connectionString: DATABASE_URL, max: 4 });
    cleanups.push(() => db.end());
    const userId = await insertBenchUser(db);
    // Leave the shared database as it was: the run's user, its projects (groups, keys, settings and
    // usage go with them) and their ledger rows, then a plain VACUUM, since the machine's Postgres runs
    // with autovacuum off and a run leaves hundreds of MB of dead group versions behind.
    cleanups.push(async () => {
      const owned = `SELECT id FROM projects WHERE owner_id = $1`;
      await db.query(`DELETE FROM error_events_consumed WHERE project_id IN (${owned})`, [userId]);
      await db.query(`DELETE FROM projects WHERE owner_id = $1`, [userId]);
      await db.query(`DELETE FROM users WHERE id = $1`, [userId]);
      const tables = ['error_groups', 'error_group_samples', 'error_events_consumed', 'error_monthly_usage'];
      const present = (await db.query<{ t: string }>('SELECT tablename AS t FROM pg_tables WHERE tablename = ANY($1::text[])', [tables])).rows.map((r) => r.t);
      await db.query(`VACUUM ${present.join(', ')}`);
    });
    const projects: Array<{ id: string; keys: string[] }> = [];
    const newProject = async (keys: number) => {
      const { id: pid, slug } = await insertBenchProject(db, userId, 'bench');
      const tokens: string[] = [];
      for (let k = 0; k < keys; k++) {
        const t = newToken(TOKEN_PREFIX.ingestKey);
        await db.query(`INSERT INTO api_keys (id, project_id, kind, hint, token_hash) VALUES ($1, $2, 'ingest', 'bench', $3)`, [
          newId('key_'),
          pid,
          tokenHash(t),
        ]);
        tokens.push(t);
      }
      return { id: pid, slug, keys: tokens };
    };
    for (let i = 0; i < PROJECTS; i++) projects.push(await newProject(KEYS_PER_PROJECT));
    const marker = await newProject(4);
    const apiKey = newToken(TOKEN_PREFIX.liveKey);
    await db.query(`INSERT INTO api_keys (id, project_id, kind, hint, token_hash, scopes) VALUES ($1, $2, 'live', 'bench', $3, '{errors:read}')`, [
      newId('key_'),
      marker.id,
      tokenHash(apiKey),
    ]);
    const allKeys = projects.flatMap((p) => p.keys);
    const projectIds = projects.map((p) => p.id);
    log(`${projects.length} projects, ${allKeys.length} ingest keys; waiting for the edge to load them`);

    const agent = new http.Agent({ keepAlive: true, maxSockets: 128 });
    const post = (key: string, ip: string, body: string) =>
      new Promise<number>((resolve) => {
        const req = http.request(
          {
            ...ingestUrl,
            agent,
            method: 'POST',
            path: '/v1/errors/i',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'x-forwarded-for': ip },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', () => resolve(0));
        req.end(body);
      });
    const get = (p: string) =>
      new Promise<number>((resolve) => {
        const req = http.request({ host: '127.0.0.1', port: apiPort, agent, path: p, headers: { authorization: `Bearer ${apiKey}` } }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', () => resolve(0));
        req.end();
      });

    // Wait until the edge knows every key (an empty batch: 401 unknown, 400 known).
    const empty = JSON.stringify({ batch: [] });
    for (const k of [allKeys[allKeys.length - 1]!, marker.keys[3]!]) {
      const end = Date.now() + 30_000;
      while ((await post(k, '192.0.2.1', empty)) !== 400) {
        if (Date.now() > end) throw new Error('edge did not load the bench keys');
        await sleep(100);
      }
    }

    const bodyFor = (n: number) => errorBatchBody(n, EVENTS_PER_BATCH);
    // 2,000 bodies built ahead and sent in turn, so the load generator spends its share of the two
    // cores on sending; the edge still parses and validates every one, and event ids are its own.
    const BODIES = Array.from({ length: 2_000 }, (_, i) => bodyFor(i));
    log(`batch body ~${Buffer.byteLength(BODIES[0]!)} bytes`);

    // Samplers: processed (sum of group counts in Postgres, occurrence rows in ClickHouse) over time.
    const chClient = createClient({ url: ch.url });
    cleanups.push(() => chClient.close());
    const groupsSum = async () =>
      Number(
        (await db.query<{ n: string | null }>('SELECT sum(count) AS n FROM error_groups WHERE project_id = ANY($1::text[])', [projectIds])).rows[0]!.n ?? 0,
      );
    const chRows = async () => {
      const r = await chClient.query({
        query: 'SELECT count() AS n FROM error_occurrences WHERE project_id IN {ids:Array(String)}',
        query_params: { ids: projectIds },
        format: 'JSONEachRow',
      });
      return Number(((await r.json()) as Array<{ n: string }>)[0]?.n ?? 0);
    };
    const rolePids = Object.fromEntries(Object.entries(roles).map(([r, p]) => [r, p.child.pid!]));
    // The shared servers are counted by process name: every postgres process (the bench's backends
    // are the only busy ones), the kcat mock cluster, redis.
    const cpuSnapshot = async () => {
      const out: Record<string, number> = {};
      for (const [r, pid] of Object.entries({ ...rolePids, chdb: ch.pid, kafkaProxy: kafka.pid, loadGenerator: process.pid })) out[r] = await cpuSecondsOf(pid);
      for (const [name, pids] of Object.entries(await pidsByName(['postgres', 'kcat', 'redis-server']))) {
        out[name] = (await Promise.all(pids.map(cpuSecondsOf))).reduce((a, b) => a + b, 0);
      }
      return out;
    };

    // Load: open loop, one tick every 10 ms sends its share of batches.
    const status: Record<number, number> = {};
    let acceptedEvents = 0;
    let sent = 0;
    let inflight = 0;
    let droppedTicks = 0;
    const batchesPerMs = RATE / EVENTS_PER_BATCH / 1000;
    let n = 0;
    const keyUse = new Map<string, number>();
    const send = () => {
      const key = allKeys[n % allKeys.length]!;
      const uses = (keyUse.get(key) ?? 0) + 1;
      keyUse.set(key, uses);
      // Ten client IPs per key: the per key+IP limit (30/min) never binds before the per-key one (200/min).
      const ip = `10.${(n >> 8) & 255}.${n & 255}.${uses % 10}`;
      const body = BODIES[n++ % BODIES.length]!;
      sent++;
      inflight++;
      void post(key, ip, body).then((s) => {
        inflight--;
        status[s] = (status[s] ?? 0) + 1;
        if (s === 202) acceptedEvents += EVENTS_PER_BATCH;
      });
    };

    // Markers: a fingerprint of their own every 100 ms; latency from the 202 to the issue in the API.
    const latencies: number[] = [];
    let markersMissed = 0;
    let m = 0;
    const letters = (x: number) => {
      let s = '';
      do {
        s = String.fromCharCode(97 + (x % 26)) + s;
        x = Math.floor(x / 26);
      } while (x > 0);
      return s;
    };
    const markerTasks: Promise<void>[] = [];
    // At most this many markers are being polled at once: under a growing backlog, unbounded pollers
    // would load the API and Postgres and slow the very pipeline they measure.
    const MAX_POLLING = 5;
    let polling = 0;
    let markersSkipped = 0;
    const sendMarker = () => {
      if (polling >= MAX_POLLING) {
        markersSkipped++;
        return;
      }
      polling++;
      const i = m++;
      const message = `bench marker ${letters(i)}-${letters(Number(id.replace(/\D/g, '').slice(0, 6)) || 0)}`;
      const groupId = groupIdFor(marker.id, computeFingerprint('BenchMarker', message, '').fingerprint);
      const body = JSON.stringify({ batch: [{ name: 'BenchMarker', message, runtime: 'node' }] });
      markerTasks.push(
        (async () => {
          try {
            await markerRun(i, body, groupId);
          } finally {
            polling--;
          }
        })(),
      );
    };
    const markerRun = async (i: number, body: string, groupId: string) => {
      {
        {
          const s = await post(marker.keys[i % marker.keys.length]!, `192.0.2.${i % 200}`, body);
          if (s !== 202) {
            markersMissed++;
            return;
          }
          const t0 = performance.now();
          const end = t0 + 30_000;
          while (performance.now() < end) {
            if ((await get(`/v1/projects/${marker.slug}/errors/${groupId}`)) === 200) {
              latencies.push(performance.now() - t0);
              return;
            }
            await sleep(100);
          }
          markersMissed++;
        }
      }
    };

    const samples: Array<{ t: number; accepted: number; groups: number; occurrences: number }> = [];
    const t0 = performance.now();
    const cpuStart = await cpuSnapshot();
    let loading = true;
    const ticker = setInterval(() => {
      if (!loading) return;
      // Paced by elapsed time, not by ticks: a late timer sends what it owes.
      const due = Math.floor((performance.now() - t0) * batchesPerMs) - sent - droppedTicks;
      for (let i = 0; i < due; i++) {
        // Back-pressure guard: an open loop that outruns the edge would only queue in this process.
        if (inflight > 2_000) droppedTicks++;
        else send();
      }
    }, 10);
    const markerTimer = setInterval(() => loading && sendMarker(), 100);
    const sampler = (async () => {
      while (loading || samples.length === 0 || samples[samples.length - 1]!.groups < acceptedEvents) {
        const [groups, occurrences] = await Promise.all([groupsSum(), chRows()]);
        samples.push({ t: (performance.now() - t0) / 1000, accepted: acceptedEvents, groups, occurrences });
        if (!loading && performance.now() - t0 > (DURATION_S + 60) * 1000) break;
        await sleep(1000);
      }
    })();

    await sleep(DURATION_S * 1000);
    loading = false;
    clearInterval(ticker);
    clearInterval(markerTimer);
    const loadSeconds = (performance.now() - t0) / 1000;
    const cpuEnd = await cpuSnapshot();
    const loadAverageAtEnd = os.loadavg().map((x) => Number(x.toFixed(2)));
    while (inflight > 0) await sleep(20);
    log(`load done: ${acceptedEvents} events accepted in ${loadSeconds.toFixed(1)} s; draining`);
    await sampler;
    await Promise.all(markerTasks);
    // The mock cluster's log window per partition at the end (low = oldest offset it still holds): it
    // keeps only about the last ~900 messages (~4.6 MB) of a partition, so when the processor falls
    // further behind than that on a partition, the oldest unconsumed messages are gone from the broker
    // and the final count stops below accepted. A real cluster keeps them for its retention.
    const { Kafka } = loadKafkajs().kafkajs;
    const admin = new Kafka({ clientId: 'bench-offsets', brokers: kafka.brokers.split(','), logLevel: 0 }).admin();
    await admin.connect();
    const topicOffsets = (await admin.fetchTopicOffsets(TOPICS.errorEvents + env.BUS_NAME_SUFFIX)).map((o) => ({
      partition: o.partition,
      low: Number(o.low),
      high: Number(o.high),
    }));
    await admin.disconnect();
    const finalGroups = await groupsSum();
    const finalOcc = await chRows();
    const drained = samples.find((s) => s.groups >= acceptedEvents && s.t > loadSeconds);

    // Sustained processing: the group counts' rate over the load window after a warm-up fifth.
    const inLoad = samples.filter((s) => s.t <= loadSeconds + 0.5);
    const from = inLoad.find((s) => s.t >= loadSeconds / 5) ?? inLoad[0]!;
    const to = inLoad[inLoad.length - 1]!;
    const rate = (a: number, b: number) => Math.round((b - a) / Math.max(0.001, to.t - from.t));
    const sorted = [...latencies].sort((a, b) => a - b);
    const pct = (q: number) => (sorted.length ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!) : null);

    const result = {
      bench: 'pipeline',
      machine: { ...machine, loadAverageAtEnd },
      setup: {
        mode: 'kafka (librdkafka mock via kcat), Postgres, ClickHouse HTTP served from chDB, Redis; ingest, processor, api and chDB server as separate processes',
        durationS: DURATION_S,
        offeredEventsPerS: RATE,
        eventsPerBatch: EVENTS_PER_BATCH,
        batchBytes: Buffer.byteLength(bodyFor(0)),
        projects: PROJECTS,
        ingestKeys: allKeys.length,
      },
      accepted: {
        events: acceptedEvents,
        eventsPerS: Math.round(acceptedEvents / loadSeconds),
        statuses: status,
        batchesSent: sent,
        ticksSkippedForBackpressure: droppedTicks,
      },
      processed: {
        groupCountsPerS: rate(from.groups, to.groups),
        occurrenceRowsPerS: rate(from.occurrences, to.occurrences),
        window: { fromS: Number(from.t.toFixed(1)), toS: Number(to.t.toFixed(1)) },
        lagAtLoadEnd: { groups: to.accepted - to.groups, occurrences: to.accepted - to.occurrences },
        drainedAfterLoadS: drained ? Number((drained.t - loadSeconds).toFixed(1)) : null,
        final: { accepted: acceptedEvents, groupCounts: finalGroups, occurrenceRows: finalOcc },
        mockLogWindow: topicOffsets,
      },
      latency202ToApiMs: {
        markers: latencies.length,
        missed: markersMissed,
        skippedWhileFivePolling: markersSkipped,
        p50: pct(0.5),
        p95: pct(0.95),
        max: sorted.length ? Math.round(sorted[sorted.length - 1]!) : null,
      },
      cpuSecondsDuringLoad: Object.fromEntries(Object.keys(cpuEnd).map((r) => [r, Number((cpuEnd[r]! - (cpuStart[r] ?? 0)).toFixed(1))])),
      cpuSecondsAvailable: Number((loadSeconds * os.cpus().length).toFixed(1)),
      samples,
    };
    agent.destroy();
    log('processor drain: one batch in flight vs two, same run');
    const processorDrain = await drainComparison(kafka.brokers, DATABASE_URL, ch.url, userId);
    process.stdout.write(`${JSON.stringify({ ...result, processorDrain }, null, 2)}\n`);
  } finally {
    await cleanup();
  }
}

/**
 * The processor alone: a topic pre-filled with a backlog (20,000 small events), then drained by
 * startErrorConsumer with one batch in flight and with two (the shipped default), each on a topic and
 * projects of its own. The rate counts from the first events stored (after the group join) to the
 * last. Reports events/s and the ratio.
 */
async function drainComparison(brokers: string, databaseUrl: string, clickhouseUrl: string, userId: string) {
  const { createKafkaBus } = await import('../platform/adapters/bus/kafka-bus.ts');
  const { withNameSuffix } = await import('../platform/adapters/bus/name-suffix.ts');
  const { createPgStore } = await import('../platform/adapters/relational/pg-store.ts');
  const { createClickhouseStore } = await import('../platform/adapters/analytical/clickhouse-store.ts');
  const { createLogger } = await import('../platform/logger.ts');
  const { systemClock } = await import('../platform/clock.ts');
  const { startErrorConsumer } = await import('../processor/errors/error-consumer.ts');
  const { loadConfig } = await import('../platform/config.ts');
  const logger = createLogger('error', 'drain');
  // 12 project keys over 4 partitions: the fullest partition holds about a third (~0.9 MB), well
  // under the mock's bound per partition, so nothing of the backlog is dropped.
  const MESSAGES = 2_000;
  const out: Record<string, number> = {};
  for (const inFlight of [1, 2]) {
    const db = await createPgStore(databaseUrl);
    const analytics = await createClickhouseStore(clickhouseUrl);
    // A backlog of this run's own: the error topic and the pipeline's group under a suffix no other run has.
    const bus = withNameSuffix(
      await createKafkaBus({ brokers: brokers.split(','), clientId: `drain-${inFlight}`, logger }),
      isolatedBus('drain').BUS_NAME_SUFFIX,
    );
    const projectIds: string[] = [];
    for (let i = 0; i < 12; i++) {
      projectIds.push((await insertBenchProject(db, userId, 'drain')).id);
    }
    for (let start = 0; start < MESSAGES; start += 100) {
      await bus.publish(
        TOPICS.errorEvents,
        Array.from({ length: 100 }, (_, k) => {
          const projectId = projectIds[(start + k) % projectIds.length]!;
          const events = Array.from({ length: 10 }, (_, i) => ({
            eventId: randomUUID(),
            name: 'TypeError',
            message: `Request to /api/items timed out after ${start + k} ms (${i})`,
            stack: `TypeError: x\n    at render${i % 5} (https://app.example.com/assets/chunk.js:${100 + i}:1)`,
            runtime: 'browser',
            truncated: [],
            extra: { attempt: i },
          }));
          return { key: projectId, value: Buffer.from(JSON.stringify({ v: 1, projectId, originHost: null, receivedAt: Date.now(), events })) };
        }),
      );
    }
    const total = MESSAGES * 10;
    const platform = {
      config: loadConfig({ PUBLIC_BASE_URL: 'http://localhost:8080' }),
      logger,
      clock: systemClock,
      db,
      analytics,
      bus,
      mailer: inertMailer,
    };
    const t0 = performance.now();
    const sub = await startErrorConsumer(platform as never, { batchesInFlight: inFlight });
    let first: { t: number; n: number } | undefined;
    let n = 0;
    for (;;) {
      n = Number(
        (await db.query<{ n: string }>('SELECT count(*) AS n FROM error_events_consumed WHERE project_id = ANY($1::text[])', [projectIds])).rows[0]!.n,
      );
      if (n > 0 && !first) first = { t: performance.now(), n };
      if (n >= total || performance.now() - t0 > 180_000) break;
      await sleep(20);
    }
    if (n < total) throw new Error(`drain with ${inFlight} in flight stored ${n} of ${total} events in 180 s`);
    out[`batchesInFlight${inFlight}EventsPerS`] = first ? Math.round((n - first.n) / ((performance.now() - first.t) / 1000)) : 0;
    await sub.stop();
    await bus.close();
    await analytics.close();
    await db.close();
  }
  return { backlogEvents: MESSAGES * 10, ...out, ratio: Number((out.batchesInFlight2EventsPerS! / out.batchesInFlight1EventsPerS!).toFixed(2)) };
}

function sleep(ms: number) {
  return new Promise((r) => setTimeout(r, ms));
}
