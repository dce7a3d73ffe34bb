/**
 * Webhook benchmarks (issue 4). Prints one JSON object.
 *
 *  1. deliveries per second, end to end: publishProjectEvent -> fan-out -> signed HTTPS POST to a fast
 *     local receiver (a separate node process, self-signed certificate) -> attempt recorded; and the dispatcher
 *     process's CPU per delivery (Postgres is another process, not counted).
 *  1c. one slow receiver among fast ones: SLOW_EVENTS events, each delivered to a fast endpoint and to one that
 *     answers after SLOW_MS; the fast endpoint's deliveries per second with the slow one present, against the
 *     same run with the slow endpoint absent (issue 29: the fast ones keep their rate).
 *  2. the sweep's cost with 100,000 pending deliveries in Postgres: a sweep that finds nothing due
 *     (all 100k scheduled later), and claiming one batch when all 100k are due.
 *
 * Needs Postgres: BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/test). It works in a
 * fresh project and deletes it at the end. Run: `npm run bench:webhooks` (EVENTS=3000 PENDING=100000).
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { createPlatform } from '../platform/platform.ts';
import { publishProjectEvent } from '../domain/project-event-publisher.ts';
import { newId } from '../platform/tokens.ts';
import { deliveriesRepository } from '../processor/webhooks/deliveries-repository.ts';
import { startWebhookDispatcher } from '../processor/webhooks/webhook-dispatcher.ts';
import { makeSelfSignedCert } from '../test/support/https-receiver.ts';
import { allowAllLimiter } from '../test/support/ingest-fixtures.ts';
import { createTestOutboundGuard } from '../platform/adapters/outbound/test-guard.ts';
import { inertAnalytics, inertMailer } from '../test/support/stubs.ts';

const DATABASE_URL = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const EVENTS = Number(process.env.EVENTS ?? 3000);
const PENDING = Number(process.env.PENDING ?? 100_000);
const SLOW_EVENTS = Number(process.env.SLOW_EVENTS ?? 300);
const SLOW_MS = Number(process.env.SLOW_MS ?? 500);

const RECEIVER = `
const https = require('node:https');
const fs = require('node:fs');
const dir = process.argv[1];
const slowMs = Number(process.argv[2]);
let n = 0;
const tls = { key: fs.readFileSync(dir + '/key.pem'), cert: fs.readFileSync(dir + '/cert.pem') };
const server = https.createServer(tls, (req, res) => {
  req.resume();
  req.on('end', () => { n++; res.writeHead(204); res.end(); });
});
// The slow receiver: the same answer after slowMs.
const slow = https.createServer(tls, (req, res) => {
  req.resume();
  req.on('end', () => setTimeout(() => { n++; res.writeHead(204); res.end(); }, slowMs));
});
server.listen(0, '127.0.0.1', () => slow.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + ' ' + slow.address().port + '\\n')));
process.on('SIGTERM', () => { process.stderr.write(String(n)); process.exit(0); });
`;

async function startReceiver(): Promise<{ url: string; slowUrl: string; cert: string; stop(): Promise<number> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'whk-bench-'));
  const { key, cert } = makeSelfSignedCert();
  await writeFile(path.join(dir, 'key.pem'), key);
  await writeFile(path.join(dir, 'cert.pem'), cert);
  const child = spawn(process.execPath, ['-e', RECEIVER, dir, String(SLOW_MS)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const [port, slowPort] = await new Promise<number[]>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(d.toString().trim().split(' ').map(Number)));
    child.once('exit', (code) => reject(new Error(`receiver exited ${code}`)));
  });
  let received = '';
  child.stderr.on('data', (d: Buffer) => (received += d.toString()));
  return {
    url: `https://127.0.0.1:${port}/hook`,
    slowUrl: `https://127.0.0.1:${slowPort}/hook`,
    cert,
    async stop() {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await gone;
      await rm(dir, { recursive: true, force: true });
      return Number(received);
    },
  };
}

async function main() {
  const receiver = await startReceiver();
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'whk-bench-data-'));
  const config = loadConfig({ DATABASE_URL, DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
  const logger = createLogger('silent', 'bench');
  const platform = await createPlatform(config, logger, {
    analytics: inertAnalytics,
    limiter: allowAllLimiter,
    mailer: inertMailer,
    outbound: createTestOutboundGuard({ ca: receiver.cert }),
  });
  const { db } = platform;
  const userId = newId('usr_');
  const projectId = newId('prj_');
  await db.query('INSERT INTO users (id, email, password_hash) VALUES ($1, $2, $3)', [userId, `${userId}@bench.test`, 'x']);
  await db.query('INSERT INTO projects (id, slug, name, owner_id) VALUES ($1, $2, $3, $4)', [projectId, projectId.replace('_', '-'), 'bench', userId]);
  const endpointId = newId('whk_');
  const now = platform.clock.now();
  await db.query(
    'INSERT INTO webhook_endpoints (id, project_id, url, events, max_attempts, secret, created_at, updated_at) VALUES ($1, $2, $3, $4, 6, $5, $6, $6)',
    [endpointId, projectId, receiver.url, [], 'whsec_benchbenchbenchbench', new Date(now)],
  );
  const out: Record<string, unknown> = {
    machine: {
      cpus: os.cpus().length,
      model: os.cpus()[0]?.model,
      memGiB: Math.round(os.totalmem() / 2 ** 30),
      node: process.version,
      loadavg: os.loadavg().map((x) => +x.toFixed(2)),
    },
    database: 'postgres',
  };

  /** A project of its own with a fast endpoint (and the slow one): SLOW_EVENTS events; the fast deliveries' rate. */
  async function fastRate(withSlow: boolean): Promise<{ deliveriesPerSec: number; seconds: number }> {
    const pid = newId('prj_');
    await db.query('INSERT INTO projects (id, slug, name, owner_id) VALUES ($1, $2, $3, $4)', [pid, pid.replace('_', '-'), 'bench', userId]);
    const fastId = newId('whk_');
    const at = new Date(platform.clock.now());
    const endpoint = (id: string, url: string) =>
      db.query(
        'INSERT INTO webhook_endpoints (id, project_id, url, events, max_attempts, secret, created_at, updated_at) VALUES ($1, $2, $3, $4, 6, $5, $6, $6)',
        [id, pid, url, [], 'whsec_benchbenchbenchbench', at],
      );
    await endpoint(fastId, receiver.url);
    if (withSlow) await endpoint(newId('whk_'), receiver.slowUrl);
    const d = await startWebhookDispatcher(platform, { sweepIntervalMs: false });
    const start = performance.now();
    for (let i = 0; i < SLOW_EVENTS; i++) await publishProjectEvent(platform, { projectId: pid, event: 'user.created', data: { id: `u${i}` } });
    let seconds = 0;
    for (;;) {
      const { rows } = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE endpoint_id = $1 AND status = 'succeeded'", [
        fastId,
      ]);
      if (rows[0].n >= SLOW_EVENTS) {
        seconds = (performance.now() - start) / 1000;
        break;
      }
      if (performance.now() - start > 120_000) throw new Error(`fast deliveries stalled at ${rows[0].n}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    await d.stop();
    await db.query('DELETE FROM projects WHERE id = $1', [pid]);
    return { deliveriesPerSec: Math.round(SLOW_EVENTS / seconds), seconds: +seconds.toFixed(2) };
  }

  try {
    // 1. End to end.
    const dispatcher = await startWebhookDispatcher(platform, { sweepIntervalMs: false });
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const inFlight = new Set<Promise<unknown>>();
    for (let i = 0; i < EVENTS; i++) {
      const p = publishProjectEvent(platform, { projectId, event: 'user.created', data: { id: `u${i}`, email: `u${i}@example.com` } });
      inFlight.add(p);
      void p.finally(() => inFlight.delete(p));
      if (inFlight.size >= 64) await Promise.race(inFlight);
    }
    await Promise.all(inFlight);
    await dispatcher.idle();
    const elapsed = (performance.now() - t0) / 1000;
    const ok = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM webhook_deliveries WHERE project_id = $1 AND status = 'succeeded'", [projectId]);
    const cpu = process.cpuUsage(cpu0);
    out.endToEnd = {
      events: EVENTS,
      succeeded: ok.rows[0].n,
      seconds: +elapsed.toFixed(2),
      deliveriesPerSec: Math.round(ok.rows[0].n / elapsed),
      cpuMicrosPerDelivery: Math.round((cpu.user + cpu.system) / Math.max(1, ok.rows[0].n)),
    };

    // 1b. The sweep alone: EVENTS deliveries already due, sent by sweepOnce (retries, replays, restart).
    await db.query('DELETE FROM webhook_deliveries WHERE project_id = $1', [projectId]);
    await db.query(
      `INSERT INTO webhook_deliveries (id, project_id, endpoint_id, event_id, event, data, status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
       SELECT 'dlv_bsend_' || $1 || '_' || g, $1, $2, 'evt_bsend_' || g, 'user.created', '{"i":1}'::jsonb, 'pending', 0, 6, $3::timestamptz, $3, $3
       FROM generate_series(1, $4::int) g`,
      [projectId, endpointId, new Date(now), EVENTS],
    );
    const t1 = performance.now();
    const swept = await dispatcher.sweepOnce();
    const sweptSec = (performance.now() - t1) / 1000;
    out.sweepSend = { deliveries: swept, seconds: +sweptSec.toFixed(2), deliveriesPerSec: Math.round(swept / sweptSec) };
    await dispatcher.stop();

    // 1c. One slow receiver among fast ones: the fast endpoint's rate, alone and beside the slow one.
    await db.query('DELETE FROM webhook_deliveries WHERE project_id = $1', [projectId]);
    out.slowReceiver = { events: SLOW_EVENTS, slowMs: SLOW_MS, fastAlone: await fastRate(false), fastBesideSlow: await fastRate(true) };
    const sr = out.slowReceiver as { fastAlone: { deliveriesPerSec: number }; fastBesideSlow: { deliveriesPerSec: number } };
    (out.slowReceiver as Record<string, unknown>).ratio = +(sr.fastBesideSlow.deliveriesPerSec / sr.fastAlone.deliveriesPerSec).toFixed(3);

    // 2. Sweep cost with PENDING pending deliveries.
    await db.query('DELETE FROM webhook_deliveries WHERE project_id = $1', [projectId]);
    const later = now + 3_600_000;
    const tIns = performance.now();
    await db.query(
      `INSERT INTO webhook_deliveries (id, project_id, endpoint_id, event_id, event, data, status, attempts, max_attempts, next_attempt_at, created_at, updated_at)
       SELECT 'dlv_bench_' || $1 || '_' || g, $1, $2, 'evt_bench_' || g, 'user.created', '{"i":1}'::jsonb, 'pending', 0, 6, $3::timestamptz + (g % 1000) * interval '1 millisecond', $4, $4
       FROM generate_series(1, $5::int) g`,
      [projectId, endpointId, new Date(later), new Date(now), PENDING],
    );
    await db.query('ANALYZE webhook_deliveries');
    const insertSec = (performance.now() - tIns) / 1000;

    const time = async (fn: () => Promise<unknown>, runs: number) => {
      const ms: number[] = [];
      for (let i = 0; i < runs; i++) {
        const s = performance.now();
        await fn();
        ms.push(performance.now() - s);
      }
      ms.sort((a, b) => a - b);
      return { medianMs: +ms[Math.floor(ms.length / 2)].toFixed(2), maxMs: +ms[ms.length - 1].toFixed(2) };
    };
    // Nothing due: what every idle minute costs each processor.
    const idleSweep = await time(() => deliveriesRepository.claimDue(db, now, 200), 20);
    // All due: claiming one batch of 200 (the work before sending), returned to pending after.
    const claimBatch = await time(async () => {
      const claimed = await deliveriesRepository.claimDue(db, later + 1000, 200);
      await db.query("UPDATE webhook_deliveries SET status = 'pending', lease_until = NULL, lease_token = NULL WHERE id = ANY($1::text[])", [
        claimed.map((c) => c.id),
      ]);
    }, 20);
    const plan = await db.query<Record<string, string>>(
      `EXPLAIN SELECT id FROM webhook_deliveries WHERE status = 'pending' AND next_attempt_at <= $1 ORDER BY next_attempt_at LIMIT 200 FOR UPDATE SKIP LOCKED`,
      [new Date(later + 1000)],
    );
    out.sweep = {
      pending: PENDING,
      insertSeconds: +insertSec.toFixed(2),
      idleSweep,
      claimBatchOf200WhenAllDue: claimBatch,
      plan: plan.rows.map((r) => Object.values(r)[0]).join(' | '),
    };
  } finally {
    await db.query('DELETE FROM projects WHERE id = $1', [projectId]);
    await db.query('DELETE FROM users WHERE id = $1', [userId]);
    out.receiverCount = await receiver.stop();
    await platform.close();
    await rm(dataDir, { recursive: true, force: true });
  }
  console.log(JSON.stringify(out, null, 2));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
