/**
 * Ingest edge benchmark (issue 3, "Tests and numbers"). One run, loopback only, bounded durations:
 *   1. peak requests/s under autocannon for (a) a bare uWS server that reads the body and answers
 *      202, (b) our edge on the validation path alone (a bus that resolves at once, a limiter that
 *      always allows), (c) our edge with the Kafka bus against a librdkafka mock cluster;
 *      for 10-event batches of about 4 KB and about 22 KB; ratios to bare;
 *   2. p99 of the 202 at 70% of the Kafka path's peak: evenly paced open-loop load (bench/support/paced-load.ts),
 *      and autocannon --overallRate as before (per-second bursts, so in effect the peak's p99); and the bare
 *      server under the same paced load, the rig's own floor at that rate;
 *   3. `--soak <seconds>`: RSS of the edge process sampled every second at 70% of the Kafka peak.
 * autocannon runs as a child process so it does not share the edge's event loop.
 *
 *   npx tsx bench/ingest-edge.bench.ts [--duration 10] [--connections 100] [--soak 20] [--kafka-proxied] [--pin]
 * Prints one JSON document on stdout.
 */
import { execFileSync } from 'node:child_process';
import type { PacedResult } from './support/paced-load.ts';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import uWS from 'uWebSockets.js';
import { createLogger } from '../platform/logger.ts';
import {
  cannon,
  cpuModel,
  EDGE_CPU,
  edgePlatform,
  log,
  OTHERS_CPU,
  paced,
  pin,
  pinThisProcess,
  settingsStore,
  type CannonResult,
} from './support/edge-bench.ts';
import { createKafkaBus } from '../platform/adapters/bus/kafka-bus.ts';
import { startKafkaMockProcess } from '../test/support/kafka-mock-process.ts';
import { createIngestProject, createRecordingBus } from '../test/support/ingest-fixtures.ts';
import { startIngestServer } from '../ingest/ingest-server.ts';
import { numberArg, flagArg } from './support/cli-args.ts';

const DURATION = numberArg('duration', 10);
const CONNECTIONS = numberArg('connections', 100);
const PACED_CONNECTIONS = numberArg('paced-connections', 1000);
const SOAK = numberArg('soak', 20);
/**
 * `direct` (default): clients talk to the mock brokers themselves and only bootstrap goes through the
 * metadata-fixing proxy (test/support/kafka-mock.ts), as clients talk to a real cluster. `proxied`: every
 * byte through the proxy, a Node process on the same two cores, as in runs before 2026-11-24.
 */
const KAFKA_DATA_PATH = flagArg('kafka-proxied') ? 'proxied' : 'direct';
/**
 * `--pin`: the edge (this process, every thread) on CPU 0; the load generators and the Kafka mock on CPU 1
 * (`taskset`), as if the clients and the broker ran on other machines. Without it every process shares both
 * cores, as in runs before 2026-11-24.
 */
const PIN = flagArg('pin');

function stack(bytes: number): string {
  const lines: string[] = ["TypeError: Cannot read properties of undefined (reading 'id')"];
  let i = 0;
  while (lines.join('\n').length < bytes)
    lines.push(`    at handler${i} (https://app.example.com/assets/chunk-${(i++).toString(16)}a1b2c3.js:${100 + i}:${20 + i})`);
  return lines.join('\n').slice(0, bytes);
}

/** About 4 KB: name, message, a short stack, path, runtime. */
function smallBatch(): string {
  return JSON.stringify({
    batch: Array.from({ length: 10 }, (_, i) => ({
      name: 'TypeError',
      message: `Cannot read properties of undefined (reading 'id') in widget ${i}`,
      stack: stack(250),
      path: `/dashboard/projects/${i}`,
      runtime: 'browser',
    })),
  });
}

