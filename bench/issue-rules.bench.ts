/**
 * Alert rules' cost in the error processor (issue 41), in one sitting, rounds alternating:
 *
 * - `without`: the pipeline as before rules, in projects that never wrote their rules (the default rule: §7.6's claim
 *   in the batch transaction, as always), every event attributed to the project's live deploy (its production host);
 * - `with_rules`: the same events and deploys, the pipeline evaluating rules after each commit, in projects that wrote
 *   theirs: the default rule, a new-issue rule for every environment at fatal and error, an event-frequency rule
 *   (100 in 10 minutes) and a user-frequency rule (50 users in 60 minutes), so every batch counts its events and users
 *   into Postgres and reads the windows back (the worst case: frequency rules in every project of the load).
 *
 * Each is the whole `handleBatch` on Postgres (scrub, symbolicate, fingerprint, environment with deploy attribution,
 * caps, groups, ledger, occurrence rows encoded and dropped) plus, with rules, the evaluation the pipeline tracks
 * (awaited through `idle()` after each batch, so its cost is in the measure). Aim: with_rules ≥ 0.9× without.
 *
 *   npx tsx bench/issue-rules.bench.ts [--batches 20] [--rounds 3]
 *   BENCH_EVENTS=200 npx tsx bench/issue-rules.bench.ts   # a smoke run: 200 events per mode and round, one round
 *
 * Prints JSON.
 */
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createPgStore } from '../platform/adapters/relational/pg-store.ts';
import { migrateRelational } from '../platform/migrate.ts';
import { systemClock } from '../platform/clock.ts';
import { createLogger } from '../platform/logger.ts';
import type { Bus } from '../platform/ports/bus.ts';
import { createAlertRule } from '../domain/alert-rules/alert-rules.ts';
import { createAlertRuleEvaluation } from '../processor/alerts/evaluate-rules.ts';
import { createErrorPipeline } from '../processor/errors/error-pipeline.ts';
import { CreateAlertRuleBody } from '../schemas/api/alerts.ts';
import { stampErrorEvent, type StampedErrorBatch } from '../schemas/error-event.ts';
import { inertMailer } from '../test/support/stubs.ts';
import { insertBenchProject, insertBenchUser, droppingAnalytics } from './support/error-load.ts';
import { numberArg } from './support/cli-args.ts';

const EVENTS_PER_BATCH = 400;
const PROJECTS = 20;
const SMOKE_EVENTS = Number(process.env.BENCH_EVENTS ?? 0);
const BATCHES = SMOKE_EVENTS ? Math.max(1, Math.ceil(SMOKE_EVENTS / EVENTS_PER_BATCH)) : numberArg('batches', 20);
const ROUNDS = SMOKE_EVENTS ? 1 : numberArg('rounds', 3);
const PER_BATCH = SMOKE_EVENTS ? Math.min(EVENTS_PER_BATCH, SMOKE_EVENTS) : EVENTS_PER_BATCH;
const SERVER = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';
const DB = `bench_issue_rules_${process.pid}`;
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);

const MESSAGES = ["Cannot read properties of undefined (reading 'id')", 'Request to /api/items timed out', 'Failed to fetch', 'Unexpected token <'];
const RULES = [
  { name: 'Fatal and errors, anywhere', triggers: [{ type: 'new_issue' }], levels: ['fatal', 'error'], actions: { email: true } },
  { name: 'Busy', triggers: [{ type: 'event_frequency', count: 100, minutes: 10 }], actions: { email: true } },
  { name: 'Widespread', triggers: [{ type: 'user_frequency', count: 50, minutes: 60 }], actions: { email: true } },
];
/** The rules' evaluation publishes nothing here (e-mail actions only); a bus that drops keeps it honest if it did. */
const droppingBus = { publish: async () => undefined } as unknown as Bus;

