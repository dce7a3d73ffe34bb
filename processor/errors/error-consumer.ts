import { publicBaseUrl } from '../../platform/config.ts';
import type { Platform } from '../../platform/platform.ts';
import * as errorEvents from '../../schemas/bus/error-events.ts';
import type { StampedErrorBatch } from '../../schemas/error-event.ts';
import { CONSUMER_GROUPS } from '../../schemas/topics.ts';
import { scrubValue } from '../../domain/secret-scrub.ts';
import { startPipelineConsumer } from '../pipeline-consumer.ts';
import { createErrorPipeline, type BatchSummary } from './error-pipeline.ts';
import { createIssueNotifier } from './issue-notifications.ts';
import { createAlertRuleEvaluation } from '../alerts/evaluate-rules.ts';
import { LEDGER_RETENTION, pruneConsumedLedger } from './ledger-retention.ts';
import { handleIsolatingPoison } from './poison-isolation.ts';
import { unprocessableRepository } from './repositories/unprocessable-repository.ts';
import type { ErrorCaps } from './steps/caps-step.ts';

/**
 * The error consumer: the error pipeline (error-pipeline.ts) in the processor's consumer scaffold
 * (../pipeline-consumer.ts), on the error events topic (schemas/bus/error-events.ts) as CONSUMER_GROUPS.errorPipeline:
 *   1. decode     each message; an undecodable one is counted as invalid_message and never retried, a v1 event
 *                 that fails the checks as invalid_event
 *   2. handle     the batches through the pipeline, narrowing a batch that fails for its content down to the events
 *                 no store takes (poison-isolation.ts), which are kept, scrubbed, in error_events_unprocessable for
 *                 an operator to replay (`npm run unprocessable`)
 *   3. count      accepted, duplicates and every drop by reason (stats(), logged while they change)
 *   4. prune      the consumed-events ledger (ledger-retention.ts)
 */

/**
 * Two batches at once: one's Postgres and ClickHouse waits overlap the other's CPU steps. Safe
 * because nothing depends on batch order: counts are increments, the ledger and occurrence rows are
 * keyed by event id, and rows are locked in id order (so concurrent batches wait, never deadlock),
 * as with several processors. Measured in bench/README.md ("Whole path").
 */
const BATCHES_IN_FLIGHT = 2;

export interface StartErrorConsumerOptions {
  /** Defaults to LIMITS.errorCaps. */
  caps?: ErrorCaps;
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

export async function startErrorConsumer(
  platform: Pick<Platform, 'analytics' | 'bus' | 'clock' | 'config' | 'db' | 'logger' | 'mailer'>,
  opts: StartErrorConsumerOptions = {},
): Promise<ErrorConsumer> {
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
    issueNotifier: createIssueNotifier(platform, publicBaseUrl(platform.config), logger),
    alertRules: createAlertRuleEvaluation({ ...platform, logger, publicBaseUrl: publicBaseUrl(platform.config) }),
  });
  const isolation = {
    pipeline,
    logger,
    // Kept scrubbed: secrets never reach a store, not even one for operators.
    setAside: (b: StampedErrorBatch, err: unknown) =>
      unprocessableRepository.setAside(platform.db, {
        eventId: b.events[0]!.eventId,
        projectId: b.projectId,
        message: errorEvents.encodeErrorBatchV1({ ...b, events: b.events.map((e) => scrubValue(e) as typeof e) }),
        error: String((err as Error)?.message ?? err).slice(0, 2000),
      }),
  };
  const pruneMs = opts.ledgerPruneIntervalMs ?? LEDGER_RETENTION.intervalMs;
  return startPipelineConsumer(
    { bus: platform.bus, logger },
    {
      name: 'error pipeline',
      topic: errorEvents.TOPIC,
      group: CONSUMER_GROUPS.errorPipeline,
      maxInFlight: opts.batchesInFlight ?? BATCHES_IN_FLIGHT,
      lingerMs: platform.config.PIPELINE_LINGER_MS,
      decode: (value, countDrop) => errorEvents.decodeErrorBatch(value, () => countDrop('invalid_event')),
      handle: (batches) => handleIsolatingPoison(isolation, batches),
      prune: pruneMs === false ? undefined : { intervalMs: pruneMs, run: () => pruneConsumedLedger(platform.db) },
      idle: () => pipeline.idle(),
    },
  );
}
