import type { Platform } from '../../platform/platform.ts';
import type { BatchSummary } from '../batch-summary.ts';
import { createEnvironmentResolver, type EnvironmentInput } from '../environment/environment-resolver.ts';
import { scrubStep } from './steps/scrub-step.ts';
import { analyticsRow, createStoreStep } from './steps/store-step.ts';
import { claimBatches, countUsage } from './steps/usage-step.ts';
import type { AnalyticsBatchMessage } from '../../schemas/bus/analytics-events.ts';

/**
 * The analytics pipeline, for one delivery of stamped batches (analytics-consumer.ts decodes them):
 *   1. stamp     the environment (§7.4) from the Origin host or the deploy, as for errors (processor/environment/),
 *                once per distinct (project, Origin, deploy named) of the delivery; events of a project that no
 *                longer exists are dropped
 *   2. scrub     secret-looking property values and keys, and the path (steps/scrub-step.ts); the scrubbed event
 *                becomes its row at once (steps/store-step.ts analyticsRow), the only copy made of it
 *   3. claim     the batch ids in the ledger; a batch claimed before (a re-delivery) goes no further
 *   4. store     ClickHouse analytics_events, keyed by uuid, with an insert token (steps/store-step.ts)
 *   5. count     the month's usage (steps/usage-step.ts)
 * Claim and count are one Postgres transaction around the store: it commits only after ClickHouse took the rows, so
 * a failure or a crash before the commit leaves the batches unclaimed and the re-delivery stores them again (the
 * same rows under the same token: no new rows; grouped otherwise, the uuid key collapses them); after the commit a
 * re-delivery stores nothing.
 */
/** What one delivery did: events accepted, events of batches stored before (re-delivered: skipped), dropped by reason. */
export type AnalyticsDropReason = 'unknown_project' | 'invalid_message';
export type AnalyticsBatchSummary = BatchSummary<AnalyticsDropReason>;

export type AnalyticsBatchInput = AnalyticsBatchMessage;

export function createAnalyticsPipeline(platform: Pick<Platform, 'db' | 'analytics' | 'clock'> & { config?: Pick<Platform['config'], 'SITES_DOMAIN'> }) {
  const resolveEnvironment = createEnvironmentResolver({ db: platform.db, clock: platform.clock, sitesDomain: platform.config?.SITES_DOMAIN });
  const store = createStoreStep({ analytics: platform.analytics });

  return async function handle(batches: AnalyticsBatchInput[]): Promise<AnalyticsBatchSummary> {
    // 1. stamp (read-only, before the transaction: the embedded store has one connection). The environment depends
    //    only on the project, the Origin and the deploy an event names: each distinct one is resolved once.
    const asks: EnvironmentInput[] = [];
    const askIndex = new Map<string, number>();
    const askOf = batches.map((b) =>
      b.events.map((e) => {
        const key = `${b.projectId}\n${b.originHost ?? ''}\n${e.deployId ?? ''}\n${e.gitSha ?? ''}`;
        let i = askIndex.get(key);
        if (i === undefined) {
          askIndex.set(key, (i = asks.length));
          asks.push({ projectId: b.projectId, originHost: b.originHost, deployId: e.deployId, gitSha: e.gitSha });
        }
        return i;
      }),
    );
    const environments = await resolveEnvironment(asks);
    // 2. scrub, then the row: one pass per event, its one copy after scrubbing is the row itself
    const rowsPerBatch = batches.map(() => [] as Array<Record<string, unknown>>);
    const unknownPerBatch = new Array<number>(batches.length).fill(0);
    batches.forEach((b, bi) => {
      const rows = rowsPerBatch[bi]!;
      const asked = askOf[bi]!;
      b.events.forEach((e, ei) => {
        const environment = environments[asked[ei]!];
        if (!environment) unknownPerBatch[bi]!++;
        else rows.push(analyticsRow(scrubStep(e), b, environment));
      });
    });

    return platform.db.transaction(async (tx) => {
      // 3. claim
      const claimed = await claimBatches(tx)(batches);
      const fresh = batches.map((b, bi) => ({ b, rows: rowsPerBatch[bi]!, unknown: unknownPerBatch[bi]! })).filter(({ b }) => claimed.has(b.batchId));
      // 4. store
      const rows = fresh.flatMap((f) => f.rows);
      await store(rows);
      // 5. count
      await countUsage(tx)(fresh.map(({ b, rows: r }) => ({ projectId: b.projectId, receivedAt: b.receivedAt, events: r.length })));
      const unknown = fresh.reduce((n, f) => n + f.unknown, 0);
      const dropped: AnalyticsBatchSummary['dropped'] = unknown ? { unknown_project: unknown } : {};
      const seenBefore = batches.filter((b) => !claimed.has(b.batchId)).reduce((n, b) => n + b.events.length, 0);
      return { accepted: rows.length, duplicates: seenBefore, dropped };
    });
  };
}
