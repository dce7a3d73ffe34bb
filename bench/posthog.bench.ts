/**
 * PostHog-shaped capture against our own (issue 28: aim ≥ 0.8×). One edge (the validation path: a bus that resolves
 * at once, a limiter that always allows), one sitting, loopback only, bounded durations. The same 50 events (~300
 * bytes each, as a browser batches them) posted three ways, each run twice in alternation (ours, PostHog, PostHog
 * JSON, ours, PostHog, PostHog JSON), so drift on the shared cores falls on both sides:
 *   - ours: `POST /v1/analytics/i` with `{ batch }`, the key in Authorization;
 *   - ours with the same properties PostHog's SDK adds to each event ($lib, $lib_version, $session_id, $pathname): the
 *     same information per event, so the ratio against it is the PostHog route's own overhead;
 *   - PostHog: `POST /batch/` with `{ api_key, batch, sent_at }`, gzip, as posthog-node sends it by default;
 *   - PostHog JSON: the same uncompressed.
 * The figure is events/s of each, and PostHog's over ours.
 *
 *   npx tsx bench/posthog.bench.ts [--duration 8] [--connections 50]
 * Prints one JSON document on stdout (progress on stderr).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { startIngestServer } from '../ingest/ingest-server.ts';
import { createIngestProject, createRecordingBus } from '../test/support/ingest-fixtures.ts';
import { cannonBinary, edgePlatform, log, machine, settingsStore } from './support/edge-bench.ts';
import { numberArg } from './support/cli-args.ts';

const DURATION = numberArg('duration', 8);
const CONNECTIONS = numberArg('connections', 50);
const EVENTS = 50;

const at = Date.now();
const events = Array.from({ length: EVENTS }, (_, i) => ({
  event: i % 5 ? 'pageview' : 'button_clicked',
  distinctId: `anon_${(i * 7919).toString(36).padStart(12, '0')}`,
  uuid: `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`,
  timestamp: at,
  sessionId: `ses_${'s'.repeat(24)}`,
  path: `/dashboard/projects/${i}`,
  properties: { plan: i % 3 ? 'free' : 'pro', referrer: 'https://www.example.com/blog/launch', screen: '1280x800', locale: 'en-GB', count: i },
}));
const ours = JSON.stringify({ batch: events });
/** What PostHog's SDK adds to every event's properties (its library, and the session and path kept as properties too). */
const sdkProperties = (e: (typeof events)[number]) => ({ $session_id: e.sessionId, $pathname: e.path, $lib: 'posthog-node', $lib_version: '5.70.0' });
/** Our route with the same information per event as PostHog's body: the overhead of PostHog's route alone. */
const oursSame = JSON.stringify({ batch: events.map((e) => ({ ...e, properties: { ...e.properties, ...sdkProperties(e) } })) });
const posthog = (key: string) =>
  JSON.stringify({
    api_key: key,
    sent_at: new Date(at).toISOString(),
    batch: events.map((e) => ({
      event: e.event,
      distinct_id: e.distinctId,
      uuid: e.uuid,
      timestamp: new Date(e.timestamp).toISOString(),
      type: 'capture',
      library: 'posthog-node',
      properties: { ...e.properties, ...sdkProperties(e) },
    })),
  });

async function main(): Promise<void> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'bench-posthog-'));
  const platform = await edgePlatform(createRecordingBus({ record: false }));
  const project = await createIngestProject(platform);
  const edge = await startIngestServer(platform, { port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${edge.port}`;
  const files = {
    ours: path.join(tmp, 'ours.json'),
    oursSame: path.join(tmp, 'ours-same.json'),
    posthogGzip: path.join(tmp, 'posthog.json.gz'),
    posthogJson: path.join(tmp, 'posthog.json'),
  };
  await writeFile(files.ours, ours);
  await writeFile(files.oursSame, oursSame);
  await writeFile(files.posthogGzip, gzipSync(posthog(project.ingestKey)));
  await writeFile(files.posthogJson, posthog(project.ingestKey));
  const shapes = {
    ours: { url: `${base}/v1/analytics/i`, file: files.ours, headers: { 'content-type': 'application/json', authorization: `Bearer ${project.ingestKey}` } },
    oursSameProperties: {
      url: `${base}/v1/analytics/i`,
      file: files.oursSame,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${project.ingestKey}` },
    },
    posthogGzip: { url: `${base}/batch/`, file: files.posthogGzip, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } },
    posthogJson: { url: `${base}/batch/`, file: files.posthogJson, headers: { 'content-type': 'application/json' } },
  } as const;
  const runs: Record<keyof typeof shapes, number[]> = { ours: [], oursSameProperties: [], posthogGzip: [], posthogJson: [] };
  const failures: Record<string, number> = {};
  // Warm-up: the JIT sees every path once.
  // (Every body goes through the binary runner: autocannon's CLI would read the gzip file as text.)
  const load = (s: (typeof shapes)[keyof typeof shapes], duration: number) => cannonBinary(s.url, s.file, s.headers, { duration, connections: CONNECTIONS });
  for (const s of Object.values(shapes)) await load(s, 2);
  for (let round = 0; round < 2; round++) {
    for (const [name, s] of Object.entries(shapes) as Array<[keyof typeof shapes, (typeof shapes)[keyof typeof shapes]]>) {
      const r = await load(s, DURATION);
      runs[name].push(Math.round(r.requests.average * EVENTS));
      failures[name] = (failures[name] ?? 0) + r.non2xx + r.errors;
      log(`${name}: ${Math.round(r.requests.average)} req/s (${Math.round(r.requests.average * EVENTS)} events/s), non-2xx ${r.non2xx}`);
    }
  }
  const mean = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0) / xs.length);
  const eventsPerS = {
    ours: mean(runs.ours),
    oursSameProperties: mean(runs.oursSameProperties),
    posthogGzip: mean(runs.posthogGzip),
    posthogJson: mean(runs.posthogJson),
  };
  console.log(
    JSON.stringify(
      {
        machine: machine(),
        settings: { durationSec: DURATION, connections: CONNECTIONS, eventsPerRequest: EVENTS, settingsStore },
        bodyBytes: {
          ours: Buffer.byteLength(ours),
          oursSameProperties: Buffer.byteLength(oursSame),
          posthogGzip: gzipSync(posthog(project.ingestKey)).length,
          posthogJson: Buffer.byteLength(posthog(project.ingestKey)),
        },
        eventsPerS,
        runs,
        failures,
        ratio: {
          posthogGzipOverOursSameProperties: Number((eventsPerS.posthogGzip / eventsPerS.oursSameProperties).toFixed(3)),
          posthogJsonOverOursSameProperties: Number((eventsPerS.posthogJson / eventsPerS.oursSameProperties).toFixed(3)),
          posthogGzipOverOurs: Number((eventsPerS.posthogGzip / eventsPerS.ours).toFixed(3)),
          posthogJsonOverOurs: Number((eventsPerS.posthogJson / eventsPerS.ours).toFixed(3)),
        },
      },
      null,
      2,
    ),
  );
  await edge.close();
  await platform.close();
  await rm(tmp, { recursive: true, force: true });
}

await main();