/** About 22 KB: every field, 1.5 KB stacks. */
function largeBatch(): string {
  return JSON.stringify({
    batch: Array.from({ length: 10 }, (_, i) => ({
      name: 'TypeError',
      message: `Cannot read properties of undefined (reading 'id') while rendering <ProjectList> item ${i} after fetch /api/projects?page=${i}`,
      stack: stack(1500),
      path: `/dashboard/projects/${i}?tab=errors`,
      distinctId: `anon_${'d'.repeat(24)}`,
      userId: `usr_${'u'.repeat(32)}`,
      sessionId: `ses_${'s'.repeat(32)}`,
      deployId: `dep_${'e'.repeat(32)}`,
      gitSha: 'a'.repeat(40),
      environment: 'production',
      extra: { route: '/dashboard', feature: 'projects', attempt: i, flags: ['a', 'b'], viewport: { w: 1280, h: 800 } },
      timestamp: new Date(Date.UTC(2026, 0, 1)).toISOString(),
      runtime: 'browser',
    })),
  });
}

function startBare(): Promise<{ port: number; close(): void }> {
  const app = uWS.App();
  app.post('/v1/errors/i', (res) => {
    let aborted = false;
    const chunks: Buffer[] = [];
    res.onAborted(() => (aborted = true));
    res.onData((chunk, isLast) => {
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (isLast && !aborted) {
        const body = Buffer.concat(chunks);
        res.cork(() =>
          res
            .writeStatus('202 Accepted')
            .writeHeader('Content-Type', 'application/json')
            .end(`{"ingested":${body.length > 0 ? 10 : 0}}`),
        );
      }
    });
  });
  return new Promise((resolve, reject) =>
    app.listen('127.0.0.1', 0, (ls) => {
      if (!ls) return reject(new Error('bare server could not listen'));
      resolve({ port: uWS.us_socket_local_port(ls as unknown as uWS.us_socket), close: () => uWS.us_listen_socket_close(ls) });
    }),
  );
}

/** Evenly paced open-loop load, many clients (as an ingest edge has), on the error route. */
function pacedErrors(port: number, bodyFile: string, headers: Record<string, string>, opts: { duration: number; rate: number }): Promise<PacedResult> {
  return paced(port, '/v1/errors/i', bodyFile, headers, { ...opts, connections: PACED_CONNECTIONS });
}

/** autocannon with this bench's default connections. */
function cannonPost(
  url: string,
  bodyFile: string,
  headers: Record<string, string>,
  opts: { duration: number; rate?: number; connections?: number },
): Promise<CannonResult> {
  return cannon(url, bodyFile, headers, { ...opts, connections: opts.connections ?? CONNECTIONS });
}

