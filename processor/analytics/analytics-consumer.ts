import type { Platform } from '../../platform/platform.ts';
import * as analyticsEvents from '../../schemas/bus/analytics-events.ts';
import { CONSUMER_GROUPS } from '../../schemas/topics.ts';
import { startPipelineConsumer } from '../pipeline-consumer.ts';
import { createAnalyticsPipeline, type AnalyticsBatchSummary } from './analytics-pipeline.ts';
import { analyticsEventsRepository } from './repositories/events-repository.ts';
import { pruneAnalyticsLedger } from './steps/usage-step.ts';

/**
 * The analytics consumer: the analytics pipeline (analytics-pipeline.ts) in the processor's consumer scaffold
 * (../pipeline-consumer.ts), on the analytics topic (schemas/bus/analytics-events.ts) as
 * CONSUMER_GROUPS.analyticsPipeline:
 *   1. decode     each message; one that does not decode is counted as invalid_message and skipped
 *   2. handle     the batches through the pipeline (a failing store throws: the delivery is retried, and every
 *                 effect is idempotent)
 *   3. count      accepted, duplicates (events of re-delivered batches) and every drop by reason
 *   4. prune      the batch ledger every 10 minutes
 */
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
  if ((await analyticsEventsRepository.engine(platform.analytics))?.includes(ttl)) return;
  await analyticsEventsRepository.setTtl(platform.analytics, ttl);
}

export async function startAnalyticsConsumer(platform: Pick<Platform, 'analytics' | 'bus' | 'clock' | 'config' | 'db' | 'logger'>): Promise<AnalyticsConsumer> {
  const logger = platform.logger.child({ component: 'analytics-pipeline' });
  await applyAnalyticsRetention(platform, platform.config.ANALYTICS_RETENTION_DAYS);
  const pipeline = createAnalyticsPipeline(platform);
  return startPipelineConsumer(
    { bus: platform.bus, logger },
    {
      name: 'analytics pipeline',
      topic: analyticsEvents.TOPIC,
      group: CONSUMER_GROUPS.analyticsPipeline,
      maxInFlight: BATCHES_IN_FLIGHT,
      lingerMs: platform.config.PIPELINE_LINGER_MS,
      decode: (value) => analyticsEvents.decode(value),
      handle: pipeline,
      prune: { intervalMs: PRUNE_MS, run: () => pruneAnalyticsLedger(platform.db, platform.clock.now()) },
    },
  );
}