const admin = new pg.Client(`${SERVER}/postgres`);
await admin.connect();
await admin.query(`CREATE DATABASE ${DB}`);
const db = await createPgStore(`${SERVER}/${DB}`);
try {
  await migrateRelational(db);
  const userId = await insertBenchUser(db);
  const plain: string[] = [];
  const ruled: string[] = [];
  for (let i = 0; i < PROJECTS * 2; i++) {
    const p = (await insertBenchProject(db, userId, i < PROJECTS ? 'plain' : 'ruled')).id;
    const deployId = `dep_${randomUUID().replace(/-/g, '')}`;
    await db.query(
      `INSERT INTO deploys (id, project_id, branch, environment, status, artifact_dir, finished_at) VALUES ($1, $2, 'main', 'production', 'ready', $3, now() - interval '1 minute')`,
      [deployId, p, `artifacts/${deployId}`],
    );
    await db.query('UPDATE projects SET live_deploy_id = $1 WHERE id = $2', [deployId, p]);
    if (i < PROJECTS) plain.push(p);
    else {
      for (const r of RULES) await createAlertRule(db, p, CreateAlertRuleBody.parse(r), Date.now());
      ruled.push(p);
    }
  }

  const logger = createLogger('error', 'bench');
  const common = { db, analytics: droppingAnalytics(), mailer: inertMailer, clock: systemClock, logger, publicBaseUrl: 'http://localhost:8080' };
  const without = createErrorPipeline(common);
  const withRules = createErrorPipeline({
    ...common,
    alertRules: createAlertRuleEvaluation({ db, bus: droppingBus, mailer: inertMailer, clock: systemClock, logger, publicBaseUrl: 'http://localhost:8080' }),
  });

  type Mode = 'without' | 'with_rules';
  let n = 0;
  const batchOf = (mode: Mode): StampedErrorBatch[] => {
    const projects = mode === 'without' ? plain : ruled;
    const perProject = Math.max(1, Math.floor(PER_BATCH / PROJECTS));
    return projects.map((projectId) => ({
      projectId,
      originHost: 'app.example.com',
      receivedAt: Date.now(),
      events: Array.from({ length: perProject }, (_, i) => {
        const k = n++;
        return stampErrorEvent(
          {
            name: i % 2 ? 'TypeError' : 'Error',
            message: `${MESSAGES[k % MESSAGES.length]} (widget ${k % 40})`,
            stack: `TypeError: x\n    at render${k % 5} (https://app.example.com/assets/chunk-a1b2c3.js:${100 + (k % 40)}:20)`,
            level: k % 7 ? 'error' : 'warning',
            user: { id: `usr_${k % 300}` },
          },
          randomUUID(),
          'browser',
        );
      }),
    }));
  };

  const measure = async (mode: Mode) => {
    const pipeline = mode === 'without' ? without : withRules;
    const batches = Array.from({ length: BATCHES }, () => batchOf(mode));
    const cpu0 = process.cpuUsage();
    const t = performance.now();
    let events = 0;
    for (const b of batches) {
      const s = await pipeline.handleBatch(b);
      await pipeline.idle();
      events += s.accepted;
    }
    const cpu = process.cpuUsage(cpu0);
    const wallMs = performance.now() - t;
    return { events, eventsPerSecond: Math.round(events / (wallMs / 1000)), cpuUsPerEvent: Number(((cpu.user + cpu.system) / events).toFixed(1)) };
  };

  // Warm up: the groups exist, the rules are cached.
  for (const mode of ['without', 'with_rules'] as const) {
    await (mode === 'without' ? without : withRules).handleBatch(batchOf(mode));
    await withRules.idle();
  }
  const rounds: Array<Record<Mode, Awaited<ReturnType<typeof measure>>>> = [];
  for (let r = 0; r < ROUNDS; r++) {
    const order: Mode[] = r % 2 ? ['with_rules', 'without'] : ['without', 'with_rules'];
    const round = {} as Record<Mode, Awaited<ReturnType<typeof measure>>>;
    for (const mode of order) round[mode] = await measure(mode);
    log(`round ${r + 1}: ${JSON.stringify(round)}`);
    rounds.push(round);
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
  const rate = (mode: Mode) => median(rounds.map((r) => r[mode].eventsPerSecond));
  const fires = await db.query<{ n: string }>('SELECT count(*) AS n FROM alert_rule_fires');
  console.log(
    JSON.stringify(
      {
        bench: 'issue-rules',
        machine: {
          nproc: os.cpus().length,
          cpu: os.cpus()[0]?.model.trim(),
          node: process.version,
          loadAverage: os.loadavg().map((x) => Number(x.toFixed(2))),
        },
        smoke: SMOKE_EVENTS > 0,
        eventsPerBatch: PER_BATCH,
        projects: PROJECTS,
        rulesPerProject: RULES.length + 1,
        medianEventsPerSecond: { without: rate('without'), with_rules: rate('with_rules') },
        withRulesOverWithout: Number((rate('with_rules') / rate('without')).toFixed(2)),
        ruleFires: Number(fires.rows[0]?.n ?? 0),
        rounds,
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
