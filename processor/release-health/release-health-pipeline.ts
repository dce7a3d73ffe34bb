import type { ClientItemsHandler, ClientItemsPlatform } from '../client-items/client-items-consumer.ts';
import type { ClientItemsMessage } from '../../schemas/bus/client-items.ts';
import type { BatchSummary } from '../batch-summary.ts';
import { createEnvironmentResolver, type EnvironmentInput } from '../environment/environment-resolver.ts';
import { environmentRepository } from '../environment/environment-repository.ts';
import { loadDeployNaming, nameDeploy, type DeployQuestion } from '../environment/deploy-naming.ts';
import { aggregateRow, updateRow, type RowDropReason } from './steps/row-step.ts';
import { createStoreStep } from './steps/store-step.ts';

/**
 * Release health (issue 40): the session updates and aggregates of a delivery of client-items messages
 * (schemas/bus/client-items.ts), as rows of ClickHouse `release_sessions` that api/release-health/ reads as Sentry's
 * numbers (sessions started, crashed, errored, abnormal; crash-free sessions and users) per deploy and over time.
 *   1. stamp   the environment of each message's sessions (§7.4, processor/environment/): its Origin host against the
 *              project's domains, else the deploy its `release` names (a `dep_` id or a git sha); a message of a
 *              project that no longer exists is dropped (`release_health_unknown_project`, per item)
 *   2. name    the deploy (../environment/deploy-naming.ts): the release as a deploy id or git sha of the project, else a
 *              deploy's own host, else the live deploy of a production host; otherwise the release string as sent
 *   3. claim   the batch ids written before (a re-delivery) are duplicates and go no further (steps/store-step.ts)
 *   4. row     each update and aggregate as a row, bucketed by the minute its session started (steps/row-step.ts:
 *              how updates and aggregates add up); a session started too long ago is dropped
 *              (`release_health_session_too_old`)
 *   5. store   one insert with a dedup token from the batch ids
 * Nothing here writes Postgres: the table itself is the claim, its key and the insert token make a repeat a no-op.
 */
export type ReleaseHealthDropReason = 'release_health_unknown_project' | `release_health_${RowDropReason}`;
export type ReleaseHealthSummary = BatchSummary<ReleaseHealthDropReason>;

/** SITES_DOMAIN's default (platform/config.ts), for a platform built without a configuration. */
const DEFAULT_SITES_DOMAIN = 'localhost';

const itemsOf = (m: ClientItemsMessage) => (m.sessions?.length ?? 0) + (m.sessionAggregates?.length ?? 0);

export function createReleaseHealthHandler(platform: ClientItemsPlatform): ClientItemsHandler {
  const sitesDomain = platform.config?.SITES_DOMAIN ?? DEFAULT_SITES_DOMAIN;
  const resolveEnvironment = createEnvironmentResolver({ db: platform.db, clock: platform.clock, sitesDomain });
  const storeStep = createStoreStep({ analytics: platform.analytics });

  return async function handle(all): Promise<ReleaseHealthSummary> {
    const summary: ReleaseHealthSummary = { accepted: 0, duplicates: 0, dropped: {} };
    const drop = (reason: ReleaseHealthDropReason, n = 1) => (summary.dropped[reason] = (summary.dropped[reason] ?? 0) + n);
    const messages = all.filter((m) => itemsOf(m) > 0);
    if (!messages.length) return summary;

    // 1. stamp: each distinct (project, Origin, release) once
    const asks: EnvironmentInput[] = [];
    const askIndex = new Map<string, number>();
    const ask = (m: ClientItemsMessage, release: string | undefined) => {
      const key = `${m.projectId}\n${m.originHost ?? ''}\n${release ?? ''}`;
      let i = askIndex.get(key);
      if (i === undefined) {
        askIndex.set(key, (i = asks.length));
        const r = release?.trim();
        asks.push({
          projectId: m.projectId,
          originHost: m.originHost,
          deployId: r?.startsWith('dep_') ? r : undefined,
          gitSha: r && !r.startsWith('dep_') ? r : undefined,
        });
      }
      return i;
    };
    const items = messages.map((m) => ({
      m,
      updates: (m.sessions ?? []).map((u) => ({ u, ask: ask(m, u.release) })),
      aggregates: (m.sessionAggregates ?? []).map((a) => ({ a, ask: ask(m, a.release) })),
    }));
    const environments = await resolveEnvironment(asks);

    // 2. name: the deploys these sessions can name, read once for the delivery
    const questions: Array<DeployQuestion | undefined> = asks.map((a, i) => {
      const environment = environments[i];
      if (!environment) return undefined;
      // receivedAt is each message's own (set below): the ask is shared by messages received at other times.
      return { projectId: a.projectId, originHost: a.originHost, release: a.deployId ?? a.gitSha, receivedAt: 0, environment };
    });
    const naming = await loadDeployNaming(
      { db: platform.db, environment: environmentRepository, sitesDomain },
      questions.filter((q): q is DeployQuestion => !!q),
    );

    // 3. claim (before building rows: a re-delivered message goes no further)
    const fresh = await storeStep.claim(messages);

    // 4. row
    const rows: Array<Record<string, unknown>> = [];
    for (const { m, updates, aggregates } of items) {
      if (!fresh.has(m.batchId)) {
        summary.duplicates += itemsOf(m);
        continue;
      }
      const stampOf = (i: number, release: string | undefined) => {
        const environment = environments[i];
        if (!environment) return undefined;
        const q = questions[i]!;
        return {
          projectId: m.projectId,
          batchId: m.batchId,
          receivedAt: m.receivedAt,
          environment,
          deployId: nameDeploy({ ...q, receivedAt: m.receivedAt }, naming(m.projectId), sitesDomain),
          release: release ?? '',
        };
      };
      const keep = (o: ReturnType<typeof updateRow>) => {
        if (o.kind === 'ok') rows.push(o.value);
        else drop(`release_health_${o.reason}`);
      };
      updates.forEach(({ u, ask: i }, n) => {
        const s = stampOf(i, u.release);
        if (!s) drop('release_health_unknown_project');
        else keep(updateRow(u, n, s));
      });
      aggregates.forEach(({ a, ask: i }, n) => {
        const s = stampOf(i, a.release);
        if (!s) drop('release_health_unknown_project');
        else keep(aggregateRow(a, n, s));
      });
    }

    // 5. store
    await storeStep.store(rows);
    summary.accepted = rows.length;
    return summary;
  };
}
