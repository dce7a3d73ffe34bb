/**
 * The analytics pipeline's own CPU per event (issue 29), in this process: `createAnalyticsPipeline(platform)` handles
 * deliveries of `--batches` batches of 50 events (~300 bytes each, as the edge stamps them), decoded from bus messages
 * as the consumer does. The relational steps run on PGlite (one claim and one usage update per delivery); the
 * analytical store serialises the rows exactly as the ClickHouse adapter hands them to @clickhouse/client
 * (JSONCompactEachRow through stringifyRow) and drops them, so the figure is the processor's work without the network.
 * Prints CPU µs per event for the whole handler and for the decode, over `--rounds` deliveries after a warm-up.
 *
 *   npx tsx bench/analytics-processor.bench.ts [--batches 40] [--rounds 30]
 */
import { randomUUID } from 'node:crypto';
import { createAnalyticsPipeline } from '../processor/analytics/analytics-pipeline.ts';
import * as analyticsEvents from '../schemas/bus/analytics-events.ts';
import { stringifyRow, toCompactRows } from '../platform/adapters/analytical/json-each-row.ts';
import { createIngestProject } from '../test/support/ingest-fixtures.ts';
import { createTestPlatform } from '../test/support/platform.ts';
import { numberArg } from './support/cli-args.ts';
import { machine } from './support/edge-bench.ts';

const BATCHES = numberArg('batches', 40);
const ROUNDS = numberArg('rounds', 30);
const PER_BATCH = 50;

let serialisedBytes = 0;
const platform = await createTestPlatform({
  overrides: {
    analytics: {
      adapter: 'clickhouse',
      command: async () => undefined,
      query: async () => [],
      async insert(_table, rows) {
        const compact = toCompactRows(rows);
        for (const r of compact ? compact.values : rows) serialisedBytes += stringifyRow(r).length + 1;
      },
      close: async () => undefined,
    },
  },
});
const { projectId } = await createIngestProject(platform);
const handle = createAnalyticsPipeline(platform);

/** One delivery's bus messages: BATCHES stamped batches with fresh ids (a re-delivery would be skipped). */
function delivery(): Buffer[] {
  const now = Date.now();
  return Array.from({ length: BATCHES }, () =>
    analyticsEvents.encode({
      v: 1,
      batchId: randomUUID(),
      projectId,
      originHost: 'shop.example.com',
      receivedAt: now,
      events: Array.from({ length: PER_BATCH }, (_, i) => ({
        uuid: randomUUID(),
        event: i % 5 ? 'pageview' : 'button_clicked',
        distinctId: `anon_${(i * 7919).toString(36).padStart(12, '0')}`,
        timestamp: now - i,
        sessionId: `ses_${'s'.repeat(24)}`,
        path: `/dashboard/projects/${i}`,
        properties: { plan: i % 3 ? 'free' : 'pro', referrer: 'https://www.example.com/blog/launch', screen: '1280x800', locale: 'en-GB', count: i },
      })),
    }),
  );
}

const cpu = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
let total = 0;
let decodeUs = 0;
let events = 0;
for (let round = 0; round < ROUNDS + 5; round++) {
  const messages = delivery();
  const t0 = cpu();
  const batches = messages.map((m) => analyticsEvents.decode(m)!);
  const t1 = cpu();
  const summary = await handle(batches);
  const t2 = cpu();
  if (summary.accepted !== BATCHES * PER_BATCH) throw new Error(`accepted ${summary.accepted}`);
  if (round < 5) continue; // warm-up
  decodeUs += t1 - t0;
  total += t2 - t0;
  events += summary.accepted;
}
console.log(
  JSON.stringify(
    {
      machine: machine(),
      settings: { eventsPerDelivery: BATCHES * PER_BATCH, rounds: ROUNDS },
      cpuMicrosPerEvent: { total: +(total / events).toFixed(2), decode: +(decodeUs / events).toFixed(2), handle: +((total - decodeUs) / events).toFixed(2) },
      serialisedBytesPerEvent: Math.round(serialisedBytes / ((ROUNDS + 5) * BATCHES * PER_BATCH)),
    },
    null,
    2,
  ),
);
await platform.close();
