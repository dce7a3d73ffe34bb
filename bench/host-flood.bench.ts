/**
 * `GET /v1/` under a flood of random Hosts (issue 38, row 9; aim: p99 during the flood within 2x of idle). One run of
 * the single process (`start('all')`, embedded, as `npm start` runs it), loopback only, prints JSON:
 *   1. idle       `GET /v1/` on the service's own host, evenly paced (bench/support/paced-load.ts, a child process);
 *   2. flood      the same, while another child sends `--flood-rate` requests/s (default 1,000), each with a Host never
 *                 seen before (bench/support/random-host-load.ts), from one address: the site server's limit on
 *                 lookups of unknown Hosts per address answers most of them 429 without a query;
 *   3. unlimited  the same flood on a second start whose rate limiter lets everything through: every random Host is a
 *                 query (what the flood cost before the limit, less the API's second lookup of each Host), for scale.
 * Each phase lasts `--duration` seconds (default 8); the whole run about a minute.
 *
 *   npx tsx bench/host-flood.bench.ts [--duration 8] [--rate 100] [--flood-rate 1000] [--flood-connections 32]
 */
import { mkdtemp } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../platform/config.ts';
import { createLogger } from '../platform/logger.ts';
import { siteServerOf } from '../hosting/serve/site-server.ts';
import { start, type Running } from '../service/service.ts';
import { allowAllLimiter } from '../test/support/ingest-fixtures.ts';
import { numberArg } from './support/cli-args.ts';
import { jsonFromChild, machine, paced } from './support/edge-bench.ts';
import type { PacedResult } from './support/paced-load.ts';
import type { FloodResult } from './support/random-host-load.ts';

const DURATION = numberArg('duration', 8);
const RATE = numberArg('rate', 100);
const FLOOD_RATE = numberArg('flood-rate', 1000);
const FLOOD_CONNECTIONS = numberArg('flood-connections', 32);
const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);

async function startService(unlimited: boolean): Promise<Running & { port: number }> {
  const env = {
    DATA_DIR: await mkdtemp(path.join(os.tmpdir(), 'bench-host-flood-')),
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'silent',
  };
  // The start banner goes to stdout; this bench's stdout is its JSON.
  const stdoutWrite = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => process.stderr.write(chunk)) as typeof process.stdout.write;
  const running = await start('all', loadConfig(env), createLogger('silent', 'bench'), {
    testing: unlimited ? { overrides: { limiter: allowAllLimiter } } : {},
  }).finally(() => {
    process.stdout.write = stdoutWrite;
  });
  return running as Running & { port: number };
}

/**
 * Stop, holding the event loop open meanwhile: after site queries the embedded PGlite worker's close may never
 * answer, and its store waits for it only on an unref'd 5 s timer, so without a handle of ours the process would
 * end here, silently, before printing.
 */
async function stopService(running: Running): Promise<void> {
  const alive = setInterval(() => undefined, 1_000);
  try {
    await running.stop();
  } finally {
    clearInterval(alive);
  }
}

function flood(port: number, durationSec: number): Promise<FloodResult> {
  const args = JSON.stringify({ port, path: '/v1/', rate: FLOOD_RATE, durationSec, connections: FLOOD_CONNECTIONS });
  return jsonFromChild(process.execPath, ['--import', 'tsx', path.resolve('bench/support/random-host-load.ts'), args], 'inherit', 'flood');
}

const measure = (port: number): Promise<PacedResult> => paced(port, '/v1/', undefined, {}, { duration: DURATION, rate: RATE, connections: 4 });

/** `GET /v1/` measured while the flood runs (the flood starts a second earlier and ends a second later). */
async function underFlood(running: Running & { port: number }) {
  const sites = siteServerOf(running.platform);
  const before = { ...sites.hostStats };
  const flooding = flood(running.port, DURATION + 2);
  await new Promise((r) => setTimeout(r, 1_000));
  const during = await measure(running.port);
  const f = await flooding;
  const after = sites.hostStats;
  return {
    getV1: summary(during),
    flood: {
      sent: f.scheduled,
      answered: f.completed,
      achievedRps: f.achievedRps,
      statuses: f.statuses,
      errors: f.errors,
      siteQueries: after.queries - before.queries,
      refusedWithoutQuery: after.limited - before.limited,
      missCacheEntries: after.misses,
    },
  };
}

const summary = (r: PacedResult) => ({ p50ms: r.latencyMs.p50, p99ms: r.latencyMs.p99, maxMs: r.latencyMs.max, completed: r.completed, statuses: r.statuses });

async function main() {
  const results: Record<string, unknown> = {
    bench: 'host-flood',
    machine: machine(),
    settings: { durationSec: DURATION, getV1Rate: RATE, floodRate: FLOOD_RATE, floodConnections: FLOOD_CONNECTIONS, shape: 'one process, embedded' },
  };

  const running = await startService(false);
  // Warm up: the API's first answers compile its serializers.
  await paced(running.port, '/v1/', undefined, {}, { duration: 2, rate: RATE, connections: 4 });
  log('idle');
  const idle = await measure(running.port);
  log(`flood: ${FLOOD_RATE} random Hosts/s`);
  const limited = await underFlood(running);
  await stopService(running);

  log('unlimited: the same flood with every lookup allowed');
  const open = await startService(true);
  await paced(open.port, '/v1/', undefined, {}, { duration: 2, rate: RATE, connections: 4 });
  const openIdle = await measure(open.port);
  const unlimited = await underFlood(open);
  await stopService(open);

  results.idle = summary(idle);
  results.flood = limited;
  results.floodP99OverIdle = Number((limited.getV1.p99ms / idle.latencyMs.p99).toFixed(2));
  results.aim = 'flood p99 within 2x of idle';
  results.unlimited = { idle: summary(openIdle), ...unlimited, floodP99OverIdle: Number((unlimited.getV1.p99ms / openIdle.latencyMs.p99).toFixed(2)) };
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
