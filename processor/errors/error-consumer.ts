import { publicBaseUrl } from '../../platform/config.ts';
import type { Platform } from '../../platform/platform.ts';
import type { ConsumedMessage } from '../../platform/ports/bus.ts';
import * as errorEvents from '../../schemas/bus/error-events.ts';
import { decodeErrorBatch, encodeErrorBatchV1 } from '../../schemas/bus/error-events.ts';
import type { StampedErrorBatch } from '../../schemas/error-event.ts';
import { CONSUMER_GROUPS } from '../../schemas/topics.ts';
import { createErrorPipeline, type BatchSummary } from './error-pipeline.ts';
import { schedulePruning } from './ledger-retention.ts';
import { addSummaries, handleIsolatingPoison } from './poison-isolation.ts';
import { unprocessableRepository } from './repositories/unprocessable-repository.ts';
import { scrubValue } from '../../domain/secret-scrub.ts';
import type { ErrorCaps } from './steps/caps-step.ts';

/**
 * The error consumer: subscribes to the error events topic (schemas/bus/error-events.ts) as CONSUMER_GROUPS.errorPipeline and feeds the error
 * pipeline (error-pipeline.ts). Per delivery:
 *   1. decode     each bus message (platform/bus-envelopes); an undecodable one is counted as
 *                 invalid_message and never retried, a v1 event that fails the checks as invalid_event
 *   2. handle     the batches through the pipeline, narrowing a batch that fails for its content down to
 *                 the events no store takes (poison-isolation.ts), which are kept, scrubbed, in
 *                 error_events_unprocessable for an operator to replay (`npm run unprocessable`)
 *   3. count      accepted, duplicates and every drop by reason, for the life of the process (stats(),
 *                 and logged every TOTALS_LOG_MS while they change, so operators see drops in any role)
 * The ledger is pruned in the background (ledger-retention.ts).
 */

/**
 * Two batches at once: one's Postgres and ClickHouse waits overlap the other's CPU steps. Safe
 * because nothing depends on batch order: counts are increments, the ledger and occurrence rows are
 * keyed by event id, and rows are locked in id order (so concurrent batches wait, never deadlock),
 * as with several processors. Measured in bench/README.md ("Whole path").
 */
const BATCHES_IN_FLIGHT = 2;
const TOTALS_LOG_MS = 60_000;

export interface StartErrorConsumerOptions {
  /** Defaults to LIMITS.errorCaps. */
  caps?: ErrorCaps;
  /** Defaults to errorEvents.TOPIC; tests sharing one Kafka cluster use a topic of their own. */
  topic?: string;
  /** Defaults to CONSUMER_GROUPS.errorPipeline. */
  consumerGroup?: string;
  /** Defaults to BATCHES_IN_FLIGHT; the bench sets 1 to measure the difference. */
  batchesInFlight?: number;
  /** How often the consumed-events ledger is pruned (ledger-retention.ts); false: never (tests). */
  ledgerPruneIntervalMs?: number | false;
}

export interface ErrorConsumer {
  /** Totals since start: accepted, duplicates and dropped by reason. */
  stats(): BatchSummary;
  /** Stops consuming; also waits for alert mails in flight. */
  stop(): Promise<void>;
}

export async function startErrorConsumer(platform: Platform, opts: StartErrorConsumerOptions = {}): Promise<ErrorConsumer> {
  const logger = platform.logger.child({ component: 'error-pipeline' });
  const pipeline = createErrorPipeline({
    db: platform.db,
    analytics: platform.analytics,
    mailer: platform.mailer,
    clock: platform.clock,
    logger,
    publicBaseUrl: publicBaseUrl(platform.config),
    caps: opts.caps,
    sitesDomain: platform.config.SITES_DOMAIN,
  });
  let totals: BatchSummary = { accepted: 0, duplicates: 0, dropped: {} };
  const isolation = {
    pipeline,
    logger,
    // Kept scrubbed: secrets never reach a store, not even one for operators.
    setAside: (b: StampedErrorBatch, err: unknown) =>
      unprocessableRepository.setAside(platform.db, {
        eventId: b.events[0]!.eventId,
        projectId: b.projectId,
        message: encodeErrorBatchV1({ ...b, events: b.events.map((e) => scrubValue(e) as typeof e) }),
        error: String((err as Error)?.message ?? err).slice(0, 2000),
      }),
  };

  const sub = await platform.bus.subscribe(
    opts.topic ?? errorEvents.TOPIC,
    opts.consumerGroup ?? CONSUMER_GROUPS.errorPipeline,
    async (messages: ConsumedMessage[]) => {
      // 1. decode
      const undecodable: BatchSummary = { accepted: 0, duplicates: 0, dropped: {} };
      const count = (reason: 'invalid_message' | 'invalid_event') => (undecodable.dropped[reason] = (undecodable.dropped[reason] ?? 0) + 1);
      const batches: StampedErrorBatch[] = [];
      for (const m of messages) {
        const decoded = decodeErrorBatch(m.value, () => count('invalid_event'));
        if (decoded) batches.push(decoded);
        else {
          count('invalid_message');
          logger.error({ topic: m.topic, partition: m.partition, offset: m.offset, reason: 'invalid_message' }, 'undecodable error batch skipped');
        }
      }
      // 2. handle
      const summary = addSummaries(undecodable, await handleIsolatingPoison(isolation, batches));
      // 3. count
      totals = addSummaries(totals, summary);
      logger.debug(summary, 'error batch processed');
    },
    { maxInFlight: opts.batchesInFlight ?? BATCHES_IN_FLIGHT },
  );
  const pruning = opts.ledgerPruneIntervalMs === false ? undefined : schedulePruning(platform.db, logger, opts.ledgerPruneIntervalMs);
  let logged = totals;
  const totalsLog = setInterval(() => {
    if (totals === logged) return;
    logged = totals;
    logger.info({ totals }, 'error pipeline totals');
  }, TOTALS_LOG_MS).unref();
  return {
    stats: () => totals,
    async stop() {
      clearInterval(totalsLog);
      await pruning?.stop();
      await sub.stop();
      await pipeline.idle();
    },
  };
}
