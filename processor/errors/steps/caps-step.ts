import type { Queryable } from '../../../platform/ports/relational-store.ts';
import { LIMITS } from '../../../schemas/limits.ts';
import { monthlyCapFor, usageMonth } from '../../../domain/usage-month.ts';
import type { GroupsRepository, PriorGroup } from '../repositories/groups-repository.ts';
import { bucketKey, type UsageBucket, type UsageChange, type UsageRepository } from '../repositories/usage-repository.ts';
import { drop, ok, type DropReason, type EnvironmentStampedEvent, type StepOutcome } from './outcome.ts';

/**
 * Caps (spec §7.5), decided inside the batch transaction.
 * - Monthly: occurrences per project, environment and UTC calendar month, each held to its cap
 *   (domain/usage-month.ts: the month and which cap `unknown` counts against).
 * - Open groups: at most N unresolved groups per project and environment; beyond that a new
 *   fingerprint is dropped, while occurrences of existing groups keep counting.
 * The pipeline locks the batch's usage rows and then its existing groups before this step (in that order,
 * in every processor), which serialises concurrent processors of one project and keeps the counters and the
 * open-group count exact; this step decides and writes the accepted and dropped counts back.
 */
export interface ErrorCaps {
  productionPerMonth: number;
  previewPerMonth: number;
  openGroupsPerEnvironment: number;
}

export interface CapsDeps {
  caps?: ErrorCaps;
  usage: Pick<UsageRepository, 'add'>;
  groups: Pick<GroupsRepository, 'countOpen'>;
}

/** The usage row an event counts against: its project, UTC month and environment. */
export const usageBucketOf = (e: EnvironmentStampedEvent): UsageBucket => ({
  projectId: e.projectId,
  month: usageMonth(e.receivedAt),
  environment: e.environment,
});

/** What the pipeline locked for the step: accepted counts by bucketKey, and the batch's existing groups. */
export interface CapsLocked {
  acceptedSoFar: Map<string, number>;
  prior: Map<string, PriorGroup>;
}

export function createCapsStep(deps: CapsDeps) {
  const caps = deps.caps ?? LIMITS.errorCaps;
  return async function capsStep(
    tx: Queryable,
    events: EnvironmentStampedEvent[],
    { acceptedSoFar, prior }: CapsLocked,
  ): Promise<Array<StepOutcome<EnvironmentStampedEvent>>> {
    if (!events.length) return [];
    const buckets = events.map(usageBucketOf);

    // Open groups are counted only for projects where this batch would open a new one: the cap applies
    // to new fingerprints alone. A batch of known groups (the usual case) skips the count.
    const projectsOpening = [...new Set(events.filter((e) => !prior.has(e.groupId)).map((e) => e.projectId))];
    const openBy = await deps.groups.countOpen(tx, projectsOpening);

    const usage = new Map<string, UsageChange & { before: number; opened: Set<string> }>();
    const outcomes = events.map((e, i): StepOutcome<EnvironmentStampedEvent> => {
      const b = buckets[i]!;
      const k = bucketKey(b);
      let u = usage.get(k);
      if (!u) usage.set(k, (u = { ...b, accepted: 0, dropped: {}, before: acceptedSoFar.get(k) ?? 0, opened: new Set() }));
      let reason: DropReason | undefined;
      if (u.before + u.accepted >= monthlyCapFor(caps, e.environment)) reason = 'monthly_cap';
      else if (!prior.has(e.groupId) && !u.opened.has(e.groupId)) {
        if ((openBy.get(`${e.projectId}\u0000${e.environment}`) ?? 0) + u.opened.size >= caps.openGroupsPerEnvironment) reason = 'open_groups_cap';
        else u.opened.add(e.groupId);
      }
      if (reason) {
        u.dropped[reason] = (u.dropped[reason] ?? 0) + 1;
        return drop(reason);
      }
      u.accepted++;
      return ok(e);
    });

    await deps.usage.add(
      tx,
      [...usage.values()].map(({ projectId, month, environment, accepted, dropped }) => ({ projectId, month, environment, accepted, dropped })),
    );
    return outcomes;
  };
}
