/**
 * Sentry's envelope route at production volume (issue 40), against our own errors-only route, in one sitting:
 *   (a) `POST /v1/errors/i`, one browser error a request (cx.js's batch of one, about 1.5 KB);
 *   (b) `POST /api/:project/envelope/` at a browser SDK's realistic mix: 80% session envelopes, 15% client reports,
 *       5% error events (each the real @sentry/core 11 envelope, fixtures/sdk-envelopes.ts; the event as
 *       @sentry/browser sends one, about 3 KB);
 * each phase twice, alternated (a b a b), autocannon in a child process cycling through the mix in order on every
 * connection (so the mix is exact). The edge is the validation path: a bus that resolves at once, a limiter that
 * always allows (bench/support/edge-bench.ts), so both routes do everything but wait. Aim: (b) ≥ 0.8x (a) requests/s.
 *
 *   npx tsx bench/sentry-envelope.bench.ts [--duration 8] [--connections 50] [--pin]
 * Prints one JSON document on stdout.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startIngestServer } from '../ingest/ingest-server.ts';
import { recordSdkEnvelopes } from '../ingest/sentry/fixtures/sdk-envelopes.ts';
import { dsnPublicKey } from '../platform/sentry-dsn.ts';
import { createIngestProject, createRecordingBus, projectNumberOf } from '../test/support/ingest-fixtures.ts';
import { flagArg, numberArg } from './support/cli-args.ts';
import { browserEventEnvelope, FRAMES } from './support/sentry-browser-event.ts';
import { edgePlatform, jsonFromChild, log, machine, pinThisProcess, settingsStore, type CannonResult } from './support/edge-bench.ts';

const DURATION = numberArg('duration', 8);
const CONNECTIONS = numberArg('connections', 50);
if (flagArg('pin')) pinThisProcess();

/** An error event as @sentry/browser 11 sends one (bench/support/sentry-browser-event.ts), the same bytes every time. */
const browserEvent = (): string =>
  browserEventEnvelope({
    id: 'a'.repeat(32),
    timestamp: 1_795_000_000.123,
    url: 'https://app.example.com/dashboard/projects/7',
    sentAt: '2026-11-26T10:00:00.000Z',
  });

/** cx.js's batch of one error. */
function errorsBatch(): string {
  return JSON.stringify({
    batch: [
      {
        name: 'TypeError',
        message: "Cannot read properties of undefined (reading 'id')",
        stack: ['TypeError: x', ...FRAMES.map((f) => `    at ${f.function} (${f.filename}:${f.lineno}:${f.colno})`)].join('\n'),
        path: '/dashboard/projects/7',
        runtime: 'browser',
      },
    ],
  });
}

interface Phase {
  requestsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

async function run(url: string, requestsFile: string): Promise<Phase> {
  const r = await jsonFromChild<CannonResult>(
    process.execPath,
    [path.resolve('bench/support/cannon-mix.mjs'), JSON.stringify({ url, requestsFile, connections: CONNECTIONS, duration: DURATION })],
    'ignore',
    'autocannon',
  );
  return { requestsPerSec: r.requests.average, p50Ms: r.latency.p50, p99Ms: r.latency.p99, non2xx: r.non2xx, errors: r.errors + r.timeouts };
}

async function main() {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'bench-sentry-'));
  const platform = await edgePlatform(createRecordingBus({ record: false }));
  const project = await createIngestProject(platform);
  const number = await projectNumberOf(platform, project.projectId);
  const edge = await startIngestServer(platform, { port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${edge.port}`;
  try {
    const sdk = await recordSdkEnvelopes();
    const envelopePath = `/api/${number}/envelope/?sentry_key=${dsnPublicKey(project.ingestKey)}&sentry_version=7&sentry_client=sentry.javascript.browser%2F11.12.0`;
    const sentryHeaders = { 'content-type': 'text/plain;charset=UTF-8', origin: 'https://app.example.com' };
    const one = (p: string, headers: Record<string, string>, body: string) => ({ path: p, headers, body: Buffer.from(body).toString('base64') });
    // 20 requests, cycled in order: 16 sessions (80%), 3 client reports (15%), 1 event (5%).
    const mix = [
      ...Array.from({ length: 16 }, () => one(envelopePath, sentryHeaders, sdk.session)),
      ...Array.from({ length: 3 }, () => one(envelopePath, sentryHeaders, sdk.clientReport)),
      one(envelopePath, sentryHeaders, browserEvent()),
    ];
    // Spread the event among the sessions, as a page's traffic would be.
    mix.splice(10, 0, mix.pop()!);
    const errors = [
      one(
        '/v1/errors/i',
        { 'content-type': 'application/json', authorization: `Bearer ${project.ingestKey}`, origin: 'https://app.example.com' },
        errorsBatch(),
      ),
    ];
    const mixFile = path.join(dir, 'mix.json');
    const errorsFile = path.join(dir, 'errors.json');
    await writeFile(mixFile, JSON.stringify(mix));
    await writeFile(errorsFile, JSON.stringify(errors));

    // Warm up both paths (JIT), then a b a b.
    log('warm-up');
    await Promise.all([run(url, errorsFile), run(url, mixFile)].map((p) => p.catch(() => undefined)));
    const phases: Record<'errors' | 'envelopeMix', Phase[]> = { errors: [], envelopeMix: [] };
    for (let round = 0; round < 2; round++) {
      log(`round ${round + 1}: /v1/errors/i`);
      phases.errors.push(await run(url, errorsFile));
      log(`round ${round + 1}: envelope mix`);
      phases.envelopeMix.push(await run(url, mixFile));
    }
    const mean = (xs: Phase[]) => xs.reduce((n, x) => n + x.requestsPerSec, 0) / xs.length;
    const stats = edge.stats();
    const result = {
      bench: 'sentry-envelope',
      date: new Date().toISOString(),
      machine: machine(),
      settingsStore,
      durationSec: DURATION,
      connections: CONNECTIONS,
      bodies: {
        errorsBatchBytes: Buffer.byteLength(errorsBatch()),
        sessionEnvelopeBytes: Buffer.byteLength(sdk.session),
        clientReportBytes: Buffer.byteLength(sdk.clientReport),
        eventEnvelopeBytes: Buffer.byteLength(browserEvent()),
      },
      phases,
      requestsPerSec: { errors: Math.round(mean(phases.errors)), envelopeMix: Math.round(mean(phases.envelopeMix)) },
      ratio: Number((mean(phases.envelopeMix) / mean(phases.errors)).toFixed(3)),
      aim: 0.8,
      edgeCounters: {
        errorsAccepted: stats.accepted_batches,
        envelopesAccepted: stats.sentry_accepted_batches,
        sessionsLimited: stats.sentry_dropped_limited_sessions ?? 0,
        clientReports: stats.sentry_dropped_item_client_report ?? 0,
      },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await edge.close();
    await platform.close();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
