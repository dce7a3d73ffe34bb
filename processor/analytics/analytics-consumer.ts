import type { Platform } from '../../platform/platform.ts';
import type { ConsumedMessage } from '../../platform/ports/bus.ts';
import { CONSUMER_GROUPS } from '../../schemas/topics.ts';
import { createAnalyticsPipeline, type AnalyticsBatchInput, type AnalyticsBatchSummary } from './analytics-pipeline.ts';
import { pruneAnalyticsLedger } from './steps/usage-step.ts';
import * as analyticsEvents from '../../schemas/bus/analytics-events.ts';

/**
 * The analytics consumer: subscribes to the analytics topic (schemas/bus/analytics-events.ts) as CONSUMER_GROUPS.analyticsPipeline and feeds the
 * analytics pipeline (analytics-pipeline.ts). Per delivery:
 *   1. decode     each bus message (JSON, v1, with a batch id and events); one that does not decode is counted as
 *                 invalid_message and skipped (retrying cannot help)
 *   2. handle     the batches through the pipeline (a failing store throws: the delivery is retried, and every
 *                 effect is idempotent)
 *   3. count      stored, re-delivered and every drop by reason, for the life of the process (stats(), logged
 *                 every minute while they change)
 * The batch ledger is pruned in the background every 10 minutes.
 */
const TOTALS_LOG_MS = 60_000;
/**
 * Two deliveries at once: one's Postgres and ClickHouse waits overlap the other's decoding and scrubbing. Safe:
 * nothing depends on order (batch claims are per batch id, rows are keyed by uuid, usage rows are locked in key
 * order).
 */
const BATCHES_IN_FLIGHT = 2;
const PRUNE_MS = 10 * 60_000;

export interface AnalyticsConsumer {
  stats(): AnalyticsBatchSummary;
  stop(): Promise<void>;
}

/**
 * Retention: a TTL of ANALYTICS_RETENTION_DAYS on the event time, set when it differs from the table's (existing
 * parts are not rewritten at once: ClickHouse drops expired rows as it merges).
 */
export async function applyAnalyticsRetention(platform: Pick<Platform, 'analytics'>, days: number): Promise<void> {
  const ttl = `toIntervalDay(${Math.trunc(days)})`;
  const [table] = await platform.analytics.query<{ engine_full: string }>(`SELECT engine_full FROM system.tables WHERE database = currentDatabase() AND name = 'analytics_events'`);
  if (table?.engine_full.includes(ttl)) return;
  await platform.analytics.command(`ALTER TABLE analytics_events MODIFY TTL toDateTime(timestamp) + ${ttl} SETTINGS materialize_ttl_after_modify = 0`);
}

export async function startAnalyticsConsumer(platform: Platform, opts: { topic?: string; consumerGroup?: string } = {}): Promise<AnalyticsConsumer> {
  const logger = platform.logger.child({ component: 'analytics-pipeline' });
  await applyAnalyticsRetention(platform, platform.config.ANALYTICS_RETENTION_DAYS);
  const pipeline = createAnalyticsPipeline(platform);
  const totals: AnalyticsBatchSummary = { stored: 0, redelivered: 0, dropped: {} };
  const add = (s: AnalyticsBatchSummary) => {
    totals.stored += s.stored;
    totals.redelivered += s.redelivered;
    for (const [k, v] of Object.entries(s.dropped)) totals.dropped[k] = (totals.dropped[k] ?? 0) + v;
  };

  const sub = await platform.bus.subscribe(opts.topic ?? analyticsEvents.TOPIC, opts.consumerGroup ?? CONSUMER_GROUPS.analyticsPipeline, async (messages: ConsumedMessage[]) => {
    // 1. decode
    const batches: AnalyticsBatchInput[] = [];
    for (const m of messages) {
      const b = analyticsEvents.decode(m.value);
      if (b) batches.push(b);
      else {
        totals.dropped.invalid_message = (totals.dropped.invalid_message ?? 0) + 1;
        logger.error({ topic: m.topic, partition: m.partition, offset: m.offset, reason: 'invalid_message' }, 'undecodable analytics batch skipped');
      }
    }
    // 2. handle, 3. count
    if (batches.length) add(await pipeline(batches));
  }, { maxInFlight: BATCHES_IN_FLIGHT });

  const prune = setInterval(() => {
    pruneAnalyticsLedger(platform.db, platform.clock.now()).catch((err) => logger.warn({ err }, 'analytics ledger pruning failed'));
  }, PRUNE_MS).unref();
  let logged = JSON.stringify(totals);
  const totalsLog = setInterval(() => {
    const now = JSON.stringify(totals);
    if (now === logged) return;
    logged = now;
    logger.info({ totals }, 'analytics pipeline totals');
  }, TOTALS_LOG_MS).unref();

  return {
    stats: () => structuredClone(totals),
    async stop() {
      clearInterval(prune);
      clearInterval(totalsLog);
      await sub.stop();
    },
  };
}