async function main() {
  if (PIN) pinThisProcess();
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'bench-bodies-'));
  const bodies = { '4kb': smallBatch(), '22kb': largeBatch() };
  const files: Record<string, string> = {};
  for (const [k, v] of Object.entries(bodies)) {
    files[k] = path.join(tmp, `${k}.json`);
    await writeFile(files[k], v);
  }

  const result: Record<string, unknown> = {
    loadAverageAtStart: os.loadavg().map((x) => Number(x.toFixed(2))),
    machine: { nproc: os.cpus().length, cpu: cpuModel(), node: process.version, platform: `${os.type()} ${os.release()}` },
    settings: {
      durationSec: DURATION,
      connections: CONNECTIONS,
      soakSec: SOAK,
      kafkaDataPath: KAFKA_DATA_PATH,
      pinned: PIN ? { edge: EDGE_CPU, loadAndKafka: OTHERS_CPU } : false,
    },
    bodyBytes: { '4kb': Buffer.byteLength(bodies['4kb']), '22kb': Buffer.byteLength(bodies['22kb']) },
  };

  const peaks: Record<string, Record<string, { rps: number; p99ms: number; non2xx: number; errors: number }>> = { bare: {}, validation: {}, kafka: {} };
  const record = (name: string, size: string, r: CannonResult) => {
    peaks[name][size] = { rps: Math.round(r.requests.average), p99ms: r.latency.p99, non2xx: r.non2xx, errors: r.errors + r.timeouts };
    log(`${name} ${size}: ${Math.round(r.requests.average)} req/s, p99 ${r.latency.p99} ms, non2xx ${r.non2xx}, errors ${r.errors}`);
  };

  // (a) bare uWS
  const bare = await startBare();
  for (const size of ['4kb', '22kb'])
    record(
      'bare',
      size,
      await cannonPost(`http://127.0.0.1:${bare.port}/v1/errors/i`, files[size], { 'content-type': 'application/json' }, { duration: DURATION }),
    );
  bare.close();

  // (b) validation path: a bus that resolves at once, a limiter that always allows
  const fastPlatform = await edgePlatform(createRecordingBus({ record: false }));
  const fastProject = await createIngestProject(fastPlatform);
  const fastEdge = await startIngestServer(fastPlatform, { port: 0, host: '127.0.0.1' });
  const fastHeaders = { 'content-type': 'application/json', authorization: `Bearer ${fastProject.ingestKey}` };
  for (const size of ['4kb', '22kb'])
    record('validation', size, await cannonPost(`http://127.0.0.1:${fastEdge.port}/v1/errors/i`, files[size], fastHeaders, { duration: DURATION }));
  await fastEdge.close();
  await fastPlatform.close();

  // (c) Kafka bus (acks from all in-sync replicas) against the librdkafka mock cluster
  const mock = await startKafkaMockProcess({ dataPath: KAFKA_DATA_PATH });
  if (PIN) {
    // The mock's process tree: the tsx wrapper, the Node process relaying bootstrap, and kcat (the brokers).
    const tree = execFileSync('sh', ['-c', `pgrep -f kafka-mock-process; pgrep -x kcat`], { encoding: 'utf8' }).split(/\s+/).filter(Boolean);
    for (const pid of tree) pin(Number(pid), OTHERS_CPU);
  }
  const kafkaBus = await createKafkaBus({ brokers: mock.brokers.split(','), clientId: 'bench-edge', logger: createLogger('silent') });
  const kPlatform = await edgePlatform(kafkaBus);
  const kProject = await createIngestProject(kPlatform);
  const kEdge = await startIngestServer(kPlatform, { port: 0, host: '127.0.0.1' });
  const kUrl = `http://127.0.0.1:${kEdge.port}/v1/errors/i`;
  const kHeaders = { 'content-type': 'application/json', authorization: `Bearer ${kProject.ingestKey}` };
  // Warm the producer (metadata, topic auto-creation) before measuring.
  await cannonPost(kUrl, files['4kb'], kHeaders, { duration: 2, connections: 10 });
  for (const size of ['4kb', '22kb']) record('kafka', size, await cannonPost(kUrl, files[size], kHeaders, { duration: DURATION }));

  // Before/after of the coalesced hand-off, same run: one Kafka send per request (before) vs
  // grouped sends (after, the default measured above).
  const perReq = await startIngestServer(kPlatform, { port: 0, host: '127.0.0.1', publishMode: 'per-request' });
  peaks['kafka_per_request'] = {};
  for (const size of ['4kb', '22kb'])
    record('kafka_per_request', size, await cannonPost(`http://127.0.0.1:${perReq.port}/v1/errors/i`, files[size], kHeaders, { duration: DURATION }));
  await perReq.close();

  const ratios: Record<string, Record<string, number>> = { validation: {}, kafka: {}, kafka_per_request: {} };
  for (const name of ['validation', 'kafka', 'kafka_per_request'] as const) {
    for (const size of ['4kb', '22kb']) ratios[name][size] = Number((peaks[name][size].rps / peaks.bare[size].rps).toFixed(3));
  }

  // p99 at 70% of the Kafka path's peak, evenly paced (the measure of the target), and with autocannon -R
  // as before, whose per-second bursts make it the peak's p99 (bench/support/paced-load.ts says why).
  // The rig's own floor at the same rate: the bare server (which does nothing) under the same paced load,
  // from the same load generator on the same two cores.
  const at70: Record<string, unknown> = {};
  const bareAgain = await startBare();
  for (const size of ['4kb', '22kb']) {
    const rate = peaks.kafka[size].rps * 0.7;
    const floor = await pacedErrors(bareAgain.port, files[size], { 'content-type': 'application/json' }, { duration: DURATION, rate });
    const even = await pacedErrors(kEdge.port, files[size], kHeaders, { duration: DURATION, rate });
    const bursts = await cannonPost(kUrl, files[size], kHeaders, { duration: DURATION, rate });
    at70[size] = {
      targetRps: Math.round(rate),
      paced: {
        achievedRps: even.achievedRps,
        p50ms: even.latencyMs.p50,
        p90ms: even.latencyMs.p90,
        p99ms: even.latencyMs.p99,
        p999ms: even.latencyMs.p999,
        maxMs: even.latencyMs.max,
        statuses: even.statuses,
        errors: even.errors,
      },
      autocannonPerSecondBursts: {
        achievedRps: Math.round(bursts.requests.average),
        p50ms: bursts.latency.p50,
        p99ms: bursts.latency.p99,
        non2xx: bursts.non2xx,
        errors: bursts.errors + bursts.timeouts,
      },
      bareServerSameRatePaced: { achievedRps: floor.achievedRps, p50ms: floor.latencyMs.p50, p99ms: floor.latencyMs.p99, maxMs: floor.latencyMs.max },
    };
    log(
      `kafka ${size} at 70%: paced p50 ${even.latencyMs.p50} ms, p99 ${even.latencyMs.p99} ms; autocannon -R p99 ${bursts.latency.p99} ms; bare server at the same rate p99 ${floor.latencyMs.p99} ms`,
    );
  }
  bareAgain.close();

  // RSS over a soak at 70% of the Kafka peak (4 KB batches)
  const samples: number[] = [];
  const sample = () => samples.push(process.memoryUsage().rss);
  sample();
  const timer = setInterval(sample, 1000);
  const soakRate = peaks.kafka['4kb'].rps * 0.7;
  const soak = await cannonPost(kUrl, files['4kb'], kHeaders, { duration: SOAK, rate: soakRate });
  clearInterval(timer);
  sample();
  const mb = (b: number) => Math.round((b / 1024 / 1024) * 10) / 10;
  const third = Math.max(1, Math.floor(samples.length / 3));
  const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

  await kEdge.close();
  await kPlatform.close();
  await mock.stop();
  await rm(tmp, { recursive: true, force: true });

  result.settingsStore = settingsStore;
  result.loadAverageAtEnd = os.loadavg().map((x) => Number(x.toFixed(2)));
  result.peakRps = peaks;
  result.coalescedOverPerRequest = {
    '4kb': Number((peaks.kafka['4kb'].rps / peaks.kafka_per_request['4kb'].rps).toFixed(2)),
    '22kb': Number((peaks.kafka['22kb'].rps / peaks.kafka_per_request['22kb'].rps).toFixed(2)),
  };
  result.ratioToBare = ratios;
  result.targets = { kafka: { '4kb': 0.25, '22kb': 0.08 }, validation: { '4kb': 0.45, '22kb': 0.2 }, p99AtSeventyPctMs: 15 };
  result.met = {
    kafka4kb: ratios.kafka['4kb'] >= 0.25,
    kafka22kb: ratios.kafka['22kb'] >= 0.08,
    validation4kb: ratios.validation['4kb'] >= 0.45,
    validation22kb: ratios.validation['22kb'] >= 0.2,
    p99: Object.values(at70).every((v) => (v as { paced: { p99ms: number } }).paced.p99ms <= 15),
  };
  result.kafkaAtSeventyPct = at70;
  result.soak = {
    seconds: SOAK,
    targetRps: Math.round(soakRate),
    achievedRps: Math.round(soak.requests.average),
    non2xx: soak.non2xx,
    rssMb: {
      start: mb(samples[0]),
      end: mb(samples[samples.length - 1]),
      max: mb(Math.max(...samples)),
      firstThirdAvg: mb(avg(samples.slice(0, third))),
      lastThirdAvg: mb(avg(samples.slice(-third))),
    },
  };
  process.stdout.write(JSON.stringify(result, null, 2) + '\n');
  process.exit(0);
}

main().catch((err) => {
  process.stderr.write(`bench failed: ${err?.stack ?? err}\n`);
  process.exit(1);
});
