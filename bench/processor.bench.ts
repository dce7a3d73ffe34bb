/**
 * The error processor and Postgres alone: CPU per event of `handleBatch` (scrub, fingerprint,
 * environment, caps, groups, ledger, occurrence rows) and of the Postgres server, on 4,000-event
 * batches built ahead (400 edge envelopes of 10 events, the pipeline bench's bodies, 120 projects,
 * ~4,800 groups), one batch at a time, without Kafka, the edge or ClickHouse (occurrence rows are
 * encoded as the adapters encode them and dropped). Works in a database of its own, created and dropped.
 *
 *   npx tsx bench/processor.bench.ts [--batches 30] [--envelopes 400] [--rounds 1] [--statements]
 *
 * `--rounds 2` runs again in the same database after deleting the rows and a plain VACUUM, as the
 * pipeline bench leaves the shared database between runs.
 *
 * `--statements` adds Postgres wall time per event for each statement (one batch at a time, so it is
 * the server's time for that statement). Prints JSON.
 */
import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { Session } from 'node:inspector/promises';
import { writeFileSync } from 'node:fs';
import pg from 'pg';
import { createPgStore } from '../platform/adapters/relational/pg-store.ts';
import type { Queryable, RelationalStore } from '../platform/ports/relational-store.ts';
import { migrateRelational } from '../platform/migrate.ts';
import { systemClock } from '../platform/clock.ts';
import { createLogger } from '../platform/logger.ts';
import { cpuSecondsOfNamed, errorBatchBody, insertBenchProject, insertBenchUser, droppingAnalytics } from './support/error-load.ts';
import { createErrorPipeline } from '../processor/errors/error-pipeline.ts';
import { decodeErrorBatch, encodeErrorBatchEnvelope } from '../schemas/bus/error-events.ts';
import { numberArg, flagArg } from './support/cli-args.ts';
import { inertMailer } from '../test/support/stubs.ts';

const BATCHES = numberArg('batches', 30);
const STATEMENTS = flagArg('statements');
const ENVELOPES = numberArg('envelopes', 400);
const ROUNDS = numberArg('rounds', 1);
const SERVER = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';
const DB = `bench_processor_${process.pid}`;
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);
/** Postgres server CPU in µs: every process named postgres on this machine. */
const postgresCpuUs = async () => (await cpuSecondsOfNamed('postgres')) * 1e6;

const admin = new pg.Client(`${SERVER}/postgres`);
await admin.connect();
await admin.query(`CREATE DATABASE ${DB}`);
const db = await createPgStore(`${SERVER}/${DB}`);
try {
  await migrateRelational(db);
  const userId = await insertBenchUser(db);
  const newProject = async () => (await insertBenchProject(db, userId, 'p')).id;
  const projects: string[] = [];
  for (let i = 0; i < 120; i++) projects.push(await newProject());
  // The pipeline bench's bodies.
  const bodies = Array.from({ length: 2_000 }, (_, i) => Buffer.from(errorBatchBody(i)));
  let n = 0;
  const envelopes = () =>
    Array.from({ length: ENVELOPES }, () => {
      const k = n++;
      const eventIds = Array.from({ length: 10 }, () => randomUUID());
      // Project and body vary independently, so each project sees all of its ~40 fingerprints, as in
      // the pipeline bench: 4,800 groups, most touched by about one event per batch.
      const body = bodies[(k + Math.floor(k / projects.length)) % bodies.length]!;
      return encodeErrorBatchEnvelope(
        { projectId: projects[k % projects.length]!, originHost: null, receivedAt: Date.now(), defaultRuntime: 'node', eventIds },
        body,
      );
    });

  const statementMs = new Map<string, number>();
  const timed = (q: Queryable): Queryable => ({
    async query(sql, params) {
      const t = performance.now();
      try {
        return await q.query(sql, params);
      } finally {
        const key = sql.replace(/\s+/g, ' ').trim().slice(0, 70);
        statementMs.set(key, (statementMs.get(key) ?? 0) + performance.now() - t);
      }
    },
  });
  const store: RelationalStore = STATEMENTS ? { ...db, query: timed(db).query, transaction: (fn) => db.transaction((tx) => fn(timed(tx))) } : db;
  // Occurrence rows encoded as the adapters do (JSONCompactEachRow), then dropped.
  const analytics = droppingAnalytics();
  const pipeline = createErrorPipeline({
    db: store,
    analytics,
    mailer: inertMailer,
    clock: systemClock,
    logger: createLogger('error', 'bench'),
    publicBaseUrl: 'http://localhost:8080',
  });

  const runRound = async (round: number) => {
    const batches = Array.from({ length: BATCHES + 3 }, envelopes);
    log(`${BATCHES} batches of ${ENVELOPES * 10} events after 3 warm-up batches (which create the groups)`);
    for (const b of batches.slice(0, 3)) await pipeline.handleBatch(b.map((m) => decodeErrorBatch(m)!));
    statementMs.clear();
    // BENCH_PROFILE=<file>: a V8 CPU profile of the measured batches of the first round.
    const profiler = process.env.BENCH_PROFILE && round === 1 ? new Session() : undefined;
    if (profiler) {
      profiler.connect();
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.start');
    }
    const pg0 = await postgresCpuUs();
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let events = 0;
    for (const b of batches.slice(3)) events += (await pipeline.handleBatch(b.map((m) => decodeErrorBatch(m)!))).accepted;
    const cpu = process.cpuUsage(cpu0);
    const wallMs = performance.now() - t0;
    const pgUs = (await postgresCpuUs()) - pg0;
    if (profiler) {
      const { profile } = await profiler.post('Profiler.stop');
      writeFileSync(process.env.BENCH_PROFILE!, JSON.stringify(profile));
      profiler.disconnect();
    }
    const per = (us: number) => Number((us / events).toFixed(1));
    return {
      round,
      events,
      processorCpuUsPerEvent: per(cpu.user + cpu.system),
      postgresCpuUsPerEvent: per(pgUs),
      eventsPerSecond: Math.round(events / (wallMs / 1000)),
      groups: Number((await db.query<{ n: string }>('SELECT count(*) AS n FROM error_groups')).rows[0]!.n),
      ...(STATEMENTS
        ? { postgresUsPerEventByStatement: Object.fromEntries([...statementMs].sort((a, b) => b[1] - a[1]).map(([k, ms]) => [k, per(ms * 1000)])) }
        : {}),
    };
  };
  const results = [];
  for (let round = 1; round <= ROUNDS; round++) {
    if (round > 1) {
      // What the pipeline bench leaves behind between runs: its rows deleted, then a plain VACUUM.
      await db.query('DELETE FROM error_events_consumed');
      await db.query('DELETE FROM projects');
      await db.query('VACUUM error_groups, error_group_samples, error_events_consumed, error_monthly_usage');
      projects.length = 0;
      for (let i = 0; i < 120; i++) projects.push(await newProject());
    }
    results.push(await runRound(round));
  }
  console.log(
    JSON.stringify(
      {
        bench: 'processor',
        machine: {
          nproc: os.cpus().length,
          cpu: os.cpus()[0]?.model.trim(),
          node: process.version,
          loadAverage: os.loadavg().map((x) => Number(x.toFixed(2))),
        },
        rounds: results,
      },
      null,
      2,
    ),
  );
} finally {
  await db.close();
  await admin.query(`DROP DATABASE IF EXISTS ${DB}`);
  await admin.end();
}
