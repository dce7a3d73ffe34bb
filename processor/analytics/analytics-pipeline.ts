import type { Platform } from '../../platform/platform.ts';
import type { StampedAnalyticsBatch, StoredAnalyticsEvent } from '../../schemas/analytics-event.ts';
import { createEnvironmentResolver } from '../environment/environment-resolver.ts';
import { scrubStep } from './steps/scrub-step.ts';
import { analyticsRow, createStoreStep } from './steps/store-step.ts';
import { createUsageStep } from './steps/usage-step.ts';

/**
 * The analytics pipeline, for one delivery of stamped batches (analytics-consumer.ts decodes them):
 *   1. scrub     secret-looking property values and keys, and the path (steps/scrub-step.ts)
 *   2. stamp     the environment (§7.4) from the Origin host or the deploy, as for errors
 *                (processor/environment/); events of a project that no longer exists are dropped
 *   3. store     ClickHouse analytics_events, idempotent by uuid and insert token (steps/store-step.ts)
 *   4. count     the month's usage once per batch, through the batch ledger (steps/usage-step.ts)
 * Storing comes before counting: a crash between them re-delivers, the insert is a no-op and the count happens once.
 */
export interface AnalyticsBatchSummary {
  stored: number;
  /** Batches seen before (re-delivered): stored again as no-ops, not counted again. */
  redelivered: number;
  dropped: Record<string, number>;
}

export type AnalyticsBatchInput = StampedAnalyticsBatch & { batchId: string };

export function createAnalyticsPipeline(platform: Pick<Platform, 'db' | 'analytics' | 'clock'>) {
  const resolveEnvironment = createEnvironmentResolver({ db: platform.db, clock: platform.clock });
  const store = createStoreStep({ analytics: platform.analytics });
  const countUsage = createUsageStep({ db: platform.db });

  return async function handle(batches: AnalyticsBatchInput[]): Promise<AnalyticsBatchSummary> {
    const summary: AnalyticsBatchSummary = { stored: 0, redelivered: 0, dropped: {} };
    // 1. scrub
    const scrubbed = batches.map((b) => ({ ...b, events: b.events.map(scrubStep) }));
    // 2. stamp
    const flat = scrubbed.flatMap((b, bi) => b.events.map((e) => ({ b, bi, e })));
    const environments = await resolveEnvironment(flat.map(({ b, e }) => ({ projectId: b.projectId, originHost: b.originHost, deployId: e.deployId, gitSha: e.gitSha })));
    const rows: Array<Record<string, unknown>> = [];
    const storedPerBatch = new Array<number>(batches.length).fill(0);
    flat.forEach(({ b, bi, e }, i) => {
      const environment = environments[i];
      if (!environment) {
        summary.dropped.unknown_project = (summary.dropped.unknown_project ?? 0) + 1;
        return;
      }
      const stored: StoredAnalyticsEvent & { originHost: string | null } = { ...e, projectId: b.projectId, environment, receivedAt: b.receivedAt, originHost: b.originHost };
      rows.push(analyticsRow(stored));
      storedPerBatch[bi]!++;
    });
    // 3. store
    await store(rows);
    // 4. count
    for (const [bi, b] of batches.entries()) {
      const stored = storedPerBatch[bi]!;
      const fresh = await countUsage({ batchId: b.batchId, projectId: b.projectId, receivedAt: b.receivedAt, stored });
      if (fresh) summary.stored += stored;
      else summary.redelivered++;
    }
    return summary;
  };
}
