import type { Platform } from '../../platform/platform.ts';
import * as clientItems from '../../schemas/bus/client-items.ts';
import { CONSUMER_GROUPS } from '../../schemas/topics.ts';
import { addSummaries, emptySummary, type BatchSummary } from '../batch-summary.ts';
import { startPipelineConsumer, type PipelineConsumer } from '../pipeline-consumer.ts';
import { createFeedbackHandler } from '../feedback/feedback-pipeline.ts';
import { FEEDBACK_RETENTION, feedbackMaintenance } from '../feedback/feedback-retention.ts';
import { createReleaseHealthHandler } from '../release-health/release-health-pipeline.ts';
import { createCheckInHandler } from '../uptime/check-ins/check-in-pipeline.ts';

/**
 * The client-items consumer (issue 40): what SDKs send beside their errors (schemas/bus/client-items.ts), in the
 * processor's consumer scaffold (../pipeline-consumer.ts), as CONSUMER_GROUPS.clientItems. Each delivery goes to the
 * three families that keep a part of it, one after the other:
 *   1. release health   session updates and aggregates, counted per project, environment and deploy
 *                       (processor/release-health/)
 *   2. feedback         user feedback, linked to its event and issue (processor/feedback/)
 *   3. check-ins        cron check-ins, which create and drive heartbeat monitors (processor/uptime/check-ins/)
 * Every handler is idempotent per message (`batchId`), so a re-delivered message changes nothing; a handler that
 * throws has the delivery retried. What each kept and dropped is counted by reason, under its family's prefix.
 */
export type ClientItemsHandler = (messages: clientItems.ClientItemsMessage[]) => Promise<BatchSummary>;

const IN_FLIGHT = 1;

export type ClientItemsPlatform = Pick<Platform, 'analytics' | 'bus' | 'clock' | 'config' | 'db' | 'logger'>;

export async function startClientItemsConsumer(platform: ClientItemsPlatform): Promise<PipelineConsumer<string>> {
  const logger = platform.logger.child({ component: 'client-items' });
  const handlers: ClientItemsHandler[] = [createReleaseHealthHandler(platform), createFeedbackHandler(platform), createCheckInHandler(platform)];
  return startPipelineConsumer<clientItems.ClientItemsMessage, string>(
    { bus: platform.bus, logger },
    {
      name: 'client items',
      topic: clientItems.TOPIC,
      group: CONSUMER_GROUPS.clientItems,
      maxInFlight: IN_FLIGHT,
      lingerMs: platform.config.PIPELINE_LINGER_MS,
      decode: (value) => clientItems.decode(value),
      async handle(messages) {
        let summary = emptySummary();
        for (const handle of handlers) summary = addSummaries(summary, await handle(messages));
        return summary;
      },
      // In the background: feedback linked to events that arrived after it, and pruned past retention.
      prune: { intervalMs: FEEDBACK_RETENTION.intervalMs, run: () => feedbackMaintenance(platform.db) },
    },
  );
}
